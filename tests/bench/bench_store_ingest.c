// SPDX-License-Identifier: GPL-2.0
/*
 * Drain + aggregate throughput on one core.
 *
 * An in-memory nmiprof ring (ABI sample records, 20-40 frames, a few
 * thousand distinct stacks with a skewed popularity) is drained through
 * the real consumer path: lib/backend/kring.c + lib/backend/recfmt.c (libtraceevent
 * field offsets, as with nmiprof.ko) -> np_agg_sample() (raw-stack cache,
 * stack table, per-slice counts).  Rates are per CPU-second of this
 * thread.  Figures, not assertions.
 *
 *   bench_store_ingest [distinct_stacks] [total_samples] [deep]
 *
 * "deep": the shape of bench_kmod's workload instead (tests/progs/deep):
 * a few processes busy 44 user frames deep, interrupted in many kernel
 * paths, so distinct raw stacks share their user part.
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "agg.h"
#include "np_recfmt.h"
#include "np_kring.h"

#define DATA_SIZE	(32u << 20)

static uint64_t rng(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

/*
 * Both clocks: thread CPU time (what one core can do; the shared machine
 * makes wall time pessimistic) and wall time (includes being preempted
 * and, in a VM, possibly steal).
 */
struct stamp {
	double cpu, wall;
};

static struct stamp now_s(void)
{
	struct timespec c, w;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c);
	clock_gettime(CLOCK_MONOTONIC, &w);
	return (struct stamp){ c.tv_sec + c.tv_nsec / 1e9,
			       w.tv_sec + w.tv_nsec / 1e9 };
}

static void report(const char *what, struct stamp t0, double n)
{
	struct stamp t1 = now_s();

	printf("%-40s %6.2f M samples/s per CPU-second, %6.2f M/s wall\n",
	       what, n / (t1.cpu - t0.cpu) / 1e6, n / (t1.wall - t0.wall) / 1e6);
}

/* The ABI sample layout as format text, the way kmod/format.c emits it. */
static const char *sample_format(void)
{
	static char buf[4096];
	int n = snprintf(buf, sizeof(buf), "name: sample\nID: %d\nformat:\n",
			 NMIPROF_REC_SAMPLE);
#define FLD(decl, field, size) \
	n += snprintf(buf + n, sizeof(buf) - n, \
		      "\tfield:%s;\toffset:%zu;\tsize:%d;\tsigned:0;\n", decl, \
		      offsetof(struct nmiprof_sample, field), size)
	FLD("unsigned short common_type", hdr.common_type, 2);
	FLD("unsigned short common_flags", hdr.common_flags, 2);
	FLD("unsigned int common_size", hdr.common_size, 4);
	n += snprintf(buf + n, sizeof(buf) - n, "\n");
	FLD("u64 seq", seq, 8);
	FLD("u64 time_ns", time_ns, 8);
	FLD("u64 ip", ip, 8);
	FLD("u32 cpu", cpu, 4);
	FLD("u32 pid", pid, 4);
	FLD("u32 tid", tid, 4);
	FLD("u16 nr_kframes", nr_kframes, 2);
	FLD("u16 nr_uframes", nr_uframes, 2);
	FLD("char comm[16]", comm, 16);
	FLD("__data_loc u64[] kstack", kstack, 4);
	FLD("__data_loc u64[] ustack", ustack, 4);
	FLD("__data_loc u64[] uregs", uregs, 4);
	FLD("__data_loc u8[] ustack_raw", ustack_raw, 4);
	snprintf(buf + n, sizeof(buf) - n,
		 "\nprint fmt: \"cpu=%%u pid=%%u\", REC->cpu, REC->pid\n");
	return buf;
}

/* Stack templates: a call tree, so stacks share callers as real ones do. */
struct tmpl {
	uint32_t pid, nk, nu;
	char comm[16];
	uint64_t k[16], u[44];
};

static void make_tmpls(struct tmpl *t, uint32_t n, uint64_t *seed)
{
	for (uint32_t i = 0; i < n; i++) {
		uint32_t proc = (uint32_t)(rng(seed) % 40);
		uint64_t path = rng(seed);

		t[i].pid = 1000 + proc;
		snprintf(t[i].comm, sizeof(t[i].comm), "worker-%u", proc);
		t[i].nk = 5 + (uint32_t)(rng(seed) % 11);	/* 5..15 */
		t[i].nu = 15 + (uint32_t)(rng(seed) % 11);	/* 15..25 */
		/* outermost frames fixed per process, inner ones per path:
		 * fan-out of 4 per level */
		for (uint32_t j = 0; j < t[i].nu; j++) {
			uint32_t depth = t[i].nu - 1 - j;	/* 0 = outermost */
			uint64_t branch = depth < 6 ? 0 : (path >> (2 * (depth - 6))) & 3;

			t[i].u[j] = 0x555555554000ULL + proc * 0x100000ULL +
				    depth * 0x1000 + branch * 0x40 + 0x13;
		}
		for (uint32_t j = 0; j < t[i].nk; j++) {
			uint32_t depth = t[i].nk - 1 - j;
			uint64_t branch = depth < 3 ? 0 : (path >> (40 + 2 * depth)) & 3;

			t[i].k[j] = 0xffffffff81000000ULL + depth * 0x10000 +
				    branch * 0x80 + 0x21;
		}
	}
}

