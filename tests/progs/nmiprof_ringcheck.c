// SPDX-License-Identifier: GPL-2.0
/*
 * nmiprof_ringcheck: a minimal, independent reader of /dev/nmiprof for the
 * QEMU tests of nmiprof.ko.  It does not use libnmiprof on purpose: it
 * checks the module against the ABI header alone.
 *
 *   nmiprof_ringcheck [options]           sample, validate, report
 *   nmiprof_ringcheck -B                  bad-input checks only (device,
 *                                         watchdog and lockup queue
 *                                         ioctls, STOP from a file that
 *                                         did not START; a lockup must
 *                                         be queued)
 *
 * Sampling mode: HELLO, check the format text against the ABI structs,
 * CONFIGURE, mmap every possible CPU's ring, START, consume for -t seconds
 * (or, with -S, stall and consume only after STOP), STOP, drain.  Every
 * record is validated (type, size, alignment, pads, seq strictly
 * increasing per CPU, LOST records accounting for every gap), then
 *   samples consumed + lost == seqs issued, samples + LOST records ==
 *   ctrl->produced, lost == ctrl->lost
 * is checked per CPU, and with -c (and no external NMIs) CPUs not named
 * must have no samples at all.  Samples are attributed to functions through
 * /proc/kallsyms (kernel) and this program's own ELF symbols (user).
 *
 * Options:
 *   -t SECS   sampling time (default 3)       -f HZ   frequency (1000)
 *   -s SRC    auto|pmu|ipi|external           -e      also unclaimed NMIs
 *   -k N      kernel depth (64)               -u N    user depth (64)
 *   -U        no user stacks                  -R N    uregs + N raw bytes
 *   -c CPU    sample only CPU (repeatable)    -W N    watermark bytes
 *   -S        stall the consumer until STOP; require lost > 0
 *   -w        run a 75%/25% workload child (hot_a/hot_b); require
 *             >= 90% of its samples in them and hot_a at 60..90% of those,
 *             and >= 80% of its user stacks to reach np_workload and,
 *             4.5 KiB further up, np_workload_outer (not with -S,
 *             where it only makes user-stack-sized records)
 *   -O        with -w: follow the workload child (follow_pid, ABI 1.5);
 *             require every sample to be the child's, and no more NMIs
 *             on a CPU the child never ran on than 5% of the rate
 *             (/proc/interrupts): run a busy stranger beside it
 *   -x SYM:PCT@CPU  require SYM (the ip or one of the first 7 callers) in
 *             >= PCT% of CPU's samples between the first and the last
 *             sample in SYM (e.g. an irqs-off spin)
 *   -m PROG   run PROG SECS, a 32-bit program (tests/progs/ia32/); require
 *             >= 80% of its samples in ia32_leaf to have the user stack
 *             ia32_leaf <- ia32_mid <- ia32_outer <- main (the module's
 *             4-byte frame walk)
 *   -P        run a child whose frame pointer points into a page that was
 *             never touched (not resident): the module's user stack read
 *             faults in NMI context; require NMIPROF_RF_USTACK_FAULT seen
 *   -G CPU:MS require every gap between two consecutive samples of CPU
 *             to be below MS milliseconds (pacing that survives hotplug)
 *   -r CMD    run "sh -c CMD" once sampling has started (e.g. an insmod)
 *   -X        with -r: stop sampling as soon as CMD exits (-t is then a
 *             cap), so a benchmark's samples are those of CMD's lifetime
 *   -H N      print, per CPU, the N functions kernel-mode samples hit
 *             most (where the NMIs land; resolved after STOP, so the
 *             consumer's cost per sample stays that of a bare reader)
 *   -n N      require at least N samples in total (default 1)
 *   -Q PCT    require every sampled CPU's NMI handler to have taken at
 *             most PCT% of its time from START to STOP (the handler's
 *             summed cost over that time; cpu_time_max_percent)
 *   -L        require latched nested entries > 0
 *   -E        require samples from unclaimed (external) NMIs > 0
 *   -F TYPE   print the format text of record TYPE and exit
 *   -T MODE   unwind tables (ABI 1.2), with -w: first require tables
 *             that are truncated, overlapping, self-referencing (CFA =
 *             rsp + 0), of huge offsets or row counts to be refused with
 *             EINVAL; then give the workload child a mapping set naming
 *             MODE "dropped": a table since dropped (a replaced file's):
 *                     the walk falls back to frame pointers, and -w's
 *                     user stack checks apply as they are;
 *             MODE "wrong": a valid table for another file (rows of every
 *                     kind that do not describe this code): the walk must
 *                     stay bounded (no more frames than -u, table walks
 *                     counted, samples keep coming) and no oops
 * Prints one "RESULT PASS" or "RESULT FAIL: why" line last; exit 0 on pass.
 */
#define _GNU_SOURCE
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <linux/capability.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "../../include/nmiprof/nmiprof_abi.h"
#include "../../include/nmiprof/nmiprof_unwind.h"

#define MAX_CPUS	64

static int failures;

static void fail(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	printf("FAIL: ");
	vprintf(fmt, ap);
	printf("\n");
	va_end(ap);
	failures++;
}

/* ---------------------------------------------------------------- */
/* Workload: 3 units in hot_a for every unit in hot_b.               */
/* ---------------------------------------------------------------- */

static volatile uint64_t sink;

__attribute__((noinline)) void hot_a(long n)
{
	volatile uint64_t x = sink;

	for (long i = 0; i < n; i++)
		x = x * 6364136223846793005ULL + 1442695040888963407ULL;
	sink = x;
}

__attribute__((noinline)) void hot_b(long n)
{
	volatile uint64_t x = sink;

	for (long i = 0; i < n; i++)
		x = x * 6364136223846793005ULL + 1442695040888963407ULL;
	sink = x;
}

static double mono_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

__attribute__((noinline)) void np_workload(double secs)
{
	struct timespec ts;
	double end;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	end = ts.tv_sec + ts.tv_nsec / 1e9 + secs;
	do {
		hot_a(3 * 100000);
		hot_b(100000);
		clock_gettime(CLOCK_MONOTONIC, &ts);
	} while (ts.tv_sec + ts.tv_nsec / 1e9 < end);
}

/*
 * The workload runs under NP_DEEP_LEVELS frames of NP_DEEP_FRAME bytes,
 * so its user stacks span many of the 256-byte windows the module copies
 * at a time (kmod/sample.c): stacks that reach np_workload_outer prove
 * the walk refills its window.
 */
#define NP_DEEP_LEVELS	8
#define NP_DEEP_FRAME	512

__attribute__((noinline)) void np_deep(int level, double secs)
{
	volatile char pad[NP_DEEP_FRAME];

	pad[0] = (char)level;
	if (level)
		np_deep(level - 1, secs);
	else
		np_workload(secs);
	pad[NP_DEEP_FRAME - 1] = pad[0];	/* no tail call: the frame stays */
}

__attribute__((noinline)) void np_workload_outer(double secs)
{
	np_deep(NP_DEEP_LEVELS, secs);
	sink++;
}

/*
 * Spin with %rsp at @sp and %rbp at @fp, both in pages nobody has touched
 * (not resident), fp above sp as a real frame would be.  Nothing in the
 * loop touches the stack, so only the module's frame walk reads there.
 */
__attribute__((noinline)) void np_bad_frame(void *sp, void *fp, double secs)
{
	struct timespec ts;
	double end;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	end = ts.tv_sec + ts.tv_nsec / 1e9 + secs;
	do {
		long n = 1000000;

		asm volatile("push %%rbp\n\t"
			     "mov %%rsp, %%r12\n\t"
			     "mov %2, %%rsp\n\t"
			     "mov %1, %%rbp\n\t"
			     "1: dec %0\n\t"
			     "jnz 1b\n\t"
			     "mov %%r12, %%rsp\n\t"
			     "pop %%rbp"
			     : "+r" (n) : "r" (fp), "r" (sp)
			     : "memory", "cc", "r12");
		clock_gettime(CLOCK_MONOTONIC, &ts);
	} while (ts.tv_sec + ts.tv_nsec / 1e9 < end);
}

/* ---------------------------------------------------------------- */
/* Symbols: /proc/kallsyms and our own ELF symtab.                    */
/* ---------------------------------------------------------------- */

struct sym {
	uint64_t addr, end;
	char name[64];
};

struct symtab {
	struct sym *s;
	size_t n, cap;
};

static struct symtab ksyms, usyms, isyms;

static void sym_add(struct symtab *t, uint64_t addr, uint64_t size,
		    const char *name)
{
	if (t->n == t->cap) {
		t->cap = t->cap ? 2 * t->cap : 4096;
		t->s = realloc(t->s, t->cap * sizeof(*t->s));
		if (!t->s)
			abort();
	}
	t->s[t->n].addr = addr;
	t->s[t->n].end = size ? addr + size : 0;
	snprintf(t->s[t->n].name, sizeof(t->s[t->n].name), "%s", name);
	t->n++;
}

static int sym_cmp(const void *a, const void *b)
{
	const struct sym *x = a, *y = b;

	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

static void sym_sort(struct symtab *t)
{
	qsort(t->s, t->n, sizeof(*t->s), sym_cmp);
	/* Without a size a symbol ends where the next one starts. */
	for (size_t i = 0; i < t->n; i++)
		if (!t->s[i].end)
			t->s[i].end = i + 1 < t->n ? t->s[i + 1].addr :
				      t->s[i].addr + 4096;
}

static const char *sym_find(const struct symtab *t, uint64_t ip)
{
	size_t lo = 0, hi = t->n;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (t->s[mid].addr <= ip)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo && ip < t->s[lo - 1].end)
		return t->s[lo - 1].name;
	return NULL;
}

static void load_kallsyms(void)
{
	FILE *f = fopen("/proc/kallsyms", "r");
	char line[512], name[256], type;
	unsigned long long addr;

	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%llx %c %255s", &addr, &type, name) != 3)
			continue;
		if (addr && (type == 't' || type == 'T' || type == 'W' ||
			     type == 'w'))
			sym_add(&ksyms, addr, 0, name);
	}
	fclose(f);
	sym_sort(&ksyms);
}

