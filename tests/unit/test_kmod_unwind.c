// SPDX-License-Identifier: GPL-2.0
/*
 * lib/backend/kmod_unwind.c: when the kmod backend sends nmiprof.ko a
 * process's mapping set, and which tables it loads.  The device is a
 * fake (np_kmod_sys) that counts the NMIPROF_IOC_UW_* ioctls and keeps
 * the loaded tables' headers as the module keeps its tables; the tables
 * are compiled for real, from this test's own executable.
 */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <unistd.h>
#include <sys/wait.h>
#include "check.h"
#include "np_crc32c.h"
#include "np_kmod_unwind.h"

static int nr_loads, nr_sets, nr_refused, nr_drops;
static uint32_t set_pid, set_nr;
static uint64_t fake_evicted;	/* the module's evictions, as UW_STATS says */

/* The module's ABI minor, and what it holds: tables outlive readers. */
static unsigned int fake_minor = NMIPROF_ABI_MINOR;
static int nr_probes, nr_probe_hits, fake_nr_tables;
static struct {
	struct nmiprof_uw_table h;
	uint32_t len, id;
} fake_tables[64];

/* UW_LOAD as kmod/unwind_user.c and unwind_table.c answer it. */
static int fake_load(struct nmiprof_uw_load *ld)
{
	const struct nmiprof_uw_table *h = (const void *)(uintptr_t)ld->table;

	if (!(ld->flags & NMIPROF_UW_LOAD_PROBE)) {
		if (fake_nr_tables < 64) {
			fake_tables[fake_nr_tables].h = *h;
			fake_tables[fake_nr_tables].len = ld->len;
			fake_tables[fake_nr_tables++].id = nr_loads + 1;
		}
		ld->id = ++nr_loads;
		return 0;
	}
	nr_probes++;
	if (fake_minor < 8) {		/* __reserved was not zero */
		errno = EINVAL;
		return -1;
	}
	for (int i = 0; i < fake_nr_tables && h->build_id_size && h->crc; i++) {
		if (fake_tables[i].len == ld->len &&
		    !memcmp(&fake_tables[i].h, h, sizeof(*h))) {
			nr_probe_hits++;
			ld->id = fake_tables[i].id;
			return 0;
		}
	}
	errno = ENOENT;
	return -1;
}

static int fake_ioctl(int fd, unsigned long req, void *arg)
{
	(void)fd;
	if (req == NMIPROF_IOC_UW_LOAD)
		return fake_load(arg);
	if (req == NMIPROF_IOC_UW_SET_MAPS) {
		const struct nmiprof_uw_maps *m = arg;
		const struct nmiprof_uw_map *v = (const void *)(uintptr_t)m->maps;

		if (!m->nr) {		/* the process's set dropped */
			nr_drops++;
			return 0;
		}
		/* kmod/unwind_maps.c's checks (4-level paging's TASK_SIZE_MAX) */
		for (uint32_t i = 0; i < m->nr; i++) {
			if (v[i].start >= v[i].end || v[i].end > 0x7ffffffff000ULL ||
			    (i && v[i].start < v[i - 1].end)) {
				nr_refused++;
				errno = EINVAL;
				return -1;
			}
		}
		nr_sets++;
		set_pid = m->pid;
		set_nr = m->nr;
		return 0;
	}
	if (req == NMIPROF_IOC_UW_STATS) {
		((struct nmiprof_uw_stats *)arg)->evicted = fake_evicted;
		return 0;
	}
	errno = ENOTTY;
	return -1;
}

static const struct np_kmod_sys fake = { .ioctl = fake_ioctl };

static char exe[PATH_MAX];

/* An exec of pid: its COMM, then its program mapped executable. */
static void exec_of(struct np_kmod_unwind *k, uint32_t pid, uint64_t at)
{
	struct np_event ev = { .type = NP_EV_COMM };

	ev.comm.pid = ev.comm.tid = pid;
	ev.comm.exec = 1;
	strcpy(ev.comm.comm, "prog");
	np_kmod_unwind_event(k, &ev);
	memset(&ev, 0, sizeof(ev));
	ev.type = NP_EV_MMAP;
	ev.mmap.pid = ev.mmap.tid = pid;
	ev.mmap.start = at;
	ev.mmap.len = 0x100000;
	ev.mmap.prot = 5;	/* PROT_READ | PROT_EXEC */
	ev.mmap.filename = exe;
	np_kmod_unwind_event(k, &ev);
}

/* A sample of pid at ip whose walk ended for reason why (END: no marker). */
static void sample_cut(struct np_kmod_unwind *k, uint32_t pid, uint64_t ip,
		       int why)
{
	struct np_event ev = { .type = NP_EV_SAMPLE };
	uint64_t frames[2] = { ip, NMIPROF_UW_MARK(why) };

	ev.sample.pid = ev.sample.tid = pid;
	ev.sample.ip = ip;
	ev.sample.nr_uframes = why == NMIPROF_UW_STOP_END ? 1 : 2;
	ev.sample.uframes = frames;
	np_kmod_unwind_event(k, &ev);
}