/*
 * bench_kmod's shape: 4 processes 44 frames deep (the innermost frame
 * one of 6 loop addresses), half the samples in user mode, the other
 * half in one of many kernel paths 3..15 frames deep.
 */
static void make_deep_tmpls(struct tmpl *t, uint32_t n, uint64_t *seed)
{
	for (uint32_t i = 0; i < n; i++) {
		uint32_t proc = i % 4;
		uint64_t path = rng(seed);

		t[i].pid = 2000 + proc;
		snprintf(t[i].comm, sizeof(t[i].comm), "deep");
		t[i].nu = 44;
		t[i].u[0] = 0x555555554000ULL + 0x2c0 + 4 * (i / 4 % 6);
		t[i].u[1] = 0x555555554000ULL + 0x30d;
		for (uint32_t j = 2; j < 43; j++)
			t[i].u[j] = 0x555555554000ULL + 0x32c;
		t[i].u[43] = 0x7ffff7c29d90ULL;
		t[i].nk = i % 2 ? 3 + (uint32_t)(rng(seed) % 13) : 0;
		for (uint32_t j = 0; j < t[i].nk; j++) {
			uint32_t depth = t[i].nk - 1 - j;
			uint64_t branch = depth < 2 ? 0 : (path >> (2 * depth)) & 3;

			t[i].k[j] = 0xffffffff81000000ULL + depth * 0x10000 +
				    branch * 0x80 + 0x21;
		}
	}
}

/* Fill the ring with samples; returns bytes written (head). */
static uint64_t fill_ring(uint8_t *data, const struct tmpl *t, uint32_t nt,
			  uint64_t *seed, uint32_t *nrec)
{
	uint64_t off = 0;

	*nrec = 0;
	for (;;) {
		/* skewed popularity: square of a uniform variate */
		double x = (rng(seed) >> 11) * (1.0 / 9007199254740992.0);
		const struct tmpl *s = &t[(uint32_t)(x * x * nt)];
		uint32_t size = sizeof(struct nmiprof_sample) + (s->nk + s->nu) * 8;
		struct nmiprof_sample *r = (void *)(data + off);

		size = (size + 7) & ~7u;
		if (off + size > DATA_SIZE)
			break;
		memset(r, 0, sizeof(*r));
		r->hdr.common_type = NMIPROF_REC_SAMPLE;
		r->hdr.common_flags = NMIPROF_RF_IN_NMI;
		r->hdr.common_size = size;
		r->seq = *nrec;
		r->time_ns = *nrec * 1000ULL;
		r->ip = s->k[0];
		/* a task stays on its CPU for a while, then migrates */
		r->cpu = (s->pid + (*nrec >> 14)) % 8;
		r->pid = r->tid = s->pid;
		r->nr_kframes = s->nk;
		r->nr_uframes = s->nu;
		memcpy(r->comm, s->comm, 16);
		r->kstack = NMIPROF_LOC(sizeof(*r), s->nk * 8);
		r->ustack = NMIPROF_LOC(sizeof(*r) + s->nk * 8, s->nu * 8);
		memcpy((uint8_t *)r + sizeof(*r), s->k, s->nk * 8);
		memcpy((uint8_t *)r + sizeof(*r) + s->nk * 8, s->u, s->nu * 8);
		off += size;
		(*nrec)++;
	}
	return off;
}

static int sym(void *arg, uint32_t pid, uint64_t addr, int kernel,
	       struct np_sym *out)
{
	static char name[32];

	snprintf(name, sizeof(name), "func_%llx", (unsigned long long)(addr >> 6));
	out->dso = kernel ? "[kernel.kallsyms]" : "/usr/bin/worker";
	out->name = name;
	out->offset = addr & 63;
	return 0;
}

static int to_agg(const struct np_event *ev, void *arg)
{
	if (ev->type == NP_EV_SAMPLE)
		np_agg_sample(arg, &ev->sample);
	return 0;
}