/* Our own function symbols, relocated by the load bias of main(). */
static void load_self_syms(void)
{
	int fd = open("/proc/self/exe", O_RDONLY);
	struct stat st;
	uint8_t *map;
	Elf64_Ehdr *eh;
	Elf64_Shdr *sh;
	uint64_t bias = 0;
	bool have_bias = false;

	if (fd < 0 || fstat(fd, &st))
		return;
	map = mmap(NULL, st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (map == MAP_FAILED)
		return;
	eh = (Elf64_Ehdr *)map;
	sh = (Elf64_Shdr *)(map + eh->e_shoff);
	for (int i = 0; i < eh->e_shnum; i++) {
		Elf64_Sym *sym;
		const char *str;
		size_t n;

		if (sh[i].sh_type != SHT_SYMTAB)
			continue;
		sym = (Elf64_Sym *)(map + sh[i].sh_offset);
		str = (const char *)(map + sh[sh[i].sh_link].sh_offset);
		n = sh[i].sh_size / sizeof(*sym);
		for (size_t j = 0; j < n; j++) {
			if (ELF64_ST_TYPE(sym[j].st_info) != STT_FUNC ||
			    !sym[j].st_value)
				continue;
			if (!strcmp(str + sym[j].st_name, "main")) {
				extern int main(int, char **);

				bias = (uint64_t)(uintptr_t)main - sym[j].st_value;
				have_bias = true;
			}
		}
		for (size_t j = 0; have_bias && j < n; j++)
			if (ELF64_ST_TYPE(sym[j].st_info) == STT_FUNC &&
			    sym[j].st_value)
				sym_add(&usyms, sym[j].st_value + bias,
					sym[j].st_size, str + sym[j].st_name);
	}
	munmap(map, st.st_size);
	sym_sort(&usyms);
}

/* The function symbols of a 32-bit static (non-PIE) program. */
static int load_elf32_syms(const char *path, struct symtab *t)
{
	int fd = open(path, O_RDONLY);
	struct stat st;
	uint8_t *map;
	Elf32_Ehdr *eh;
	Elf32_Shdr *sh;

	if (fd < 0 || fstat(fd, &st)) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	map = mmap(NULL, st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (map == MAP_FAILED)
		return -1;
	eh = (Elf32_Ehdr *)map;
	if (memcmp(eh->e_ident, ELFMAG, SELFMAG) ||
	    eh->e_ident[EI_CLASS] != ELFCLASS32 || eh->e_type != ET_EXEC) {
		munmap(map, st.st_size);
		return -1;
	}
	sh = (Elf32_Shdr *)(map + eh->e_shoff);
	for (int i = 0; i < eh->e_shnum; i++) {
		Elf32_Sym *sym = (Elf32_Sym *)(map + sh[i].sh_offset);
		const char *str = (const char *)(map + sh[sh[i].sh_link].sh_offset);

		if (sh[i].sh_type != SHT_SYMTAB)
			continue;
		for (size_t j = 0; j < sh[i].sh_size / sizeof(*sym); j++)
			if (ELF32_ST_TYPE(sym[j].st_info) == STT_FUNC &&
			    sym[j].st_value)
				sym_add(t, sym[j].st_value, sym[j].st_size,
					str + sym[j].st_name);
	}
	munmap(map, st.st_size);
	sym_sort(t);
	return t->n ? 0 : -1;
}

/* ---------------------------------------------------------------- */
/* Format text: every field we use must be where the ABI says.        */
/* ---------------------------------------------------------------- */

static void check_field(const char *text, const char *type, const char *name,
			size_t off, size_t size)
{
	char want[160];

	snprintf(want, sizeof(want), "\tfield:%s %s;\toffset:%zu;\tsize:%zu;\t",
		 type, name, off, size);
	if (!strstr(text, want))
		fail("format: no line \"%s\"", want + 1);
}

static int get_format(int fd, unsigned int type, char *buf, size_t len)
{
	struct nmiprof_format_req req = {
		.type = type, .len = len, .buf = (uintptr_t)buf,
	};

	return ioctl(fd, NMIPROF_IOC_GET_FORMAT, &req) ? -errno : (int)req.len;
}

static void check_formats(int fd)
{
	char text[4096];
	int len = get_format(fd, NMIPROF_REC_SAMPLE, text, sizeof(text));

	if (len < 0) {
		fail("GET_FORMAT(sample): %s", strerror(-len));
		return;
	}
	if (len != (int)strlen(text) + 1)
		fail("GET_FORMAT: len %d but text is %zu", len, strlen(text));
	if (strncmp(text, "name: sample\nID: 1\nformat:\n", 27))
		fail("format: bad header");
	check_field(text, "unsigned short", "common_type", 0, 2);
	check_field(text, "unsigned int", "common_size", 4, 4);
	if (!strstr(text, "signed:0;\n\n\tfield:u64 seq;"))
		fail("format: no blank line between common and event fields");
#define F(t, f) check_field(text, t, #f, offsetof(struct nmiprof_sample, f), \
			    sizeof(((struct nmiprof_sample *)0)->f))
	F("u64", seq);
	F("u64", time_ns);
	F("u64", ip);
	F("u32", cpu);
	F("u32", pid);
	F("u32", tid);
	F("u16", nr_kframes);
	F("u16", nr_uframes);
#undef F
	check_field(text, "char", "comm[16]",
		    offsetof(struct nmiprof_sample, comm), NMIPROF_COMM_LEN);
	check_field(text, "__data_loc u64[]", "kstack",
		    offsetof(struct nmiprof_sample, kstack), 4);
	check_field(text, "__data_loc u64[]", "ustack",
		    offsetof(struct nmiprof_sample, ustack), 4);
	if (!strstr(text, "\n\nprint fmt: \""))
		fail("format: no print fmt");
	len = get_format(fd, NMIPROF_REC_LOST, text, sizeof(text));
	if (len < 0 || !strstr(text, "name: lost\nID: 2\n"))
		fail("GET_FORMAT(lost)");
	else
		check_field(text, "u64", "lost",
			    offsetof(struct nmiprof_lost, lost), 8);
	len = get_format(fd, NMIPROF_REC_LOCKUP, text, sizeof(text));
	if (len < 0 || !strstr(text, "name: lockup\nID: 3\n"))
		fail("GET_FORMAT(lockup)");
}

/* ---------------------------------------------------------------- */
/* Rings                                                             */
/* ---------------------------------------------------------------- */

struct ring {
	struct nmiprof_ring_ctrl *ctrl;
	uint8_t *data;
	uint64_t size;
	uint64_t next_seq;	/* every seq below is accounted for */
	uint64_t samples, lost, lost_records, pads;
	uint64_t kframes, uframes, user_mode, latched_recs;
	bool mapped;
};

static struct ring rings[MAX_CPUS];
static int nr_cpus;

/* Per-sample attribution. */
struct hit {
	char name[64];
	uint64_t n;
};

#define MAX_HITS 256
static struct hit child_hits[MAX_HITS];
static uint64_t child_samples, child_ustack_ok, child_ustack_total;
static unsigned int child_uframes_max;	/* most user frames of a sample */
static uint64_t child_ustack_deep;	/* ... and on to np_workload_outer */
static pid_t child_pid, fault_pid, ia32_pid;
static uint64_t other_samples;		/* not the workload child's */
static uint64_t child_cpus[MAX_CPUS];	/* the child's samples per CPU */
static uint64_t ia32_samples, ia32_leaf, ia32_chain;
static uint64_t fault_samples, fault_flagged;

struct expect {
	char sym[64];
	double pct;
	int cpu;
	uint64_t first, last;	/* time window of samples in sym */
};

static struct expect expects[8];
static int nr_expects;

/* -G: the largest gap allowed between samples of one CPU. */
static int gap_cpu = -1;
static double gap_max_ms;

/* All samples are kept (time, cpu, name) for the -x windows. */
#define KS_FRAMES 8

/* A sample counts for SYM if SYM is its ip or one of its first callers. */
struct ksample {
	uint64_t t, ip[KS_FRAMES];
	int cpu, nr;
	bool user;
};

static struct ksample *ks;
static size_t nks, kscap;

/* -H: the ip of every kernel-mode sample, resolved after STOP. */
struct kip {
	uint64_t ip;
	int cpu;
};

static int top_kips;
static struct kip *kips;
static size_t nkips, kipcap;

static void hit(struct hit *h, const char *name)
{
	for (int i = 0; i < MAX_HITS; i++) {
		if (!h[i].n) {
			snprintf(h[i].name, sizeof(h[i].name), "%s", name);
			h[i].n = 1;
			return;
		}
		if (!strcmp(h[i].name, name)) {
			h[i].n++;
			return;
		}
	}
}

static uint64_t hits_of(struct hit *h, const char *name)
{
	for (int i = 0; i < MAX_HITS && h[i].n; i++)
		if (!strcmp(h[i].name, name))
			return h[i].n;
	return 0;
}

static void check_loc(struct ring *r, const void *rec, uint32_t size,
		      uint32_t loc, unsigned int elem, const char *what)
{
	uint32_t off = NMIPROF_LOC_OFF(loc), len = NMIPROF_LOC_LEN(loc);

	(void)r;
	(void)rec;
	if (len && (off < sizeof(struct nmiprof_sample) || off + len > size ||
		    len % elem))
		fail("cpu %u: bad %s loc off %u len %u size %u",
		     (unsigned int)(r - rings), what, off, len, size);
}

static void consume_sample(struct ring *r, int cpu,
			   const struct nmiprof_sample *s, uint32_t size)
{
	const uint64_t *kst, *ust;
	const char *name;
	uint64_t uip;

	check_loc(r, s, size, s->kstack, 8, "kstack");
	check_loc(r, s, size, s->ustack, 8, "ustack");
	check_loc(r, s, size, s->uregs, 8, "uregs");
	check_loc(r, s, size, s->ustack_raw, 1, "ustack_raw");
	if (NMIPROF_LOC_LEN(s->kstack) != s->nr_kframes * 8u ||
	    NMIPROF_LOC_LEN(s->ustack) != s->nr_uframes * 8u)
		fail("cpu %d: frame counts disagree with locs", cpu);
	if (s->cpu != (uint32_t)cpu)
		fail("cpu %d: sample says cpu %u", cpu, s->cpu);
	kst = (const uint64_t *)((const uint8_t *)s + NMIPROF_LOC_OFF(s->kstack));
	ust = (const uint64_t *)((const uint8_t *)s + NMIPROF_LOC_OFF(s->ustack));
	r->samples++;
	r->kframes += s->nr_kframes;
	r->uframes += s->nr_uframes;
	if (s->hdr.common_flags & NMIPROF_RF_USER_MODE)
		r->user_mode++;
	if (s->hdr.common_flags & NMIPROF_RF_LATCHED)
		r->latched_recs++;
	if (!(s->hdr.common_flags & NMIPROF_RF_USER_MODE) && s->nr_kframes &&
	    kst[0] != s->ip)
		fail("cpu %d: kstack[0] %llx != ip %llx", cpu,
		     (unsigned long long)kst[0], (unsigned long long)s->ip);

	if (top_kips && !(s->hdr.common_flags & NMIPROF_RF_USER_MODE)) {
		if (nkips == kipcap) {
			kipcap = kipcap ? 2 * kipcap : 65536;
			kips = realloc(kips, kipcap * sizeof(*kips));
			if (!kips)
				abort();
		}
		kips[nkips++] = (struct kip){ .ip = s->ip, .cpu = cpu };
	}
	if (nr_expects || gap_cpu >= 0) {
		if (nks == kscap) {
			kscap = kscap ? 2 * kscap : 65536;
			ks = realloc(ks, kscap * sizeof(*ks));
			if (!ks)
				abort();
		}
		ks[nks] = (struct ksample){
			.t = s->time_ns, .ip = { s->ip }, .cpu = cpu, .nr = 1,
			.user = s->hdr.common_flags & NMIPROF_RF_USER_MODE,
		};
		for (int i = 1; i < s->nr_kframes && i < KS_FRAMES; i++)
			ks[nks].ip[ks[nks].nr++] = kst[i];
		nks++;
	}

	if (ia32_pid && s->pid == (uint32_t)ia32_pid) {
		static const char *const chain[] = {
			"ia32_leaf", "ia32_mid", "ia32_outer", "main",
		};
		const char *n0;
		int i;

		ia32_samples++;
		uip = s->nr_uframes ? ust[0] :
		      (s->hdr.common_flags & NMIPROF_RF_USER_MODE) ? s->ip : 0;
		n0 = uip ? sym_find(&isyms, uip) : NULL;
		if (n0 && !strcmp(n0, chain[0])) {
			ia32_leaf++;
			for (i = 1; i < 4 && i < s->nr_uframes; i++) {
				const char *n = sym_find(&isyms, ust[i]);

				if (!n || strcmp(n, chain[i]))
					break;
			}
			ia32_chain += i == 4;
		}
	}
	if (fault_pid && s->pid == (uint32_t)fault_pid) {
		fault_samples++;
		fault_flagged += !!(s->hdr.common_flags & NMIPROF_RF_USTACK_FAULT);
	}
	if (!child_pid || s->pid != (uint32_t)child_pid) {
		other_samples++;
		return;
	}
	child_samples++;
	child_cpus[cpu < MAX_CPUS ? cpu : 0]++;
	if (s->nr_uframes > child_uframes_max)
		child_uframes_max = s->nr_uframes;
	uip = s->nr_uframes ? ust[0] :
	      (s->hdr.common_flags & NMIPROF_RF_USER_MODE) ? s->ip : 0;
	name = uip ? sym_find(&usyms, uip) : NULL;
	hit(child_hits, name ? name : "?");
	if (name && (!strcmp(name, "hot_a") || !strcmp(name, "hot_b"))) {
		child_ustack_total++;
		if (s->nr_uframes >= 2) {
			const char *caller = sym_find(&usyms, ust[1]);

			if (caller && !strcmp(caller, "np_workload"))
				child_ustack_ok++;
		}
		for (unsigned int i = 2; i < s->nr_uframes; i++) {
			const char *f = sym_find(&usyms, ust[i]);

			if (f && !strcmp(f, "np_workload_outer")) {
				child_ustack_deep++;
				break;
			}
		}
	}
}

/* ---- -T: unwind tables ------------------------------------------------ */

struct uw_buf {
	struct nmiprof_uw_table t;
	struct nmiprof_uw_row r[4096];
};

static struct uw_buf uwb;

/* A valid table of n rows: CFA = rsp + 16, every 16 bytes. */
static size_t uw_table(unsigned int n)
{
	memset(&uwb, 0, sizeof(uwb));
	uwb.t.magic = NMIPROF_UW_MAGIC;
	uwb.t.version = NMIPROF_UW_VERSION;
	uwb.t.hdr_size = sizeof(uwb.t);
	uwb.t.row_size = sizeof(uwb.r[0]);
	uwb.t.nr_rows = n;
	uwb.t.size = n * 16;
	uwb.t.ra_off = -8;
	for (unsigned int i = 0; i < n; i++) {
		uwb.r[i].pc = i * 16;
		uwb.r[i].cfa_off = 16;
		uwb.r[i].info = NMIPROF_UW_CFA;
		uwb.r[i].rbp_off = -2;
	}
	return sizeof(uwb.t) + n * sizeof(uwb.r[0]);
}

static int uw_load(int fd, size_t len, uint32_t *id)
{
	struct nmiprof_uw_load ld = { .table = (uintptr_t)&uwb, .len = len };

	if (ioctl(fd, NMIPROF_IOC_UW_LOAD, &ld))
		return -errno;
	*id = ld.id;
	return 0;
}

static void *uw_idle_thread(void *arg)
{
	(void)arg;
	for (;;)
		pause();
	return NULL;
}

/*
 * A process whose thread-group leader exited while a thread runs on
 * still has its mm: a mapping set for it is accepted, not ESRCH.
 */
static void uw_leader_gone(int fd)
{
	struct nmiprof_uw_map map = { .start = 0x10000, .end = 0x20000 };
	struct nmiprof_uw_maps req = { .nr = 1, .maps = (uintptr_t)&map };
	char path[64], buf[512], *p = NULL;
	int ret = -1, go[2], err = -1;
	pthread_t t;
	pid_t pid;

	if (pipe(go)) {
		fail("unwind: pipe: %s", strerror(errno));
		return;
	}
	pid = fork();
	if (pid == 0) {
		err = pthread_create(&t, NULL, uw_idle_thread, NULL);
		if (write(go[1], &err, sizeof(err)) != sizeof(err) || err)
			_exit(1);
		/* the leader alone; pthread_exit() would want libgcc_s */
		syscall(SYS_exit, 0);
	}
	close(go[1]);
	if (read(go[0], &err, sizeof(err)) != sizeof(err) || err)
		fail("unwind: the test process's thread: %s",
		     err > 0 ? strerror(err) : "no answer");
	close(go[0]);
	/* wait for the leader to be a zombie: "pid (comm) Z ..." */
	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	for (int i = 0; i < 500; i++) {
		FILE *f = fopen(path, "r");
		size_t n = f ? fread(buf, 1, sizeof(buf) - 1, f) : 0;

		if (f)
			fclose(f);
		buf[n] = '\0';
		p = strrchr(buf, ')');
		if (p && p[1] == ' ' && p[2] == 'Z')
			break;
		p = NULL;
		usleep(10000);
	}
	snprintf(path, sizeof(path), "ls /proc/%d/task | tr '\\n' ' '", pid);
	printf("threads of the leader-gone process: ");
	fflush(stdout);
	if (system(path))
		printf("?");
	printf("\n");
	if (p) {
		req.pid = pid;
		ret = ioctl(fd, NMIPROF_IOC_UW_SET_MAPS, &req) ? -errno : 0;
		printf("unwind set of a process whose leader exited: %s\n",
		       ret ? strerror(-ret) : "accepted");
		if (ret)
			fail("unwind set of a process whose leader exited: %s",
			     strerror(-ret));
		req.nr = 0;
		ioctl(fd, NMIPROF_IOC_UW_SET_MAPS, &req);
	} else {
		fail("unwind: the test process's leader did not exit alone");
	}
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
}

/* Each malformed table must be refused with EINVAL. */
static void uw_refused(int fd)
{
	static const char *const what[] = {
		"truncated", "overlapping rows", "self-referencing CFA",
		"huge CFA offset", "huge row count", "rbp above the CFA",
	};
	uint32_t id;

	for (unsigned int i = 0; i < sizeof(what) / sizeof(what[0]); i++) {
		size_t len = uw_table(64);
		int ret;

		switch (i) {
		case 0: len -= 4; break;
		case 1: uwb.r[9].pc = uwb.r[8].pc; break;
		case 2: uwb.r[5].cfa_off = 0; break;
		case 3: uwb.r[7].cfa_off = 0xffff; break;
		case 4: uwb.t.nr_rows = 0xffffffffU; break;
		case 5: uwb.r[3].rbp_off = 4; break;
		}
		ret = uw_load(fd, len, &id);
		printf("unwind table %s: %s\n", what[i],
		       ret ? strerror(-ret) : "ACCEPTED");
		if (ret != -EINVAL)
			fail("unwind table %s: want EINVAL, got %s", what[i],
			     ret ? strerror(-ret) : "accepted");
	}
	uw_leader_gone(fd);
}

/*
 * The child's mapping set: this program's code, which the forked child
 * shares, mapped to a table that was dropped ("dropped") or that
 * describes other code ("wrong").
 */
static void uw_set_child(int fd, pid_t pid, const char *mode)
{
	struct nmiprof_uw_map maps[8];
	struct nmiprof_uw_maps req = { .pid = pid, .maps = (uintptr_t)maps };
	char exe[4096], line[4096 + 128];
	uint32_t id = 0;
	ssize_t n;
	FILE *f;

	if (!strcmp(mode, "dropped")) {
		if (uw_load(fd, uw_table(64), &id) ||
		    ioctl(fd, NMIPROF_IOC_UW_DROP, &id))
			fail("unwind: load and drop a table: %s", strerror(errno));
	} else {
		/* rows of every kind, cycling, over 64 KiB */
		size_t len = uw_table(4096);

		for (unsigned int i = 0; i < 4096; i++) {
			static const uint8_t kinds[] = {
				NMIPROF_UW_CFA, NMIPROF_UW_CFA | NMIPROF_UW_CFA_RBP,
				NMIPROF_UW_NONE, NMIPROF_UW_FP, NMIPROF_UW_PLT,
				NMIPROF_UW_SIGNAL, NMIPROF_UW_END, NMIPROF_UW_CFA,
			};

			uwb.r[i].info = kinds[i % 8];
			uwb.r[i].cfa_off = i % 8 == 7 ? NMIPROF_UW_MAX_CFA_OFF : 16;
		}
		if (uw_load(fd, len, &id))
			fail("unwind: valid table refused: %s", strerror(errno));
	}
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	f = fopen("/proc/self/maps", "r");
	if (n <= 0 || !f) {
		fail("unwind: cannot read this program's mappings");
		if (f)
			fclose(f);
		return;
	}
	exe[n] = '\0';
	while (fgets(line, sizeof(line), f) && req.nr < 8) {
		unsigned long long start, end;
		char perms[8], *path = strchr(line, '/');

		if (sscanf(line, "%llx-%llx %7s", &start, &end, perms) != 3 ||
		    !strchr(perms, 'x') || !path)
			continue;
		path[strcspn(path, "\n")] = '\0';
		if (strcmp(path, exe))
			continue;
		maps[req.nr++] = (struct nmiprof_uw_map){
			.start = start, .end = end, .bias = start, .table = id,
		};
	}
	fclose(f);
	if (!req.nr || ioctl(fd, NMIPROF_IOC_UW_SET_MAPS, &req))
		fail("unwind: set the child's maps (%u): %s", req.nr,
		     strerror(errno));
	printf("unwind: child %d: %u mapping(s) -> %s table %u\n", (int)pid,
	       req.nr, mode, id);
}

static void uw_stats(int fd, struct nmiprof_uw_stats *u)
{
	memset(u, 0, sizeof(*u));
	if (ioctl(fd, NMIPROF_IOC_UW_STATS, u))
		fail("UW_STATS: %s", strerror(errno));
	printf("unwind: %llu tables, %llu bytes, %llu refused, %llu walks; stops",
	       (unsigned long long)u->tables, (unsigned long long)u->table_bytes,
	       (unsigned long long)u->refused, (unsigned long long)u->walks);
	for (int i = 0; i < NMIPROF_UW_STOP_NR; i++)
		printf(" %llu", (unsigned long long)u->stops[i]);
	printf("\n");
}

/* Consume everything up to head; returns bytes consumed. */
static uint64_t consume(int cpu)
{
	struct ring *r = &rings[cpu];
	uint64_t head = __atomic_load_n(&r->ctrl->head, __ATOMIC_ACQUIRE);
	uint64_t tail = r->ctrl->tail, start = tail;

	if (head - tail > r->size) {
		fail("cpu %d: head %llu tail %llu beyond the ring", cpu,
		     (unsigned long long)head, (unsigned long long)tail);
		return 0;
	}
	while (tail < head) {
		uint64_t pos = tail & (r->size - 1);
		const struct nmiprof_rec_header *h = (const void *)(r->data + pos);
		uint32_t size = h->common_size;

		if (size < sizeof(*h) || size % 8 || pos + size > r->size ||
		    tail + size > head) {
			fail("cpu %d: bad record size %u at %llu", cpu, size,
			     (unsigned long long)tail);
			return 0;
		}
		switch (h->common_type) {
		case NMIPROF_REC_PAD:
			r->pads++;
			break;
		case NMIPROF_REC_LOST: {
			const struct nmiprof_lost *l = (const void *)h;

			if (size != sizeof(*l) || l->seq != r->next_seq ||
			    !l->lost || l->cpu != (uint32_t)cpu)
				fail("cpu %d: LOST seq %llu (want %llu) lost %llu",
				     cpu, (unsigned long long)l->seq,
				     (unsigned long long)r->next_seq,
				     (unsigned long long)l->lost);
			r->next_seq = l->seq + l->lost;
			r->lost += l->lost;
			r->lost_records++;
			break;
		}
		case NMIPROF_REC_SAMPLE: {
			const struct nmiprof_sample *s = (const void *)h;

			if (size < sizeof(*s)) {
				fail("cpu %d: short sample %u", cpu, size);
				return 0;
			}
			if (s->seq != r->next_seq)
				fail("cpu %d: seq %llu, want %llu", cpu,
				     (unsigned long long)s->seq,
				     (unsigned long long)r->next_seq);
			r->next_seq = s->seq + 1;
			consume_sample(r, cpu, s, size);
			break;
		}
		default:
			fail("cpu %d: record type %u", cpu, h->common_type);
			return 0;
		}
		tail += size;
	}
	__atomic_store_n(&r->ctrl->tail, tail, __ATOMIC_RELEASE);
	return tail - start;
}

static int map_rings(int fd, uint64_t data_size)
{
	long psz = sysconf(_SC_PAGESIZE);

	for (int cpu = 0; cpu < nr_cpus; cpu++) {
		struct ring *r = &rings[cpu];
		void *c, *d;

		c = mmap(NULL, psz, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
			 NMIPROF_MMAP_OFFSET(cpu, NMIPROF_MAP_CTRL));
		if (c == MAP_FAILED)
			continue;	/* not a possible CPU */
		d = mmap(NULL, data_size, PROT_READ, MAP_SHARED, fd,
			 NMIPROF_MMAP_OFFSET(cpu, NMIPROF_MAP_DATA));
		if (d == MAP_FAILED) {
			fail("cpu %d: data mmap: %s", cpu, strerror(errno));
			return -1;
		}
		r->ctrl = c;
		r->data = d;
		r->size = data_size;
		r->mapped = true;
		if (r->ctrl->magic != NMIPROF_MAGIC || r->ctrl->cpu != (uint32_t)cpu ||
		    r->ctrl->data_size != data_size ||
		    r->ctrl->ctrl_size != (uint32_t)psz)
			fail("cpu %d: bad ctrl page", cpu);
	}
	return 0;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static int open_hello(struct nmiprof_hello *h)
{
	int fd = open(NMIPROF_DEVICE, O_RDWR);

	if (fd < 0) {
		fail("open %s: %s", NMIPROF_DEVICE, strerror(errno));
		return -1;
	}
	memset(h, 0, sizeof(*h));
	h->magic = NMIPROF_MAGIC;
	h->abi_version = NMIPROF_ABI_VERSION;
	if (ioctl(fd, NMIPROF_IOC_HELLO, h)) {
		fail("HELLO: %s", strerror(errno));
		close(fd);
		return -1;
	}
	return fd;
}

/* ---------------------------------------------------------------- */
/* Bad input                                                         */
/* ---------------------------------------------------------------- */

#define EXPECT_ERR(call, err) do {					\
	errno = 0;							\
	if ((call) != -1 || errno != (err))				\
		fail("%s: got errno %d (%s), want %s", #call, errno,	\
		     strerror(errno), #err);				\
	else								\
		printf("ok: %s -> %s\n", #call, #err);			\
} while (0)

#define EXPECT_MAP_ERR(call, err) do {					\
	void *m_ = (call);						\
	if (m_ != MAP_FAILED || errno != (err))				\
		fail("%s: got %p errno %d, want %s", #call, m_, errno,	\
		     #err);						\
	else								\
		printf("ok: %s -> %s\n", #call, #err);			\
} while (0)

static void good_config(struct nmiprof_config *c)
{
	memset(c, 0, sizeof(*c));
	c->freq_hz = 1000;
	c->kstack_depth = 16;
	c->ustack_depth = 16;
	c->flags = NMIPROF_CF_USER_STACKS;
}


/* ---------------------------------------------------------------- */
/* Watchdog ioctls: round trips and bad input                        */
/* ---------------------------------------------------------------- */

static bool wd_equal(const struct nmiprof_watchdog *a,
		     const struct nmiprof_watchdog *b)
{
	return !memcmp(a, b, sizeof(*a));
}

static void wd_print(const char *what, const struct nmiprof_watchdog *w)
{
	printf("%s: enabled %u threshold %u s flags %#x cpumask[0] %#llx\n",
	       what, w->enabled, w->threshold_s, w->flags,
	       (unsigned long long)w->cpumask[0]);
}

/* SET @w, then GET must return @want (NULL: @w itself). */
static void wd_roundtrip(int fd, const char *what,
			 const struct nmiprof_watchdog *w,
			 const struct nmiprof_watchdog *want)
{
	struct nmiprof_watchdog got;

	if (ioctl(fd, NMIPROF_IOC_SET_WATCHDOG, w)) {
		fail("SET_WATCHDOG %s: %s", what, strerror(errno));
		return;
	}
	memset(&got, 0xa5, sizeof(got));
	if (ioctl(fd, NMIPROF_IOC_GET_WATCHDOG, &got)) {
		fail("GET_WATCHDOG after %s: %s", what, strerror(errno));
		return;
	}
	if (!wd_equal(&got, want ? want : w)) {
		wd_print("  set", w);
		wd_print("  got", &got);
		fail("GET_WATCHDOG after %s returned something else", what);
	} else {
		printf("ok: watchdog round trip: %s\n", what);
	}
}

static void wd_bad(int fd, const struct nmiprof_watchdog *w, const char *what)
{
	errno = 0;
	if (ioctl(fd, NMIPROF_IOC_SET_WATCHDOG, w) != -1 || errno != EINVAL)
		fail("SET_WATCHDOG %s: got errno %d (%s), want EINVAL", what,
		     errno, strerror(errno));
	else
		printf("ok: SET_WATCHDOG %s -> EINVAL\n", what);
}

/*
 * In a child, after dropping privileges: GET_WATCHDOG works, SET_WATCHDOG
 * is refused with EPERM.  With @perfmon only CAP_SYS_ADMIN goes (the
 * device can still be opened through CAP_PERFMON); otherwise the child
 * becomes nobody and keeps @fd.
 */
static bool wd_unprivileged(int fd, bool perfmon)
{
	struct __user_cap_header_struct hdr = {
		.version = _LINUX_CAPABILITY_VERSION_3,
	};
	struct __user_cap_data_struct cap[2];
	struct nmiprof_watchdog w;
	struct nmiprof_hello h;
	int status;
	pid_t pid = fork();

	if (pid == 0) {
		if (perfmon) {
			if (syscall(SYS_capget, &hdr, cap))
				_exit(10);
			cap[CAP_SYS_ADMIN / 32].effective &=
				~(1U << (CAP_SYS_ADMIN % 32));
			cap[CAP_SYS_ADMIN / 32].permitted &=
				~(1U << (CAP_SYS_ADMIN % 32));
			if (syscall(SYS_capset, &hdr, cap))
				_exit(11);
			fd = open_hello(&h);
			if (fd < 0)
				_exit(12);	/* CAP_PERFMON must open it */
		} else if (setgid(65534) || setuid(65534)) {
			_exit(13);
		}
		if (ioctl(fd, NMIPROF_IOC_GET_WATCHDOG, &w))
			_exit(14);	/* reading is for any holder */
		if (ioctl(fd, NMIPROF_IOC_SET_WATCHDOG, &w) != -1 ||
		    errno != EPERM)
			_exit(15);
		_exit(0);
	}
	waitpid(pid, &status, 0);
	if (!WIFEXITED(status) || WEXITSTATUS(status)) {
		fail("unprivileged watchdog ioctls (%s): child exit %d",
		     perfmon ? "CAP_PERFMON without CAP_SYS_ADMIN" :
		     "fd passed to nobody",
		     WIFEXITED(status) ? WEXITSTATUS(status) : -1);
		return false;
	}
	printf("ok: SET_WATCHDOG -> EPERM, GET allowed (%s)\n",
	       perfmon ? "CAP_PERFMON without CAP_SYS_ADMIN" :
	       "fd passed to nobody");
	return true;
}

/* The module's watchdog_thresh parameter; its default if unreadable. */
static unsigned int wd_param_thresh(void)
{
	FILE *f = fopen("/sys/module/nmiprof/parameters/watchdog_thresh", "r");
	unsigned int t = 10;

	if (f) {
		if (fscanf(f, "%u", &t) != 1)
			t = 10;
		fclose(f);
	}
	return t;
}

static void bad_watchdog(int fd, unsigned int nr_cpu_ids)
{
	struct nmiprof_watchdog orig, w, want, cur;
	long psz = sysconf(_SC_PAGESIZE);
	uint64_t all = nr_cpu_ids >= 64 ? ~0ULL : (1ULL << nr_cpu_ids) - 1;
	char big[sizeof(w) + 8];
	void *bad = (void *)16;
	uint8_t *page;

	if (ioctl(fd, NMIPROF_IOC_GET_WATCHDOG, &orig)) {
		fail("GET_WATCHDOG: %s", strerror(errno));
		return;
	}
	wd_print("watchdog at load", &orig);
	/* The load-time defaults: on, watchdog_thresh, no flags, every CPU. */
	if (orig.enabled != 1 || orig.threshold_s != wd_param_thresh() ||
	    orig.flags || orig.cpumask[0] != all || orig.__reserved0)
		fail("GET_WATCHDOG: not the load-time defaults");

	/* Round trips: what is set is what GET says, and what runs. */
	memset(&w, 0, sizeof(w));
	w.enabled = 1;
	w.threshold_s = 7;
	w.flags = NMIPROF_WF_ALL_CPU_BT;
	w.cpumask[0] = 1ULL << (nr_cpu_ids - 1);
	wd_roundtrip(fd, "threshold 7, all-CPU backtraces, last CPU", &w, NULL);
	w.threshold_s = NMIPROF_WD_MAX_THRESHOLD;
	w.flags = NMIPROF_WF_ALL_CPU_BT | NMIPROF_WF_PANIC;
	wd_roundtrip(fd, "threshold max, panic flag", &w, NULL);
	/* Off first: a 1 s threshold could see a starved vCPU as stuck. */
	w.enabled = 0;
	w.threshold_s = 1;
	w.flags = 0;
	w.cpumask[0] = 0;
	want = w;
	want.cpumask[0] = all;
	wd_roundtrip(fd, "off, threshold 1, empty mask means every CPU", &w,
		     &want);
	w.threshold_s = 5;
	w.cpumask[0] = 1;
	wd_roundtrip(fd, "off, threshold 5, CPU 0", &w, NULL);
	cur = w;

	/* Bad input: refused, and nothing of it applied. */
	w = cur; w.threshold_s = 0;
	wd_bad(fd, &w, "threshold 0");
	w = cur; w.threshold_s = NMIPROF_WD_MAX_THRESHOLD + 1;
	wd_bad(fd, &w, "threshold max + 1");
	w = cur; w.threshold_s = 0xffffffff;
	wd_bad(fd, &w, "threshold 2^32 - 1");
	w = cur; w.enabled = 2;
	wd_bad(fd, &w, "enabled 2");
	w = cur; w.flags = 1U << 7;
	wd_bad(fd, &w, "unknown flag");
	w = cur; w.__reserved0 = 1;
	wd_bad(fd, &w, "__reserved0 set");
	w = cur; w.__reserved[3] = 1;
	wd_bad(fd, &w, "__reserved[3] set");
	w = cur; w.cpumask[0] |= 1ULL << nr_cpu_ids;
	wd_bad(fd, &w, "CPU nr_cpu_ids in the mask");
	w = cur; w.cpumask[15] = 1ULL << 63;
	wd_bad(fd, &w, "CPU 1023 in the mask");
	EXPECT_ERR(ioctl(fd, NMIPROF_IOC_SET_WATCHDOG, bad), EFAULT);
	EXPECT_ERR(ioctl(fd, NMIPROF_IOC_GET_WATCHDOG, bad), EFAULT);
	/* A struct that runs off the end of a mapping. */
	page = mmap(NULL, 2 * psz, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (page == MAP_FAILED) {
		fail("mmap: %s", strerror(errno));
	} else {
		w = cur;
		w.threshold_s = 9;
		memcpy(page + psz - 16, &w, 16);
		munmap(page + psz, psz);	/* nothing follows */
		EXPECT_ERR(ioctl(fd, NMIPROF_IOC_SET_WATCHDOG, page + psz - 16),
			   EFAULT);
		EXPECT_ERR(ioctl(fd, NMIPROF_IOC_GET_WATCHDOG, page + psz - 16),
			   EFAULT);
		munmap(page, psz);
	}
	/* Wrong sizes encoded in the command: unknown commands. */
	memset(big, 0, sizeof(big));
	EXPECT_ERR(ioctl(fd, _IOR(NMIPROF_IOC_MAGIC, 16, char[10]), big), ENOTTY);
	EXPECT_ERR(ioctl(fd, _IOW(NMIPROF_IOC_MAGIC, 17, char[sizeof(w) + 8]),
			 big), ENOTTY);
	EXPECT_ERR(ioctl(fd, _IOW(NMIPROF_IOC_MAGIC, 17, char[sizeof(w) - 8]),
			 big), ENOTTY);
	EXPECT_ERR(ioctl(fd, _IOWR(NMIPROF_IOC_MAGIC, 16, struct nmiprof_watchdog),
			 big), ENOTTY);
	if (ioctl(fd, NMIPROF_IOC_GET_WATCHDOG, &w) || !wd_equal(&w, &cur)) {
		wd_print("  want", &cur);
		wd_print("  got", &w);
		fail("a refused SET_WATCHDOG changed the watchdog");
	} else {
		printf("ok: refused SET_WATCHDOGs left it as it was\n");
	}

	wd_unprivileged(fd, false);
	wd_unprivileged(fd, true);
	if (ioctl(fd, NMIPROF_IOC_GET_WATCHDOG, &w) || !wd_equal(&w, &cur))
		fail("an unprivileged SET_WATCHDOG changed the watchdog");

	wd_roundtrip(fd, "back to the load-time settings", &orig, NULL);
}

/*
 * The lockup queue's ioctls (ABI 1.3): bad pointers, padding, sizes and
 * ids are refused and change nothing.  Needs a queued record: the
 * scenario has a CPU lock up first.
 */
static void bad_lockup_queue(int fd)
{
	struct nmiprof_lockup_read rd;
	const struct nmiprof_lockup *rec;
	uint64_t buf[1024], first, last, id;
	long psz = sysconf(_SC_PAGESIZE);
	uint32_t need;
	void *ro;

	memset(&rd, 0, sizeof(rd));
	EXPECT_ERR(ioctl(fd, NMIPROF_IOC_LOCKUP_READ, (void *)16), EFAULT);
	rd.__pad = 1;
	EXPECT_ERR(ioctl(fd, NMIPROF_IOC_LOCKUP_READ, &rd), EINVAL);
	rd.__pad = 0;
	rd.__reserved[3] = 1;
	EXPECT_ERR(ioctl(fd, NMIPROF_IOC_LOCKUP_READ, &rd), EINVAL);
	rd.__reserved[3] = 0;

	/* No room: ENOSPC, and the size it needs. */
	errno = 0;
	if (ioctl(fd, NMIPROF_IOC_LOCKUP_READ, &rd) != -1 || errno != ENOSPC) {
		if (!errno && !rd.id)
			fail("LOCKUP_READ: no lockup queued (the scenario runs one first)");
		else
			fail("LOCKUP_READ len 0: errno %d (%s), want ENOSPC",
			     errno, strerror(errno));
		return;
	}
	first = rd.id;
	need = rd.len;
	printf("ok: LOCKUP_READ len 0 -> ENOSPC, record %llu needs %u bytes\n",
	       (unsigned long long)first, need);
	if (need < sizeof(*rec) || need > sizeof(buf)) {
		fail("LOCKUP_READ needs %u bytes", need);
		return;
	}
	rd.len = need - 1;
	rd.buf = (uintptr_t)buf;
	EXPECT_ERR(ioctl(fd, NMIPROF_IOC_LOCKUP_READ, &rd), ENOSPC);
	if (rd.len != need)
		fail("LOCKUP_READ short buffer: len %u, want %u", rd.len, need);
	rd.len = need;
	rd.buf = 16;
	EXPECT_ERR(ioctl(fd, NMIPROF_IOC_LOCKUP_READ, &rd), EFAULT);
	ro = mmap(NULL, psz, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (ro != MAP_FAILED) {
		rd.buf = (uintptr_t)ro;
		EXPECT_ERR(ioctl(fd, NMIPROF_IOC_LOCKUP_READ, &rd), EFAULT);
		munmap(ro, psz);
	}

	/* ACK: bad pointer, no id, ids never produced. */
	EXPECT_ERR(ioctl(fd, NMIPROF_IOC_LOCKUP_ACK, (void *)16), EFAULT);
	id = 0;
	EXPECT_ERR(ioctl(fd, NMIPROF_IOC_LOCKUP_ACK, &id), ENOENT);
	for (last = first, rd.after = first, rd.len = 0;
	     !ioctl(fd, NMIPROF_IOC_LOCKUP_READ, &rd) || errno == ENOSPC;
	     rd.after = rd.id, rd.len = 0) {
		if (!rd.id)
			break;
		last = rd.id;
	}
	id = last + 1;
	EXPECT_ERR(ioctl(fd, NMIPROF_IOC_LOCKUP_ACK, &id), ENOENT);
	id = ~0ULL;
	EXPECT_ERR(ioctl(fd, NMIPROF_IOC_LOCKUP_ACK, &id), ENOENT);

	/* All of that changed nothing: the first record reads whole. */
	memset(&rd, 0, sizeof(rd));
	memset(buf, 0xa5, sizeof(buf));
	rd.buf = (uintptr_t)buf;
	rd.len = sizeof(buf);
	rec = (const struct nmiprof_lockup *)buf;
	if (ioctl(fd, NMIPROF_IOC_LOCKUP_READ, &rd) || rd.id != first ||
	    rd.len != need || rec->hdr.common_size != need ||
	    !(rec->lockup_flags & (NMIPROF_LF_HARD | NMIPROF_LF_SILENT |
				   NMIPROF_LF_RECOVERED))) {
		fail("LOCKUP_READ after bad input: id %llu (want %llu), len %u (want %u): %s",
		     (unsigned long long)rd.id, (unsigned long long)first,
		     rd.len, need, strerror(errno));
		return;
	}
	printf("ok: record %llu intact after bad input (CPU %u, flags %#x), %llu dropped\n",
	       (unsigned long long)first, rec->cpu, rec->lockup_flags,
	       (unsigned long long)rd.dropped);
	/* A good ACK, then the same id again. */
	id = first;
	if (ioctl(fd, NMIPROF_IOC_LOCKUP_ACK, &id))
		fail("LOCKUP_ACK %llu: %s", (unsigned long long)id, strerror(errno));
	EXPECT_ERR(ioctl(fd, NMIPROF_IOC_LOCKUP_ACK, &id), ENOENT);
	memset(&rd, 0, sizeof(rd));
	if ((ioctl(fd, NMIPROF_IOC_LOCKUP_READ, &rd) && errno != ENOSPC) ||
	    rd.id == first)
		fail("record %llu still queued after its ACK",
		     (unsigned long long)first);
}

static int bad_input(void)
{
	struct nmiprof_hello h;
	struct nmiprof_config c;
	struct nmiprof_stats st;
	struct nmiprof_format_req fr;
	struct nmiprof_watchdog wd;
	char small[8];
	long psz = sysconf(_SC_PAGESIZE);
	void *bad = (void *)16;
	int fd, status;
	pid_t pid;

	/* Unprivileged open: the device node's mode, then our own check. */
	chmod(NMIPROF_DEVICE, 0666);
	pid = fork();
	if (pid == 0) {
		if (setgid(65534) || setuid(65534))
			_exit(2);
		fd = open(NMIPROF_DEVICE, O_RDWR);
		_exit(fd < 0 && errno == EPERM ? 0 : 1);
	}
	waitpid(pid, &status, 0);
	if (!WIFEXITED(status) || WEXITSTATUS(status))
		fail("unprivileged open was not refused with EPERM");
	else
		printf("ok: unprivileged open -> EPERM\n");
	chmod(NMIPROF_DEVICE, 0600);

	fd = open(NMIPROF_DEVICE, O_RDWR);
	if (fd < 0) {
		fail("open: %s", strerror(errno));
		return 1;
	}
	good_config(&c);
	EXPECT_ERR(ioctl(fd, NMIPROF_IOC_CONFIGURE, &c), EPROTO);
	EXPECT_ERR(ioctl(fd, NMIPROF_IOC_START), EPROTO);
	EXPECT_ERR(ioctl(fd, NMIPROF_IOC_GET_WATCHDOG, &wd), EPROTO);
	EXPECT_ERR(ioctl(fd, NMIPROF_IOC_LOCKUP_READ, small), EPROTO);
	EXPECT_ERR(ioctl(fd, NMIPROF_IOC_LOCKUP_ACK, small), EPROTO);
	EXPECT_MAP_ERR(mmap(NULL, psz, PROT_READ, MAP_SHARED, fd, 0), EPROTO);
	EXPECT_ERR(ioctl(fd, NMIPROF_IOC_HELLO, bad), EFAULT);
	memset(&h, 0, sizeof(h));
	h.magic = 0xdeadbeef;
	h.abi_version = NMIPROF_ABI_VERSION;
	EXPECT_ERR(ioctl(fd, NMIPROF_IOC_HELLO, &h), EPROTO);
	h.magic = NMIPROF_MAGIC;
	h.abi_version = NMIPROF_ABI_VERSION + 1;
	EXPECT_ERR(ioctl(fd, NMIPROF_IOC_HELLO, &h), EPROTO);
	if (h.abi_version != NMIPROF_ABI_VERSION)
		fail("HELLO mismatch did not report the module's version");
	EXPECT_ERR(ioctl(fd, NMIPROF_IOC_START), EPROTO);
	h.abi_version = NMIPROF_ABI_VERSION;
	if (ioctl(fd, NMIPROF_IOC_HELLO, &h)) {
		fail("HELLO: %s", strerror(errno));
		return 1;
	}

	bad_watchdog(fd, h.nr_cpu_ids);
	bad_lockup_queue(fd);

	EXPECT_ERR(ioctl(fd, _IOWR(NMIPROF_IOC_MAGIC, 1, char[10]), small), ENOTTY);
	EXPECT_ERR(ioctl(fd, _IOW(NMIPROF_IOC_MAGIC, 2, int), small), ENOTTY);
	EXPECT_ERR(ioctl(fd, _IO(NMIPROF_IOC_MAGIC, 99)), ENOTTY);
	EXPECT_ERR(ioctl(fd, NMIPROF_IOC_CONFIGURE, bad), EFAULT);
	good_config(&c); c.freq_hz = 0;
	EXPECT_ERR(ioctl(fd, NMIPROF_IOC_CONFIGURE, &c), EINVAL);
	good_config(&c); c.freq_hz = NMIPROF_MAX_FREQ + 1;
	EXPECT_ERR(ioctl(fd, NMIPROF_IOC_CONFIGURE, &c), EINVAL);
	good_config(&c); c.source = 9;
	EXPECT_ERR(ioctl(fd, NMIPROF_IOC_CONFIGURE, &c), EINVAL);
	good_config(&c); c.kstack_depth = NMIPROF_MAX_FRAMES + 1;
	EXPECT_ERR(ioctl(fd, NMIPROF_IOC_CONFIGURE, &c), EINVAL);
	good_config(&c); c.ustack_depth = 100000;
	EXPECT_ERR(ioctl(fd, NMIPROF_IOC_CONFIGURE, &c), EINVAL);
	good_config(&c); c.flags = 1U << 31;
	EXPECT_ERR(ioctl(fd, NMIPROF_IOC_CONFIGURE, &c), EINVAL);
	good_config(&c); c.ustack_bytes = NMIPROF_MAX_USTACK_BYTES + 8;
	EXPECT_ERR(ioctl(fd, NMIPROF_IOC_CONFIGURE, &c), EINVAL);
	good_config(&c); c.cpumask[15] = 1ULL << 63;
	EXPECT_ERR(ioctl(fd, NMIPROF_IOC_CONFIGURE, &c), EINVAL);
	good_config(&c); c.watermark = 0xffffffff;
	EXPECT_ERR(ioctl(fd, NMIPROF_IOC_CONFIGURE, &c), EINVAL);
	good_config(&c); c.__reserved[3] = 1;
	EXPECT_ERR(ioctl(fd, NMIPROF_IOC_CONFIGURE, &c), EINVAL);

	memset(&fr, 0, sizeof(fr));
	fr.type = 0;
	EXPECT_ERR(ioctl(fd, NMIPROF_IOC_GET_FORMAT, &fr), EINVAL);
	fr.type = 77;
	EXPECT_ERR(ioctl(fd, NMIPROF_IOC_GET_FORMAT, &fr), EINVAL);
	fr.type = NMIPROF_REC_SAMPLE;
	fr.len = sizeof(small);
	fr.buf = (uintptr_t)small;
	EXPECT_ERR(ioctl(fd, NMIPROF_IOC_GET_FORMAT, &fr), ENOSPC);
	if (fr.len <= sizeof(small))
		fail("GET_FORMAT ENOSPC did not return the needed length");
	fr.buf = 16;
	EXPECT_ERR(ioctl(fd, NMIPROF_IOC_GET_FORMAT, &fr), EFAULT);
	EXPECT_ERR(ioctl(fd, NMIPROF_IOC_GET_FORMAT, bad), EFAULT);

	memset(&st, 0, sizeof(st));
	st.nr_cpus = 4;
	st.cpus = 16;
	EXPECT_ERR(ioctl(fd, NMIPROF_IOC_GET_STATS, &st), EFAULT);
	EXPECT_ERR(ioctl(fd, NMIPROF_IOC_GET_STATS, bad), EFAULT);
	st.nr_cpus = 0;
	if (ioctl(fd, NMIPROF_IOC_GET_STATS, &st))
		fail("GET_STATS with no cpus: %s", strerror(errno));

	EXPECT_MAP_ERR(mmap(NULL, psz, PROT_READ, MAP_SHARED, fd,
			    NMIPROF_MMAP_OFFSET(4000, 0)), EINVAL);
	EXPECT_MAP_ERR(mmap(NULL, psz, PROT_READ, MAP_SHARED, fd,
			    NMIPROF_MMAP_OFFSET(0, 0) + psz), EINVAL);
	EXPECT_MAP_ERR(mmap(NULL, 2 * psz, PROT_READ, MAP_SHARED, fd,
			    NMIPROF_MMAP_OFFSET(0, NMIPROF_MAP_CTRL)), EINVAL);
	EXPECT_MAP_ERR(mmap(NULL, psz, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd,
			    NMIPROF_MMAP_OFFSET(0, NMIPROF_MAP_CTRL)), EINVAL);
	EXPECT_MAP_ERR(mmap(NULL, h.ring_data_size, PROT_READ | PROT_WRITE,
			    MAP_SHARED, fd,
			    NMIPROF_MMAP_OFFSET(0, NMIPROF_MAP_DATA)), EPERM);
	EXPECT_MAP_ERR(mmap(NULL, h.ring_data_size / 2, PROT_READ, MAP_SHARED,
			    fd, NMIPROF_MMAP_OFFSET(0, NMIPROF_MAP_DATA)), EINVAL);
	{
		void *d = mmap(NULL, h.ring_data_size, PROT_READ, MAP_SHARED, fd,
			       NMIPROF_MMAP_OFFSET(0, NMIPROF_MAP_DATA));

		if (d == MAP_FAILED)
			fail("good data mmap: %s", strerror(errno));
		else
			EXPECT_ERR(mprotect(d, psz, PROT_READ | PROT_WRITE), EACCES);
	}

	/* Running: a second START and a CONFIGURE are refused. */
	good_config(&c);
	if (ioctl(fd, NMIPROF_IOC_CONFIGURE, &c) || ioctl(fd, NMIPROF_IOC_START))
		fail("good CONFIGURE/START: %s", strerror(errno));
	EXPECT_ERR(ioctl(fd, NMIPROF_IOC_START), EBUSY);
	EXPECT_ERR(ioctl(fd, NMIPROF_IOC_CONFIGURE, &c), EBUSY);
	/* Only the file that started the session stops it. */
	{
		struct nmiprof_hello h2;
		int other = open_hello(&h2);

		if (other >= 0) {
			EXPECT_ERR(ioctl(other, NMIPROF_IOC_STOP), EPERM);
			memset(&st, 0, sizeof(st));
			if (ioctl(other, NMIPROF_IOC_GET_STATS, &st) || !st.running)
				fail("another opener's STOP stopped the session");
			close(other);
			memset(&st, 0, sizeof(st));
			if (ioctl(fd, NMIPROF_IOC_GET_STATS, &st) || !st.running)
				fail("another opener's close stopped the session");
		}
	}
	/* A consumer writing garbage tails must not hurt the module. */
	{
		struct nmiprof_ring_ctrl *ctrl;

		ctrl = mmap(NULL, psz, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
			    NMIPROF_MMAP_OFFSET(0, NMIPROF_MAP_CTRL));
		if (ctrl == MAP_FAILED) {
			fail("ctrl mmap: %s", strerror(errno));
		} else {
			for (int i = 0; i < 200; i++) {
				ctrl->tail = (uint64_t)rand() << 20 ^ rand();
				ctrl->head = ~0ULL;
				usleep(1000);
			}
			printf("ok: garbage tails survived\n");
		}
	}
	if (ioctl(fd, NMIPROF_IOC_STOP))
		fail("STOP: %s", strerror(errno));
	close(fd);
	return 0;
}

/* ---------------------------------------------------------------- */

static int parse_source(const char *s)
{
	if (!strcmp(s, "auto"))
		return NMIPROF_SRC_AUTO;
	if (!strcmp(s, "pmu"))
		return NMIPROF_SRC_PMU;
	if (!strcmp(s, "ipi"))
		return NMIPROF_SRC_IPI;
	if (!strcmp(s, "external"))
		return NMIPROF_SRC_EXTERNAL;
	fprintf(stderr, "unknown source %s\n", s);
	exit(2);
}

static const char *source_name(unsigned int s)
{
	static const char *const n[] = { "auto", "pmu", "ipi", "external" };

	return s < 4 ? n[s] : "?";
}

static bool ks_in(const struct ksample *k, const char *sym)
{
	for (int i = 0; i < k->nr; i++) {
		const char *name = sym_find(k->user ? &usyms : &ksyms, k->ip[i]);

		if (name && !strcmp(name, sym))
			return true;
	}
	return false;
}

static void check_expects(void)
{
	/* Reload: a test module may have been loaded during the run. */
	free(ksyms.s);
	memset(&ksyms, 0, sizeof(ksyms));
	load_kallsyms();
	for (int e = 0; e < nr_expects; e++) {
		struct expect *x = &expects[e];
		uint64_t in = 0, all = 0;
		bool seen = false;

		for (size_t i = 0; i < nks; i++) {
			if (ks[i].cpu != x->cpu || !ks_in(&ks[i], x->sym))
				continue;
			if (!seen || ks[i].t < x->first)
				x->first = ks[i].t;
			if (!seen || ks[i].t > x->last)
				x->last = ks[i].t;
			seen = true;
		}
		if (!seen) {
			fail("no sample of %s on cpu %d", x->sym, x->cpu);
			continue;
		}
		for (size_t i = 0; i < nks; i++) {
			if (ks[i].cpu != x->cpu || ks[i].t < x->first ||
			    ks[i].t > x->last)
				continue;
			all++;
			in += ks_in(&ks[i], x->sym);
		}
		printf("cpu %d: %s %llu/%llu samples (%.1f%%) over %.2f s\n",
		       x->cpu, x->sym, (unsigned long long)in,
		       (unsigned long long)all, 100.0 * in / all,
		       (x->last - x->first) / 1e9);
		if (100.0 * in / all < x->pct || all < 10)
			fail("%s: %.1f%% of cpu %d's samples, want >= %.0f%%",
			     x->sym, 100.0 * in / all, x->cpu, x->pct);
	}
}

/* Ring order is time order per CPU, and so is ks[] for one CPU. */
static void check_gap(void)
{
	uint64_t prev = 0, gap = 0, at = 0, n = 0;

	if (gap_cpu < 0)
		return;
	for (size_t i = 0; i < nks; i++) {
		if (ks[i].cpu != gap_cpu)
			continue;
		if (n++ && ks[i].t - prev > gap) {
			gap = ks[i].t - prev;
			at = prev;
		}
		prev = ks[i].t;
	}
	printf("cpu %d: %llu samples, largest gap %.1f ms (after %.3f s)\n",
	       gap_cpu, (unsigned long long)n, gap / 1e6,
	       n ? (at - ks[0].t) / 1e9 : 0.0);
	if (n < 10)
		fail("cpu %d: only %llu samples for -G", gap_cpu,
		     (unsigned long long)n);
	else if (gap / 1e6 >= gap_max_ms)
		fail("cpu %d: %.1f ms without a sample, want < %.0f ms",
		     gap_cpu, gap / 1e6, gap_max_ms);
}

static int hit_cmp(const void *a, const void *b)
{
	const struct hit *x = a, *y = b;

	return x->n < y->n ? 1 : x->n > y->n ? -1 : 0;
}

/* -H: where on each CPU the NMIs found the kernel. */
static void print_top_kips(void)
{
	static struct hit h[MAX_HITS];

	for (int cpu = 0; cpu < nr_cpus; cpu++) {
		uint64_t n = 0;

		memset(h, 0, sizeof(h));
		for (size_t i = 0; i < nkips; i++) {
			const char *name;

			if (kips[i].cpu != cpu)
				continue;
			name = sym_find(&ksyms, kips[i].ip);
			hit(h, name ? name : "?");
			n++;
		}
		if (!n)
			continue;
		qsort(h, MAX_HITS, sizeof(h[0]), hit_cmp);
		printf("cpu %d: kernel-mode samples %llu, top:", cpu,
		       (unsigned long long)n);
		for (int i = 0; i < top_kips && i < MAX_HITS && h[i].n; i++)
			printf(" %s %.1f%%", h[i].name, 100.0 * h[i].n / n);
		printf("\n");
	}
}

/* Each online CPU's NMIs so far, from /proc/interrupts' NMI row. */
static void nmi_counts(uint64_t *n)
{
	char line[4096], *p, *end;
	FILE *f = fopen("/proc/interrupts", "r");

	memset(n, 0, MAX_CPUS * sizeof(*n));
	while (f && fgets(line, sizeof(line), f)) {
		p = line + strspn(line, " ");
		if (strncmp(p, "NMI:", 4))
			continue;
		p += 4;
		for (int cpu = 0; cpu < MAX_CPUS; cpu++, p = end) {
			n[cpu] = strtoull(p, &end, 10);
			if (end == p)
				break;
		}
		break;
	}
	if (f)
		fclose(f);
}

/*
 * -O: only the followed child's samples, and CPUs it never ran on were
 * left alone (@nmi: their NMIs during the session).
 */
static void check_follow(const uint64_t *nmi, double secs, uint32_t freq)
{
	uint64_t most = (uint64_t)(secs * freq / 20);

	printf("follow: child %llu samples, others %llu; NMIs per CPU:",
	       (unsigned long long)child_samples,
	       (unsigned long long)other_samples);
	for (int cpu = 0; cpu < nr_cpus; cpu++)
		printf(" %d:%llu (child samples %llu)", cpu,
		       (unsigned long long)nmi[cpu],
		       (unsigned long long)child_cpus[cpu]);
	printf("\n");
	if (other_samples)
		fail("follow: %llu samples of other tasks",
		     (unsigned long long)other_samples);
	for (int cpu = 0; cpu < nr_cpus; cpu++)
		if (!child_cpus[cpu] && nmi[cpu] > most)
			fail("follow: CPU %d never ran the child but took %llu NMIs, want <= %llu",
			     cpu, (unsigned long long)nmi[cpu],
			     (unsigned long long)most);
}

static bool cpu_named(const struct nmiprof_config *cfg, int cpu)
{
	return cfg->cpumask[cpu / 64] & (1ULL << (cpu % 64));
}

int main(int argc, char **argv)
{
	struct nmiprof_config cfg;
	struct nmiprof_hello h;
	struct nmiprof_stats st;
	struct nmiprof_cpu_stats cs[MAX_CPUS];
	double secs = 3, t_end, max_share = -1, t_start = 0, t_stop;
	bool stall = false, workload = false, want_latched = false;
	bool bad_frames = false, want_external = false, until_cmd = false;
	bool follow = false;
	uint64_t nmi0[MAX_CPUS], nmi1[MAX_CPUS];
	int go[2] = { -1, -1 };
	int cmd_status = 0;
	const char *run_cmd = NULL, *ia32_prog = NULL, *uw_mode = NULL;
	pid_t cmd_pid = 0;
	uint64_t external = 0;
	uint64_t min_samples = 1, total = 0, total_lost = 0, latched = 0;
	int fd, opt, format_type = 0, named_cpus = 0;

	memset(&cfg, 0, sizeof(cfg));
	cfg.freq_hz = 1000;
	cfg.kstack_depth = NMIPROF_DEFAULT_FRAMES;
	cfg.ustack_depth = NMIPROF_DEFAULT_FRAMES;
	cfg.flags = NMIPROF_CF_USER_STACKS;

	while ((opt = getopt(argc, argv, "t:f:s:ek:u:UR:c:W:SwOPm:x:G:r:XH:n:Q:LEF:BT:")) != -1) {
		switch (opt) {
		case 't': secs = atof(optarg); break;
		case 'f': cfg.freq_hz = atoi(optarg); break;
		case 's': cfg.source = parse_source(optarg); break;
		case 'e': cfg.flags |= NMIPROF_CF_EXTERNAL; break;
		case 'k': cfg.kstack_depth = atoi(optarg); break;
		case 'u': cfg.ustack_depth = atoi(optarg); break;
		case 'U': cfg.flags &= ~NMIPROF_CF_USER_STACKS; break;
		case 'R':
			cfg.flags |= NMIPROF_CF_USER_REGS;
			cfg.ustack_bytes = atoi(optarg);
			break;
		case 'c': {
			int c = atoi(optarg);

			if (c < 0 || c >= MAX_CPUS) {
				fprintf(stderr, "bad -c %s\n", optarg);
				return 2;
			}
			cfg.cpumask[c / 64] |= 1ULL << (c % 64);
			named_cpus++;
			break;
		}
		case 'W': cfg.watermark = atoi(optarg); break;
		case 'S': stall = true; break;
		case 'w': workload = true; break;
		case 'O': follow = true; break;
		case 'P': bad_frames = true; break;
		case 'm': ia32_prog = optarg; break;
		case 'r': run_cmd = optarg; break;
		case 'X': until_cmd = true; break;
		case 'H': top_kips = atoi(optarg); break;
		case 'x': {
			struct expect *x = &expects[nr_expects++];

			if (nr_expects > 8 ||
			    sscanf(optarg, "%63[^:]:%lf@%d", x->sym, &x->pct,
				   &x->cpu) != 3) {
				fprintf(stderr, "bad -x %s\n", optarg);
				return 2;
			}
			break;
		}
		case 'G':
			if (sscanf(optarg, "%d:%lf", &gap_cpu, &gap_max_ms) != 2 ||
			    gap_cpu < 0) {
				fprintf(stderr, "bad -G %s\n", optarg);
				return 2;
			}
			break;
		case 'n': min_samples = strtoull(optarg, NULL, 0); break;
		case 'Q': max_share = atof(optarg); break;
		case 'L': want_latched = true; break;
		case 'E': want_external = true; break;
		case 'F': format_type = atoi(optarg); break;
		case 'T': uw_mode = optarg; break;
		case 'B':
			bad_input();
			printf(failures ? "RESULT FAIL: %d bad-input checks\n" :
			       "RESULT PASS\n", failures);
			return !!failures;
		default:
			fprintf(stderr, "see the comment at the top of %s\n",
				__FILE__);
			return 2;
		}
	}

	fd = open_hello(&h);
	if (fd < 0)
		goto out;
	if (format_type) {
		char text[4096];

		if (get_format(fd, format_type, text, sizeof(text)) < 0)
			fail("GET_FORMAT %d", format_type);
		else
			fputs(text, stdout);
		goto out;
	}
	nr_cpus = h.nr_cpu_ids < MAX_CPUS ? h.nr_cpu_ids : MAX_CPUS;
	printf("hello: abi %u, %u cpu ids, ring %llu bytes, nested-NMI safe %u\n",
	       h.abi_version, h.nr_cpu_ids,
	       (unsigned long long)h.ring_data_size, h.nested_nmi_safe);
	check_formats(fd);
	load_kallsyms();
	load_self_syms();
	if (ia32_prog && load_elf32_syms(ia32_prog, &isyms)) {
		fail("-m %s: not a 32-bit static program with symbols",
		     ia32_prog);
		goto out;
	}
	if (map_rings(fd, h.ring_data_size))
		goto out;
	if (follow) {
		/* the child exists before CONFIGURE and works after START */
		char c;

		if (!workload || pipe(go)) {
			fail("-O needs -w");
			goto out;
		}
		child_pid = fork();
		if (child_pid == 0) {
			close(go[1]);
			if (read(go[0], &c, 1) != 1)
				_exit(1);
			np_workload_outer(secs);
			_exit(0);
		}
		close(go[0]);
		cfg.follow_pid = child_pid;
	}
	if (ioctl(fd, NMIPROF_IOC_CONFIGURE, &cfg)) {
		fail("CONFIGURE: %s", strerror(errno));
		goto out;
	}
	if (ioctl(fd, NMIPROF_IOC_START)) {
		fail("START: %s", strerror(errno));
		goto out;
	}
	t_start = mono_s();
	nmi_counts(nmi0);
	if (uw_mode)
		uw_refused(fd);
	if (follow) {
		if (write(go[1], "g", 1) != 1)
			fail("starting the followed child");
		close(go[1]);
	} else if (workload) {
		child_pid = fork();
		if (child_pid == 0) {
			np_workload_outer(secs);
			_exit(0);
		}
		if (uw_mode)
			uw_set_child(fd, child_pid, uw_mode);
	}

	if (bad_frames) {
		fault_pid = fork();
		if (fault_pid == 0) {
			void *page = mmap(NULL, 1 << 20, PROT_READ | PROT_WRITE,
					  MAP_PRIVATE | MAP_ANONYMOUS |
					  MAP_NORESERVE, -1, 0);

			if (page == MAP_FAILED)
				_exit(1);
			np_bad_frame((char *)page + (1 << 16),
				     (char *)page + (1 << 19), secs);
			_exit(0);
		}
	}

	if (ia32_prog) {
		ia32_pid = fork();
		if (ia32_pid == 0) {
			char arg[32];

			snprintf(arg, sizeof(arg), "%g", secs);
			execl(ia32_prog, ia32_prog, arg, (char *)NULL);
			_exit(127);
		}
	}

	if (run_cmd) {
		cmd_pid = fork();
		if (cmd_pid == 0) {
			execl("/bin/sh", "sh", "-c", run_cmd, (char *)NULL);
			_exit(127);
		}
	}

	t_end = now() + secs;
	while (now() < t_end) {
		struct pollfd p = { .fd = fd, .events = POLLIN };

		if (stall) {
			usleep(50000);
			continue;
		}
		poll(&p, 1, 100);
		for (int cpu = 0; cpu < nr_cpus; cpu++)
			if (rings[cpu].mapped)
				consume(cpu);
		if (until_cmd && cmd_pid > 0 &&
		    waitpid(cmd_pid, &cmd_status, WNOHANG) == cmd_pid) {
			cmd_pid = -cmd_pid;	/* reaped */
			break;
		}
	}
	if (ioctl(fd, NMIPROF_IOC_STOP))
		fail("STOP: %s", strerror(errno));
	t_stop = mono_s();
	nmi_counts(nmi1);
	for (int cpu = 0; cpu < MAX_CPUS; cpu++)
		nmi1[cpu] -= nmi0[cpu];
	if (child_pid)
		waitpid(child_pid, NULL, 0);
	if (fault_pid)
		waitpid(fault_pid, NULL, 0);
	if (ia32_pid) {
		int status;

		waitpid(ia32_pid, &status, 0);
		if (!WIFEXITED(status) || WEXITSTATUS(status))
			fail("-m %s did not run (status %#x; ia32 emulation?)",
			     ia32_prog, status);
	}
	if (cmd_pid) {
		if (cmd_pid > 0)
			waitpid(cmd_pid, &cmd_status, 0);
		if (!WIFEXITED(cmd_status) || WEXITSTATUS(cmd_status))
			fail("-r %s failed", run_cmd);
		if (until_cmd && cmd_pid > 0)
			fail("-X: -r %s still ran after -t %g s", run_cmd,
			     secs);
	}
	/* Stopped: everything produced is in the rings now. */
	for (int cpu = 0; cpu < nr_cpus; cpu++)
		if (rings[cpu].mapped)
			consume(cpu);

	memset(&st, 0, sizeof(st));
	st.nr_cpus = nr_cpus;
	st.cpus = (uintptr_t)cs;
	if (ioctl(fd, NMIPROF_IOC_GET_STATS, &st)) {
		fail("GET_STATS: %s", strerror(errno));
		goto out;
	}
	printf("source %s, nested-NMI safe %u, running %u\n",
	       source_name(st.source), st.nested_nmi_safe, st.running);

	for (int cpu = 0; cpu < nr_cpus; cpu++) {
		struct ring *r = &rings[cpu];
		struct nmiprof_cpu_stats *c = &cs[cpu];
		uint64_t p50 = 0, p99 = 0, seen = 0;

		if (!r->mapped)
			continue;
		for (int b = 0; b < NMIPROF_HIST_BUCKETS; b++) {
			seen += c->cost_hist[b];
			if (!p50 && seen * 2 >= c->samples)
				p50 = 1ULL << (b + 7);
			if (!p99 && seen * 100 >= c->samples * 99)
				p99 = 1ULL << (b + 7);
		}
		printf("cpu %d: samples %llu lost %llu (records %llu) pads %llu "
		       "external %llu latched %llu/%llu avg kframes %.1f avg uframes %.1f user %llu "
		       "cost ns min %llu avg %llu max %llu p50< %llu p99< %llu\n",
		       cpu, (unsigned long long)r->samples,
		       (unsigned long long)r->lost,
		       (unsigned long long)r->lost_records,
		       (unsigned long long)r->pads,
		       (unsigned long long)c->external,
		       (unsigned long long)c->latched,
		       (unsigned long long)r->latched_recs,
		       r->samples ? (double)r->kframes / r->samples : 0.0,
		       r->samples ? (double)r->uframes / r->samples : 0.0,
		       (unsigned long long)r->user_mode,
		       (unsigned long long)c->cost_min_ns,
		       (unsigned long long)(c->samples ?
					    c->cost_sum_ns / c->samples : 0),
		       (unsigned long long)c->cost_max_ns,
		       (unsigned long long)p50, (unsigned long long)p99);
		if (max_share >= 0 && c->samples) {
			double share = c->cost_sum_ns / 1e9 /
				       (t_stop - t_start) * 100;

			printf("cpu %d: the handler took %.1f%% of %.2f s, %llu NMIs throttled\n",
			       cpu, share, t_stop - t_start,
			       (unsigned long long)c->throttled);
			if (share > max_share)
				fail("cpu %d: the handler took %.1f%% of the CPU, over %g%%",
				     cpu, share, max_share);
		}
		printf("cpu %d: hist", cpu);
		for (int b = 0; b < NMIPROF_HIST_BUCKETS; b++)
			printf(" %llu", (unsigned long long)c->cost_hist[b]);
		printf("\n");
		/* Exact accounting, three ways. */
		/* produced counts LOST records too (issue 14, section 7) */
		if (r->samples + r->lost_records != r->ctrl->produced)
			fail("cpu %d: consumed %llu + %llu LOST != produced %llu",
			     cpu, (unsigned long long)r->samples,
			     (unsigned long long)r->lost_records,
			     (unsigned long long)r->ctrl->produced);
		if (r->lost != r->ctrl->lost || r->lost != c->lost)
			fail("cpu %d: LOST records say %llu, ctrl %llu, stats %llu",
			     cpu, (unsigned long long)r->lost,
			     (unsigned long long)r->ctrl->lost,
			     (unsigned long long)c->lost);
		if (r->samples + r->lost != c->samples)
			fail("cpu %d: consumed %llu + lost %llu != attempts %llu",
			     cpu, (unsigned long long)r->samples,
			     (unsigned long long)r->lost,
			     (unsigned long long)c->samples);
		if (r->next_seq != r->samples + r->lost)
			fail("cpu %d: seqs 0..%llu not all accounted for", cpu,
			     (unsigned long long)r->next_seq);
		/* A CPU left out of -c is never sampled (its pacer may be). */
		if (!cpu_named(&cfg, cpu) && named_cpus &&
		    !(cfg.flags & NMIPROF_CF_EXTERNAL) &&
		    cfg.source != NMIPROF_SRC_EXTERNAL &&
		    (r->samples || c->samples))
			fail("cpu %d: not named by -c but has %llu samples", cpu,
			     (unsigned long long)c->samples);
		total += r->samples;
		total_lost += r->lost;
		latched += c->latched;
		external += c->external;
	}
	printf("total: samples %llu lost %llu latched %llu external %llu\n",
	       (unsigned long long)total, (unsigned long long)total_lost,
	       (unsigned long long)latched, (unsigned long long)external);
	if (want_external && !external)
		fail("no sample from an unclaimed NMI");
	if (total < min_samples)
		fail("only %llu samples, want >= %llu",
		     (unsigned long long)total, (unsigned long long)min_samples);
	if (stall && !total_lost)
		fail("stalled consumer but nothing was lost");
	if (want_latched && !latched)
		fail("no nested entry was latched");

	if (follow)
		check_follow(nmi1, secs, cfg.freq_hz);
	if (workload) {
		uint64_t a = hits_of(child_hits, "hot_a");
		uint64_t b = hits_of(child_hits, "hot_b");
		double in = child_samples ? 100.0 * (a + b) / child_samples : 0;
		double share = a + b ? 100.0 * a / (a + b) : 0;

		printf("workload: %llu samples, hot_a %llu hot_b %llu (%.1f%% in them, hot_a share %.1f%%), user stacks to np_workload %llu/%llu, to np_workload_outer %llu\n",
		       (unsigned long long)child_samples,
		       (unsigned long long)a, (unsigned long long)b, in, share,
		       (unsigned long long)child_ustack_ok,
		       (unsigned long long)child_ustack_total,
		       (unsigned long long)child_ustack_deep);
		for (int i = 0; i < MAX_HITS && child_hits[i].n; i++)
			printf("  %s %llu\n", child_hits[i].name,
			       (unsigned long long)child_hits[i].n);
		/* A stalled consumer keeps only the first ring-full. */
		if (stall)
			;
		else if (child_samples < 50)
			fail("workload: only %llu samples",
			     (unsigned long long)child_samples);
		else if (in < 90)
			fail("workload: %.1f%% in hot_a/hot_b, want >= 90%%", in);
		else if (share < 60 || share > 90)
			fail("workload: hot_a share %.1f%%, want 60..90%%", share);
		else if (uw_mode && !strcmp(uw_mode, "wrong"))
			;	/* the walk is bounded, not right: below */
		else if (child_ustack_total &&
		    child_ustack_ok * 100 < child_ustack_total * 80 &&
		    (cfg.flags & NMIPROF_CF_USER_STACKS) && h.nested_nmi_safe)
			fail("workload: user stacks reach np_workload in only %llu/%llu",
			     (unsigned long long)child_ustack_ok,
			     (unsigned long long)child_ustack_total);
		else if (child_ustack_total &&
		    child_ustack_deep * 100 < child_ustack_total * 80 &&
		    (cfg.flags & NMIPROF_CF_USER_STACKS) && h.nested_nmi_safe)
			fail("workload: user stacks reach np_workload_outer, %d frames of %d bytes up, in only %llu/%llu",
			     NP_DEEP_LEVELS + 1, NP_DEEP_FRAME,
			     (unsigned long long)child_ustack_deep,
			     (unsigned long long)child_ustack_total);
	}
	if (uw_mode) {
		struct nmiprof_uw_stats u;

		uw_stats(fd, &u);
		if (u.refused < 6)
			fail("unwind: %llu tables refused, want >= 6",
			     (unsigned long long)u.refused);
		if (!strcmp(uw_mode, "wrong") && !u.walks)
			fail("unwind: no table walk with the wrong table");
		if (child_uframes_max > cfg.ustack_depth)
			fail("unwind: %u user frames, more than -u %u",
			     child_uframes_max, cfg.ustack_depth);
	}
	if (bad_frames) {
		printf("bad frames: %llu samples, %llu with a user stack fault\n",
		       (unsigned long long)fault_samples,
		       (unsigned long long)fault_flagged);
		if (!fault_samples)
			fail("bad frames: no samples of the child");
		else if (!fault_flagged && h.nested_nmi_safe &&
			 (cfg.flags & NMIPROF_CF_USER_STACKS))
			fail("bad frames: no NMIPROF_RF_USTACK_FAULT");
	}
	if (ia32_prog) {
		printf("ia32: %llu samples, %llu in ia32_leaf, %llu of those (%.1f%%) walked to main\n",
		       (unsigned long long)ia32_samples,
		       (unsigned long long)ia32_leaf,
		       (unsigned long long)ia32_chain,
		       ia32_leaf ? 100.0 * ia32_chain / ia32_leaf : 0.0);
		if (ia32_leaf < 50)
			fail("ia32: only %llu samples in ia32_leaf",
			     (unsigned long long)ia32_leaf);
		else if (ia32_chain * 100 < ia32_leaf * 80 &&
			 (cfg.flags & NMIPROF_CF_USER_STACKS) && h.nested_nmi_safe)
			fail("ia32: user stacks reach main in only %llu/%llu",
			     (unsigned long long)ia32_chain,
			     (unsigned long long)ia32_leaf);
	}
	if (top_kips)
		print_top_kips();
	check_expects();
	check_gap();
out:
	if (failures)
		printf("RESULT FAIL: %d checks failed\n", failures);
	else
		printf("RESULT PASS\n");
	return !!failures;
}