static void sample_of(struct np_kmod_unwind *k, uint32_t pid, uint64_t ip)
{
	sample_cut(k, pid, ip, NMIPROF_UW_STOP_END);
}

/* A reader over the fake device, its cache in dir. */
static struct np_kmod_unwind *unwind_open(const char *dir)
{
	struct np_kmod_unwind *k;
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	char err[256];

	CHECK(n > 0);
	exe[n > 0 ? n : 0] = '\0';
	k = np_kmod_unwind_new(3, &fake, fake_minor, dir, 1, err, sizeof(err));
	CHECK(k != NULL, "%s", err);
	return k;
}

/* The same in a new cache dir (a mkdtemp template), module emptied. */
static struct np_kmod_unwind *unwind_new(char *dir)
{
	fake_nr_tables = 0;
	CHECK(mkdtemp(dir) != NULL);
	return unwind_open(dir);
}

static void unwind_free(struct np_kmod_unwind *k, const char *dir)
{
	char cmd[64];

	np_kmod_unwind_free(k);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	CHECK(system(cmd) == 0);
}

/*
 * The set goes when the sample that asks for it is handed over, before
 * the consumer's work on the rest of the drain: sent only at the drain's
 * flush, it reached the module a second late under QEMU, after a short
 * exec'd job had ended (SET_MAPS refused with ESRCH, no table walk).
 */
static void test_set_sent_at_first_sample(void)
{
	char dir[] = "/tmp/np_kmod_unwind.XXXXXX";
	struct np_kmod_unwind *k = unwind_new(dir);
	uint32_t pid = getpid();

	if (!k)
		return;

	exec_of(k, pid, 0x400000);
	CHECK(nr_sets == 0, "%d sets before any sample", nr_sets);
	sample_of(k, pid, 0x401000);
	CHECK(nr_sets == 1 && set_pid == pid && set_nr > 0,
	      "%d sets (pid %u, %u maps) once the first sample is in", nr_sets,
	      set_pid, set_nr);
	np_kmod_unwind_flush(k);
	CHECK(nr_sets == 1, "%d sets after the flush: sent twice", nr_sets);
	sample_of(k, pid, 0x401000);
	np_kmod_unwind_flush(k);
	CHECK(nr_sets == 1, "%d sets: an unchanged set was sent again", nr_sets);

	/* exec again: the first sample of the new image sends its set */
	exec_of(k, pid, 0x500000);
	sample_of(k, pid, 0x501000);
	CHECK(nr_sets == 2, "%d sets after the exec's first sample", nr_sets);
	CHECK(nr_loads >= 1, "no table loaded");
	unwind_free(k, dir);
}

/*
 * A process met first through a sample, its maps read from /proc (it
 * existed before us): /proc shows [vsyscall], which no set may hold.
 */
static void test_set_from_proc_maps(void)
{
	char dir[] = "/tmp/np_kmod_unwind.XXXXXX";
	struct np_kmod_unwind *k = unwind_new(dir);

	nr_sets = nr_refused = 0;
	if (!k)
		return;
	sample_of(k, getpid(), (uintptr_t)test_set_from_proc_maps);
	np_kmod_unwind_flush(k);
	CHECK(nr_sets == 1 && nr_refused == 0 && set_nr > 0,
	      "%d sets, %d refused by the module's checks", nr_sets, nr_refused);
	unwind_free(k, dir);
}

static void thread_exit_of(struct np_kmod_unwind *k, uint32_t pid, uint32_t tid)
{
	struct np_event ev = { .type = NP_EV_EXIT };

	ev.task.pid = pid;
	ev.task.tid = tid;
	np_kmod_unwind_event(k, &ev);
}

static void exit_of(struct np_kmod_unwind *k, uint32_t pid)
{
	thread_exit_of(k, pid, pid);
}

/*
 * Processes come and go: an EXIT drops a set and frees its entry, the
 * others stay tracked (a change of theirs is sent), and past PROC_MAX
 * (4096) processes the rest walk by frame pointers until one exits.
 */
