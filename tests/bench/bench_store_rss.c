// SPDX-License-Identifier: GPL-2.0
/*
 * Steady RSS with 100k distinct stacks, two ways.  Figures, not
 * assertions.
 *
 *   bench_store_rss [distinct_stacks] [slices] [shared_depth]
 *
 * In process: the daemon's aggregation + store path alone.  Every slice
 * sees all the stacks (worst case for the per-slice tables), is written
 * to a store in /tmp, and the aggregator is reset, as nmiprofd does
 * every 60 s.
 *
 *   bench_store_rss --daemon [NMIPROFD [paths [slice_s [slices [freq [live_s]]]]]]
 *
 * The real thing: nmiprofd (libperf backend, every CPU) samples a
 * workload whose processes walk `paths` distinct call chains (9 levels
 * of 4 functions), so each slice holds that many distinct stacks times
 * the few leaf addresses a spin loop is sampled at, plus the machine's
 * own.  The daemon's VmRSS is read every second; the distinct stacks
 * are counted from the segments it wrote.  `perf record -a -g` at the
 * same rate over the same workload is measured the same way.  Exits 77
 * when system-wide sampling is not allowed.
 */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <linux/perf_event.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include "agg.h"
#include "np_ctl.h"
#include "store.h"
#include "np_clock.h"

static long status_kb(const char *key)
{
	FILE *f = fopen("/proc/self/status", "r");
	size_t kl = strlen(key);
	char line[256];
	long kb = -1;

	while (f && fgets(line, sizeof(line), f))
		if (!strncmp(line, key, kl))
			kb = atol(line + kl);
	if (f)
		fclose(f);
	return kb;
}