static int nop(const struct np_event *ev, void *arg)
{
	(*(uint64_t *)arg) += ev->type == NP_EV_SAMPLE ? ev->sample.nr_kframes : 0;
	return 0;
}

static long rss_kb(void)
{
	FILE *f = fopen("/proc/self/status", "r");
	char line[256];
	long kb = -1;

	while (f && fgets(line, sizeof(line), f))
		if (!strncmp(line, "VmRSS:", 6))
			kb = atol(line + 6);
	if (f)
		fclose(f);
	return kb;
}

int main(int argc, char **argv)
{
	uint32_t nt = argc > 1 ? (uint32_t)atoi(argv[1]) : 4000;
	uint64_t total = argc > 2 ? strtoull(argv[2], NULL, 0) : 4000000;
	struct nmiprof_ring_ctrl *ctrl = aligned_alloc(4096, 4096);
	uint8_t *data = aligned_alloc(4096, DATA_SIZE);
	struct tmpl *t = calloc(nt, sizeof(*t));
	struct np_recfmt *fmt = np_recfmt_new();
	uint64_t seed = 7, head, sink = 0;
	struct np_agg_opts ao;
	struct np_agg *a;
	struct np_kring r;
	uint32_t nrec, passes;
	char err[256];
	struct stamp t0;

	if (!ctrl || !data || !t || !fmt) {
		fprintf(stderr, "out of memory\n");
		return 1;
	}
	const char *ft = sample_format();

	if (np_recfmt_add(fmt, ft, strlen(ft), err, sizeof(err))) {
		fprintf(stderr, "format: %s\n", err);
		return 1;
	}
	if (argc > 3 && !strcmp(argv[3], "deep"))
		make_deep_tmpls(t, nt, &seed);
	else
		make_tmpls(t, nt, &seed);
	head = fill_ring(data, t, nt, &seed, &nrec);
	passes = (uint32_t)((total + nrec - 1) / nrec);
	memset(ctrl, 0, 4096);
	ctrl->magic = NMIPROF_MAGIC;
	ctrl->abi_version = NMIPROF_ABI_VERSION;
	ctrl->data_size = DATA_SIZE;
	if (np_kring_init(&r, ctrl, data, DATA_SIZE, 0, err, sizeof(err))) {
		fprintf(stderr, "ring: %s\n", err);
		return 1;
	}
	printf("ring: %u records, %.1f MiB, avg %.0f B/record, %u stack templates "
	       "(%s), %u passes\n", nrec, head / 1048576.0,
	       (double)head / nrec, nt, argc > 3 && !strcmp(argv[3], "deep") ?
	       "44 user frames, 0 or 3-15 kernel" : "20-40 frames", passes);

#define DRAIN(fn, arg) do { \
		int stopped; \
		ctrl->tail = 0; \
		__atomic_store_n(&ctrl->head, head, __ATOMIC_RELEASE); \
		np_kring_drain(&r, fmt, fn, arg, &stopped); \
	} while (0)

	/* 1: decode only */
	t0 = now_s();
	for (uint32_t p = 0; p < passes; p++)
		DRAIN(nop, &sink);
	report("decode only (kring + np_recfmt):", t0, passes * (double)nrec);

	np_agg_opts_init(&ao);
	ao.symbolize = sym;
	a = np_agg_new(&ao);
	/* 2: steady state inside one slice (raw cache warm after pass 0) */
	DRAIN(to_agg, a);
	t0 = now_s();
	for (uint32_t p = 0; p < passes; p++)
		DRAIN(to_agg, a);
	report("decode + aggregate, within a slice:", t0, passes * (double)nrec);
	{
		uint32_t ne;

		np_agg_entries(a, &ne);
		printf("  (%u keys, %u stack nodes, agg %.1f MiB, RSS %ld MiB)\n",
		       ne,
		       np_stacktab_nr_nodes(np_agg_stacktab(a)),
		       np_agg_mem(a) / 1048576.0, rss_kb() / 1024);
	}
	/* 3: a new slice every pass: every stack re-symbolized once */
	t0 = now_s();
	for (uint32_t p = 0; p < passes; p++) {
		np_agg_reset(a);
		DRAIN(to_agg, a);
	}
	report("decode + aggregate, new slice per pass:", t0, passes * (double)nrec);
	printf("  (slice = %u samples; each new slice re-symbolizes its %u "
	       "stacks through a snprintf fake symbolizer)\n", nrec, nt);
	if (r.corrupt)
		printf("WARNING: %llu corrupt records\n", (unsigned long long)r.corrupt);
	np_agg_free(a);
	np_recfmt_free(fmt);
	free(t);
	free(data);
	free(ctrl);
	return sink == 42;	/* keep the decode-only loop observable */
}