static void test_exit_forgets(void)
{
	char dir[] = "/tmp/np_kmod_unwind.XXXXXX";
	const uint32_t base = 1U << 22, n = 4096 + 50;
	struct np_kmod_unwind *k = unwind_new(dir);

	if (!k)
		return;
	nr_sets = nr_drops = 0;
	for (uint32_t i = 0; i < n; i++) {
		exec_of(k, base + i, 0x400000);
		sample_of(k, base + i, 0x401000);
	}
	CHECK(nr_sets == 4096, "%d sets for %u processes", nr_sets, n);
	/* Every other tracked process exits; the untracked ones get room. */
	for (uint32_t i = 0; i < 4096; i += 2)
		exit_of(k, base + i);
	CHECK(nr_drops == 2048, "%d sets dropped", nr_drops);
	nr_sets = 0;
	for (uint32_t i = 4096; i < n; i++)
		sample_of(k, base + i, 0x401000);
	CHECK(nr_sets == 50, "%d sets once there was room", nr_sets);
	/* The survivors are still known: an exec of each is sent. */
	nr_sets = 0;
	for (uint32_t i = 1; i < 4096; i += 2) {
		sample_of(k, base + i, 0x401000);
		exec_of(k, base + i, 0x500000);
	}
	CHECK(nr_sets == 0, "%d sets sent again unchanged", nr_sets);
	np_kmod_unwind_flush(k);
	CHECK(nr_sets == 2048, "%d of 2048 changed sets sent", nr_sets);
	exit_of(k, base + 1);
	exit_of(k, base + 1);
	CHECK(nr_drops == 2049, "%d drops: an exit dropped twice", nr_drops);
	unwind_free(k, dir);
}

/*
 * A leader that exits before its threads leaves the process sampled: the
 * module keeps the set (it takes the mm from a live thread), and so must
 * we, until the last thread's EXIT.  Here the process is a child, alive
 * while the leader's EXIT is handed over, gone at its thread's.
 */
static void test_leader_exit_keeps_set(void)
{
	char dir[] = "/tmp/np_kmod_unwind.XXXXXX";
	struct np_kmod_unwind *k = unwind_new(dir);
	pid_t child;

	if (!k)
		return;
	child = np_test_paused_child();
	CHECK(child > 0);
	nr_sets = nr_drops = 0;
	exec_of(k, child, 0x400000);
	sample_of(k, child, 0x401000);
	CHECK(nr_sets == 1, "%d sets", nr_sets);
	exit_of(k, child);
	CHECK(nr_drops == 0, "set dropped at the leader's EXIT, threads live");
	sample_of(k, child, 0x401000);
	CHECK(nr_sets == 1, "%d sets: the set was forgotten and sent again",
	      nr_sets);
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
	thread_exit_of(k, child, child + 1);
	CHECK(nr_drops == 1, "%d drops at the last thread's EXIT", nr_drops);
	unwind_free(k, dir);
}

/*
 * The module evicted tables for its budget: a process sampled again with
 * its walk cut at "no table" gets its tables loaded and its set sent
 * again; before any eviction, or once resent, such a sample (a pc the
 * tables do not cover) sends nothing.
 */
static void test_evicted_set_resent(void)
{
	char dir[] = "/tmp/np_kmod_unwind.XXXXXX";
	struct np_kmod_unwind *k = unwind_new(dir);
	uint32_t pid = getpid();
	int loads;

	if (!k)
		return;
	nr_sets = 0;
	fake_evicted = 0;
	exec_of(k, pid, 0x400000);
	sample_of(k, pid, 0x401000);
	CHECK(nr_sets == 1, "%d sets", nr_sets);
	sample_cut(k, pid, 0x401000, NMIPROF_UW_STOP_NO_TABLE);
	np_kmod_unwind_flush(k);
	CHECK(nr_sets == 1, "%d sets: resent with nothing evicted", nr_sets);
	loads = nr_loads;
	fake_evicted = 3;
	fake_nr_tables = 0;
	np_kmod_unwind_flush(k);
	sample_of(k, pid, 0x401000);
	CHECK(nr_sets == 1, "%d sets: resent for a whole walk", nr_sets);
	sample_cut(k, pid, 0x401000, NMIPROF_UW_STOP_NO_TABLE);
	CHECK(nr_sets == 2, "%d sets: not resent after an eviction", nr_sets);
	CHECK(nr_loads > loads, "its tables were not loaded again");
	sample_cut(k, pid, 0x401000, NMIPROF_UW_STOP_NO_TABLE);
	np_kmod_unwind_flush(k);
	CHECK(nr_sets == 2, "%d sets: resent twice for one eviction", nr_sets);
	fake_evicted = 0;
	unwind_free(k, dir);
}