static uint64_t rng(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static int sym(void *arg, uint32_t pid, uint64_t addr, int kernel,
	       struct np_sym *out)
{
	static char name[48];

	snprintf(name, sizeof(name), "%s_function_%llx", kernel ? "kernel" : "user",
		 (unsigned long long)(addr >> 4));
	out->dso = kernel ? "[kernel.kallsyms]" : "/usr/lib/libapp.so";
	out->name = name;
	out->offset = addr & 15;
	return 0;
}

/*
 * Stack `id`: 100 processes; user depth 14..26 over a fan-out-4 call tree
 * that branches below depth `shared` (4: stacks part ways early, the
 * worst case for a trie; 10: a server whose request path is common);
 * kernel depth 6..14 over a fan-out-4 tree below a shared entry.
 */
static uint32_t shared = 4;

static void stack_of(uint32_t id, struct np_ev_sample *s, uint64_t *k,
		     uint64_t *u)
{
	uint64_t path = id * 0x9e3779b97f4a7c15ULL;
	uint32_t proc = id % 100, nu = 14 + id % 13, nk = 6 + (id >> 3) % 9;

	for (uint32_t j = 0; j < nu; j++) {
		uint32_t d = nu - 1 - j;
		uint64_t br = d < shared ? 0 : (path >> (2 * (d - shared))) & 3;

		u[j] = 0x7f0000000000ULL + ((uint64_t)proc << 24) +
		       ((uint64_t)d << 16) + (br << 8) + 0x10 * (d & 7) + 3;
	}
	for (uint32_t j = 0; j < nk; j++) {
		uint32_t d = nk - 1 - j;
		uint64_t br = d < 2 ? 0 : (path >> (44 + 2 * d)) & 3;

		k[j] = 0xffffffff81000000ULL + ((uint64_t)d << 16) + (br << 8) + 5;
	}
	memset(s, 0, sizeof(*s));
	s->pid = s->tid = 5000 + proc;
	s->cpu = proc % 16;
	snprintf(s->comm, sizeof(s->comm), "svc-%u", proc);
	s->kframes = k;
	s->nr_kframes = (uint16_t)nk;
	s->uframes = u;
	s->nr_uframes = (uint16_t)nu;
}

/* ---- the daemon, on a workload of many distinct call chains ---- */

static volatile unsigned long sink;

static void walk(uint32_t path, int depth);

/* Four callers per level; the work after each call keeps its frame
 * (no tail call), so the user stack spells the path out. */
#define STEP(n) \
static __attribute__((noinline)) void step##n(uint32_t path, int depth) \
{ \
	walk(path, depth); \
	sink += n; \
}
STEP(0) STEP(1) STEP(2) STEP(3)

static __attribute__((noinline)) void walk(uint32_t path, int depth)
{
	static void (*const step[4])(uint32_t, int) = { step0, step1, step2, step3 };

	if (!depth) {
		for (unsigned int i = 0; i < 20000; i++)	/* ~10-20 us */
			sink++;
		return;
	}
	step[path & 3](path >> 2, depth - 1);
}

/* Paths in a fixed odd stride through [0, paths): each slice meets all. */
static __attribute__((noreturn)) void workload(uint32_t paths, uint32_t seed)
{
	for (uint64_t i = seed;; i++)
		walk((uint32_t)((i * 2654435761ULL) % paths), 9);
}

static long pid_kb(pid_t pid, const char *key)
{
	char path[64], line[256];
	size_t kl = strlen(key);
	long kb = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	f = fopen(path, "r");
	while (f && fgets(line, sizeof(line), f))
		if (!strncmp(line, key, kl))
			kb = atol(line + kl);
	if (f)
		fclose(f);
	return kb;
}

static void msleep(int ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

static pid_t spawn(char *const argv[], const char *out)
{
	pid_t pid = fork();

	if (pid == 0) {
		int fd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644);

		if (fd >= 0) {
			dup2(fd, 1);
			dup2(fd, 2);
		}
		execvp(argv[0], argv);
		_exit(127);
	}
	return pid;
}

static int cmp_long(const void *a, const void *b)
{
	long x = *(const long *)a, y = *(const long *)b;

	return x < y ? -1 : x > y;
}

/*
 * RSS of pid every second for `seconds` (the first `skip` not counted):
 * the max, which catches a slice write's temporaries, and the median,
 * the steady state between writes.
 */
static void watch_rss(pid_t pid, int seconds, long *max_kb, long *med_kb,
		      int skip)
{
	long v[4096];
	int n = 0;

	*max_kb = *med_kb = -1;
	for (int i = 0; i < seconds && n < 4096; i++) {
		long kb;

		msleep(1000);
		kb = pid_kb(pid, "VmRSS:");
		if (i < skip || kb < 0)
			continue;
		v[n++] = kb;
		if (kb > *max_kb)
			*max_kb = kb;
	}
	if (n) {
		qsort(v, n, sizeof(*v), cmp_long);
		*med_kb = v[n / 2];
	}
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

/* Distinct stacks the daemon stored over the whole run. */
static uint32_t stored_stacks(const char *store)
{
	struct np_read_opts ro;
	struct np_read_stats rs;
	const struct np_agg_entry *e;
	struct np_agg *a = np_agg_new(NULL);
	uint32_t ne, *ids, n = 0;
	char err[256];

	np_read_opts_init(&ro);
	if (!a || np_store_read(store, &ro, a, &rs, err, sizeof(err)))
		return 0;
	e = np_agg_entries(a, &ne);
	ids = malloc((ne + 1) * sizeof(*ids));
	for (uint32_t i = 0; ids && i < ne; i++)
		ids[i] = e[i].stack;
	if (ids) {
		qsort(ids, ne, sizeof(*ids), cmp_u32);
		for (uint32_t i = 0; i < ne; i++)
			n += !i || ids[i] != ids[i - 1];
	}
	printf("stored: %u segments, %llu samples, %llu lost, %u (pid, comm, cpu, stack) keys, "
	       "%u distinct stacks over the run\n", rs.segments,
	       (unsigned long long)rs.samples, (unsigned long long)rs.lost, ne, n);
	free(ids);
	np_agg_free(a);
	return n;
}

static int rm_one(const char *path, const struct stat *st, int flag,
		  struct FTW *ftw)
{
	remove(path);
	return 0;
}

static int daemon_bench(int argc, char **argv)
{
	const char *nmiprofd = argc > 2 && argv[2][0] ? argv[2]
				: NMIPROF_TEST_BINDIR "/../daemon/nmiprofd";
	uint32_t paths = argc > 3 ? (uint32_t)atoi(argv[3]) : 15000;
	int slice_s = argc > 4 ? atoi(argv[4]) : 30;
	int slices = argc > 5 ? atoi(argv[5]) : 3;
	int freq = argc > 6 ? atoi(argv[6]) : 5000;
	int live_s = argc > 7 ? atoi(argv[7]) : 0;	/* 0: the default */
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN), dmax, dmed, pmax, pmed;
	uint32_t nstacks;
	char dir[64], conf[128], store[128], sock[128], log[128], plog[128],
	     data[128], freq_s[16];
	struct perf_event_attr pa = {
		.type = PERF_TYPE_SOFTWARE, .size = sizeof(pa),
		.config = PERF_COUNT_SW_CPU_CLOCK, .sample_freq = 99, .freq = 1,
		.disabled = 1,
	};
	pid_t work[64], pid;
	int nwork = 0, fd;
	FILE *f;

	fd = (int)syscall(SYS_perf_event_open, &pa, -1, 0, -1, 0);
	if (fd < 0) {
		printf("SKIP: system-wide perf_event_open is not allowed here: %s\n",
		       strerror(errno));
		return 77;
	}
	close(fd);
	setvbuf(stdout, NULL, _IOLBF, 0);
	snprintf(dir, sizeof(dir), "/tmp/nmiprofd-rss.XXXXXX");
	if (!mkdtemp(dir))
		return 1;
	snprintf(conf, sizeof(conf), "%s/nmiprofd.conf", dir);
	snprintf(store, sizeof(store), "%s/store", dir);
	snprintf(sock, sizeof(sock), "%s/sock", dir);
	snprintf(log, sizeof(log), "%s/nmiprofd.log", dir);
	snprintf(plog, sizeof(plog), "%s/perf.log", dir);
	snprintf(data, sizeof(data), "%s/perf.data", dir);
	snprintf(freq_s, sizeof(freq_s), "%d", freq);
	f = fopen(conf, "w");
	if (!f)
		return 1;
	fprintf(f, "slice_seconds = %d\n", slice_s);
	if (live_s)
		fprintf(f, "live_seconds = %d\n", live_s);
	fclose(f);

	for (nwork = 0; nwork < ncpu && nwork < 64; nwork++) {
		work[nwork] = fork();
		if (work[nwork] == 0)
			workload(paths, (uint32_t)nwork * 7919);
	}
	printf("workload: %d processes walking %u distinct 9-level call chains; "
	       "nmiprofd at %d Hz per CPU, %d s slices, %d slices watched, live_seconds %s\n",
	       nwork, paths, freq, slice_s, slices, live_s ? argv[7] : "default");
	{
		char *const args[] = {
			(char *)nmiprofd, "-c", conf, "-s", store, "-S", sock,
			"-F", freq_s, "--backend", "libperf", NULL,
		};

		pid = spawn(args, log);
	}
	/* the first slice is partial and fills the tables: skip it */
	watch_rss(pid, slice_s * (slices + 1), &dmax, &dmed, slice_s + 2);
	if (dmax < 0) {
		printf("FAIL: nmiprofd did not run (log: %s)\n", log);
		for (int i = 0; i < nwork; i++)
			kill(work[i], SIGKILL);
		return 1;
	}
	printf("nmiprofd: RSS median %.1f MiB, max %.1f MiB (slice writes), peak (VmHWM) %.1f MiB\n",
	       dmed / 1024.0, dmax / 1024.0, pid_kb(pid, "VmHWM:") / 1024.0);
	{
		/* Where it goes, from the daemon's own status, at the end. */
		char err[256];
		struct np_ctl_client *c = np_ctl_open(sock, err, sizeof(err));
		struct np_ctl_status st;

		if (c && !np_ctl_status(c, &st, err, sizeof(err)))
			printf("nmiprofd status at the end: RSS %.1f MiB = live view %.1f + "
			       "current slice %.1f + store dictionary %.1f + symbols %.1f "
			       "(the kernel's and live processes' objects) + the rest %.1f MiB\n",
			       st.rss_bytes / 1048576.0, st.mem_live / 1048576.0,
			       st.mem_slice / 1048576.0, st.mem_store / 1048576.0,
			       st.mem_symbols / 1048576.0,
			       ((double)st.rss_bytes - st.mem_live - st.mem_slice -
				st.mem_store - st.mem_symbols) / 1048576.0);
		else
			printf("nmiprofd status: %s\n", err);
		if (c)
			np_ctl_close(c);
	}
	kill(pid, SIGTERM);
	waitpid(pid, NULL, 0);
	nstacks = stored_stacks(store);
	if (!nstacks) {
		printf("FAIL: the daemon's store does not read back (kept: %s)\n", dir);
		for (int i = 0; i < nwork; i++)
			kill(work[i], SIGKILL);
		return 1;
	}
	{
		char *const args[] = {
			"perf", "record", "-a", "-g", "-F", freq_s, "-o", data,
			"-q", NULL,
		};

		if (access("/usr/bin/perf", X_OK) == 0) {
			pid = spawn(args, plog);
			watch_rss(pid, slice_s + 2, &pmax, &pmed, 2);
			printf("perf record -a -g: RSS median %.1f MiB, max %.1f MiB; "
			       "ratio nmiprofd / perf record (median RSS): %.1f\n",
			       pmed / 1024.0, pmax / 1024.0,
			       pmed > 0 ? (double)dmed / (double)pmed : 0.0);
			kill(pid, SIGINT);
			waitpid(pid, NULL, 0);
		} else {
			printf("perf record: not measured (perf not installed)\n");
		}
	}
	for (int i = 0; i < nwork; i++) {
		kill(work[i], SIGKILL);
		waitpid(work[i], NULL, 0);
	}
	/* The workload's stack count varies with the machine: say which. */
	printf("target: steady RSS <= 32 MB (30.5 MiB) with 100k distinct stacks: %s\n",
	       nstacks < 100000 ? "not measured (fewer than 100k stacks: raise paths)" :
	       dmed <= 32000000 / 1024 ? "met (median)" : "NOT met");
	nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	return 0;
}

static int inprocess_bench(int argc, char **argv)
{
	uint32_t nstacks = argc > 1 ? (uint32_t)atoi(argv[1]) : 100000;
	uint32_t nslices = argc > 2 ? (uint32_t)atoi(argv[2]) : 6;
	uint64_t t0 = np_real_ns();
	long base_kb = status_kb("VmRSS:");
	struct np_store_opts so;
	struct np_agg_opts ao;
	struct np_store *st;
	struct np_agg *a;
	char dir[256], err[256], cmd[300];
	uint64_t seed = 1, k[16], u[32];

	snprintf(dir, sizeof(dir), "/tmp/nmiprof-bench-rss.%d", (int)getpid());
	np_store_opts_init(&so);
	so.dir = dir;
	st = np_store_open(&so, err, sizeof(err));
	np_agg_opts_init(&ao);
	ao.symbolize = sym;
	a = np_agg_new(&ao);
	if (argc > 3)
		shared = (uint32_t)atoi(argv[3]);
	if (!st || !a) {
		fprintf(stderr, "setup: %s\n", st ? "out of memory" : err);
		return 1;
	}
	printf("%u stack ids (20-40 frames, branching below depth %u), each "
	       "sampled ~3x per slice, %u slices; RSS before: %ld KiB\n",
	       nstacks, shared, nslices, base_kb);
	for (uint32_t sl = 0; sl < nslices; sl++) {
		uint32_t ne;

		for (uint32_t i = 0; i < nstacks * 3; i++) {
			struct np_ev_sample s;

			stack_of((uint32_t)(rng(&seed) % nstacks), &s, k, u);
			np_agg_sample(a, &s);
		}
		np_agg_entries(a, &ne);
		if (np_store_write(st, a, t0 + sl * 60000000000ULL,
				   t0 + (sl + 1) * 60000000000ULL, err, sizeof(err)))
			fprintf(stderr, "write: %s\n", err);
		printf("slice %u: %u keys, %u stack nodes, %u frames; agg+stack "
		       "table %.1f MiB; RSS %.1f MiB\n", sl, ne,
		       np_stacktab_nr_nodes(np_agg_stacktab(a)),
		       np_stacktab_nr_frames(np_agg_stacktab(a)),
		       np_agg_mem(a) / 1048576.0, status_kb("VmRSS:") / 1024.0);
		np_agg_reset(a);
	}
	printf("steady RSS %.1f MiB, peak (VmHWM) %.1f MiB, store %.1f MiB on disk\n",
	       status_kb("VmRSS:") / 1024.0, status_kb("VmHWM:") / 1024.0,
	       np_store_bytes(st) / 1048576.0);
	np_store_close(st);
	np_agg_free(a);
	{
		/* the segments must read back: a figure for a broken store is none */
		struct np_agg *r = np_agg_new(NULL);
		struct np_read_opts ro;
		struct np_read_stats rs = { 0 };

		np_read_opts_init(&ro);
		if (r && !np_store_read(dir, &ro, r, &rs, err, sizeof(err)))
			printf("read back: %u segments, %llu samples (%llu written), %u skipped\n",
			       rs.segments, (unsigned long long)rs.samples,
			       (unsigned long long)nstacks * 3 * nslices, rs.skipped);
		else
			printf("read back: FAILED: %s\n", err);
		np_agg_free(r);
	}
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	return system(cmd) != 0;
}

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "--daemon"))
		return daemon_bench(argc, argv);
	return inprocess_bench(argc, argv);
}