/* Rewrite dir's one cache file with other rows, and their crc. */
static void cache_file_replace(const char *dir)
{
	struct nmiprof_uw_table *t;
	char path[4096] = "";
	struct dirent *de;
	size_t n = 0;
	void *buf = NULL;
	DIR *d = opendir(dir);
	FILE *f;

	while (d && (de = readdir(d)))
		if (strstr(de->d_name, ".uw"))
			snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
	if (d)
		closedir(d);
	f = fopen(path, "r+");
	CHECK(f && (buf = malloc(1 << 24)) &&
	      (n = fread(buf, 1, 1 << 24, f)) > sizeof(*t) + 8,
	      "cache file %s", path);
	if (!f || n <= sizeof(*t) + 8) {
		if (f)
			fclose(f);
		free(buf);
		return;
	}
	t = buf;
	((struct nmiprof_uw_row *)(t + 1))[0].cfa_off += 8;
	t->crc = np_crc32c(0, t + 1, n - sizeof(*t));
	rewind(f);
	CHECK(fwrite(buf, 1, n, f) == n);
	fclose(f);
	free(buf);
}

/*
 * A second reader of the same program (the module kept the first one's
 * tables, ABI 1.8) probes with each table's header and loads none; a
 * cache file rewritten with other rows (a new crc) matches nothing and
 * is loaded.
 */
static void test_second_reader_probes(void)
{
	char dir[] = "/tmp/np_kmod_unwind.XXXXXX";
	struct np_kmod_unwind *k = unwind_new(dir);
	uint32_t pid = getpid();
	int loads, probes;

	if (!k)
		return;
	nr_loads = nr_probes = nr_probe_hits = nr_sets = 0;
	exec_of(k, pid, 0x400000);
	sample_of(k, pid, 0x401000);
	loads = nr_loads;
	CHECK(nr_sets == 1 && loads >= 1 && nr_probe_hits == 0,
	      "first reader: %d sets, %d loads, %d probes hit", nr_sets, loads,
	      nr_probe_hits);
	np_kmod_unwind_free(k);

	k = unwind_open(dir);
	probes = nr_probes;
	exec_of(k, pid, 0x400000);
	sample_of(k, pid, 0x401000);
	CHECK(nr_sets == 2 && nr_loads == loads && nr_probe_hits == loads,
	      "second reader: %d sets, %d loads (first %d), %d probes hit",
	      nr_sets, nr_loads, loads, nr_probe_hits);
	CHECK(nr_probes > probes, "second reader did not probe");
	np_kmod_unwind_free(k);

	cache_file_replace(dir);
	k = unwind_open(dir);
	exec_of(k, pid, 0x400000);
	sample_of(k, pid, 0x401000);
	CHECK(nr_sets == 3 && nr_loads == loads + 1 && nr_probe_hits == loads,
	      "replaced file: %d sets, %d loads (want %d), %d probes hit",
	      nr_sets, nr_loads, loads + 1, nr_probe_hits);
	unwind_free(k, dir);
}

/*
 * An older module: of minor 7 nothing is probed and every reader loads
 * its tables; one that refuses the flag (EINVAL) is probed once.
 */
static void test_older_module_loads(void)
{
	char dir[] = "/tmp/np_kmod_unwind.XXXXXX";
	struct np_kmod_unwind *k;
	uint32_t pid = getpid();
	char err[256];
	int loads;

	fake_minor = 7;
	k = unwind_new(dir);
	if (!k)
		goto out;
	nr_loads = nr_probes = nr_probe_hits = 0;
	exec_of(k, pid, 0x400000);
	sample_of(k, pid, 0x401000);
	loads = nr_loads;
	np_kmod_unwind_free(k);
	k = unwind_open(dir);
	exec_of(k, pid, 0x400000);
	sample_of(k, pid, 0x401000);
	CHECK(nr_probes == 0 && loads >= 1 && nr_loads == 2 * loads,
	      "minor 7: %d probes, %d loads, want 2 x %d", nr_probes, nr_loads,
	      loads);
	np_kmod_unwind_free(k);

	/* says minor 8 but refuses the flag */
	k = np_kmod_unwind_new(3, &fake, 8, dir, 1, err, sizeof(err));
	CHECK(k != NULL, "%s", err);
	if (!k)
		goto out;
	exec_of(k, pid, 0x400000);
	sample_of(k, pid, 0x401000);
	exec_of(k, pid, 0x500000);
	sample_of(k, pid, 0x501000);
	CHECK(nr_probes == 1 && nr_loads == 3 * loads,
	      "probe refused: %d probes (want 1), %d loads (want %d)",
	      nr_probes, nr_loads, 3 * loads);
	unwind_free(k, dir);
out:
	fake_minor = NMIPROF_ABI_MINOR;
}

static const struct np_test_case cases[] = {
	NP_CASE(test_set_sent_at_first_sample),
	NP_CASE(test_set_from_proc_maps),
	NP_CASE(test_exit_forgets),
	NP_CASE(test_leader_exit_keeps_set),
	NP_CASE(test_evicted_set_resent),
	NP_CASE(test_second_reader_probes),
	NP_CASE(test_older_module_loads),
	{ 0 }
};

int main(int argc, char **argv)
{
	return np_test_main(argc, argv, cases);
}
