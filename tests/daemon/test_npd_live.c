// SPDX-License-Identifier: GPL-2.0
/*
 * The daemon's live ring (daemon/live.c): the time window, filters, sort
 * keys, ordering and truncation of top queries, lost counts, recycling
 * of old seconds, and the (pid, address) symbol cache with its per-pid
 * invalidation; the stacks query (whole stacks per pid, comm and cpu,
 * bounded with a remainder), the stack table's rebuild, the stacks
 * reply through the wire codec and client, and that reply as top's view
 * (rows per pid and comm, children, callers and callees).  A fake symbolizer names addresses and counts calls.
 */
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>

#include "live.h"
#include "topview_ctl.h"

#include "../unit/check.h"

static unsigned int sym_calls;
static char names[64][32];

/*
 * Kernel addresses 0xffff...: "k_<page>"; user addresses: "u<pid>_<page>"
 * in "/bin/p<pid>"; addresses below 0x1000 have no symbol.  The name
 * depends on the page only, so two addresses of a page are one function.
 */
static int fake_symbolize(void *arg, uint32_t pid, uint64_t addr, int kernel,
			  struct np_sym *out)
{
	static char dsos[64][32];
	unsigned int slot = sym_calls++ % 64;

	memset(out, 0, sizeof(*out));
	out->kernel = kernel;
	if (kernel) {
		out->dso = "[kernel.kallsyms]";
		snprintf(names[slot], sizeof(names[slot]), "k_%llx",
			 (unsigned long long)(addr >> 12) & 0xfff);
		out->name = names[slot];
		return 0;
	}
	snprintf(dsos[slot], sizeof(dsos[slot]), "/bin/p%u", pid);
	out->dso = dsos[slot];
	if (addr < 0x1000) {
		out->offset = addr;
		return 1;
	}
	snprintf(names[slot], sizeof(names[slot]), "u%u_%llx", pid,
		 (unsigned long long)(addr >> 12));
	out->name = names[slot];
	out->offset = addr & 0xfff;
	return 0;
}

/* A sample interrupted at ip with no stack (the ip alone is its stack). */
static void sample1(struct npd_live *l, uint64_t sec, uint32_t cpu, uint32_t pid,
		    const char *comm, uint64_t ip, int kernel)
{
	struct np_ev_sample s = {
		.ip = ip, .cpu = cpu, .pid = pid,
		.flags = kernel ? 0 : NMIPROF_RF_USER_MODE,
	};

	snprintf(s.comm, sizeof(s.comm), "%s", comm);
	npd_live_sample(l, sec, &s);
}

/* A sample with kernel frames k[] and user frames u[], innermost first. */
static void sample_stack(struct npd_live *l, uint64_t sec, uint32_t cpu,
			 uint32_t pid, const char *comm, const uint64_t *k,
			 unsigned int nk, const uint64_t *u, unsigned int nu)
{
	struct np_ev_sample s = {
		.ip = nk ? k[0] : u[0], .cpu = cpu, .pid = pid,
		.flags = nk ? 0 : NMIPROF_RF_USER_MODE,
		.nr_kframes = (uint16_t)nk, .nr_uframes = (uint16_t)nu,
		.kframes = k, .uframes = u,
	};

	snprintf(s.comm, sizeof(s.comm), "%s", comm);
	npd_live_sample(l, sec, &s);
}

#define KADDR(page)	(0xffffffff81000000ULL + ((uint64_t)(page) << 12))

static struct np_ctl_top top(struct npd_live *l, uint64_t now, uint32_t secs,
			     int64_t pid, int32_t cpu, const char *comm,
			     enum np_ctl_top_sort sort, uint32_t n)
{
	struct np_ctl_top_query q;
	struct np_ctl_top t;

	np_ctl_top_query_init(&q);
	q.secs = secs;
	q.pid = pid;
	q.cpu = cpu;
	q.sort = sort;
	q.n = n;
	if (comm)
		snprintf(q.comm, sizeof(q.comm), "%s", comm);
	if (npd_live_top(l, now, &q, &t)) {
		fprintf(stderr, "npd_live_top failed\n");
		exit(1);
	}
	return t;
}

static void test_window_and_filters(void)
{
	struct npd_live *l = npd_live_new(10, fake_symbolize, NULL);
	struct np_ctl_top t;

	/*
	 * Seconds 100..109: each second pid 1 "alpha" on cpu 0 hits user
	 * page 0x10 (sec - 99) times, pid 2 "beta" on cpu 1 hits kernel page
	 * 5 twice; second 104 also loses 7 samples.
	 */
	for (uint64_t sec = 100; sec < 110; sec++) {
		for (uint64_t i = 0; i < sec - 99; i++)
			sample1(l, sec, 0, 1, "alpha", 0x10000 + i, 0);
		sample1(l, sec, 1, 2, "beta", KADDR(5), 1);
		sample1(l, sec, 1, 2, "beta", KADDR(5) + 8, 1);
	}
	npd_live_lost(l, 104, 7);

	/* Last 5 seconds: 105..109 -> alpha 6+7+8+9+10 = 40, beta 10. */
	t = top(l, 109, 5, -1, -1, NULL, NP_CTL_SORT_SYM, 20);
	CHECK(t.secs == 5 && t.samples == 50 && t.matched == 50 && t.lost == 0);
	CHECK(t.nr == 2);
	if (t.nr == 2) {
		CHECK(t.e[0].samples == 40 && !strcmp(t.e[0].sym, "u1_10"));
		CHECK(!strcmp(t.e[0].dso, "/bin/p1") && t.e[0].kernel == 0);
		CHECK(t.e[0].pid == -1 && !t.e[0].comm[0]);
		CHECK(t.e[1].samples == 10 && !strcmp(t.e[1].sym, "k_5"));
		CHECK(t.e[1].kernel == 1);
	}
	np_ctl_top_free(&t);

	/* Last 6 seconds include the loss at 104. */
	t = top(l, 109, 6, -1, -1, NULL, NP_CTL_SORT_SYM, 20);
	CHECK(t.lost == 7 && t.samples == 50 + 5 + 2);
	np_ctl_top_free(&t);

	/* More than the ring holds: clamped to the 10 s kept. */
	t = top(l, 109, 3600, -1, -1, NULL, NP_CTL_SORT_SYM, 20);
	CHECK(t.secs == 10 && t.samples == 55 + 20);
	np_ctl_top_free(&t);

	/* Filters. */
	t = top(l, 109, 10, 2, -1, NULL, NP_CTL_SORT_SYM, 20);
	CHECK(t.matched == 20 && t.samples == 75 && t.nr == 1);
	np_ctl_top_free(&t);
	t = top(l, 109, 10, -1, 0, NULL, NP_CTL_SORT_SYM, 20);
	CHECK(t.matched == 55 && t.nr == 1 && !strcmp(t.e[0].sym, "u1_10"));
	np_ctl_top_free(&t);
	t = top(l, 109, 10, -1, -1, "beta", NP_CTL_SORT_SYM, 20);
	CHECK(t.matched == 20 && t.nr == 1 && !strcmp(t.e[0].sym, "k_5"));
	np_ctl_top_free(&t);
	t = top(l, 109, 10, 1, 1, NULL, NP_CTL_SORT_SYM, 20);
	CHECK(t.matched == 0 && t.nr == 0 && t.e == NULL);
	np_ctl_top_free(&t);

	/* Sort keys. */
	t = top(l, 109, 10, -1, -1, NULL, NP_CTL_SORT_PID, 20);
	CHECK(t.nr == 2 && t.e[0].pid == 1 && !strcmp(t.e[0].comm, "alpha") &&
	      t.e[0].samples == 55 && t.e[0].dso == NULL);
	CHECK(t.nr == 2 && t.e[1].pid == 2 && !strcmp(t.e[1].comm, "beta"));
	np_ctl_top_free(&t);
	t = top(l, 109, 10, -1, -1, NULL, NP_CTL_SORT_COMM, 1);
	CHECK(t.nr == 1 && !strcmp(t.e[0].comm, "alpha") && t.e[0].pid == -1);
	CHECK(t.matched == 75);	/* n truncates rows, not the totals */
	np_ctl_top_free(&t);

	/* "now" in the past or future: only seconds inside the window. */
	t = top(l, 102, 2, -1, -1, NULL, NP_CTL_SORT_SYM, 20);
	CHECK(t.secs == 2 && t.samples == 2 + 2 + 3 + 2);
	np_ctl_top_free(&t);
	t = top(l, 200, 10, -1, -1, NULL, NP_CTL_SORT_SYM, 20);
	CHECK(t.secs == 0 && t.samples == 0 && t.nr == 0);
	np_ctl_top_free(&t);

	/* Second 115 recycles 105's slot; a late sample for 95 is dropped. */
	sample1(l, 115, 0, 3, "gamma", 0x20000, 0);
	sample1(l, 95, 0, 3, "gamma", 0x20000, 0);
	t = top(l, 115, 10, -1, -1, NULL, NP_CTL_SORT_SYM, 20);
	/* 106..109 (7+8+9+10 + 4*2) and 115 (1). */
	CHECK(t.secs == 10 && t.samples == 34 + 8 + 1);
	np_ctl_top_free(&t);

	npd_live_free(l);
}

static void test_ties_and_unnamed(void)
{
	struct npd_live *l = npd_live_new(10, fake_symbolize, NULL);
	struct np_ctl_top t, t2;

	/* Three functions with equal counts, in a scrambled order. */
	sample1(l, 10, 0, 7, "x", 0x30000, 0);
	sample1(l, 10, 0, 7, "x", 0x10000, 0);
	sample1(l, 10, 0, 7, "x", 0x20000, 0);
	/* No symbol: a row per address, named object+0xoffset. */
	sample1(l, 10, 0, 7, "x", 0x10, 0);
	sample1(l, 10, 0, 7, "x", 0x20, 0);
	sample1(l, 10, 0, 7, "x", 0x20, 0);
	t = top(l, 10, 1, -1, -1, NULL, NP_CTL_SORT_SYM, 20);
	t2 = top(l, 10, 1, -1, -1, NULL, NP_CTL_SORT_SYM, 20);
	CHECK(t.nr == 5 && t2.nr == 5);
	if (t.nr == 5) {
		CHECK(t.e[0].samples == 2 && t.e[0].sym &&
		      !strcmp(t.e[0].sym, "p7+0x20") && !strcmp(t.e[0].dso, "/bin/p7"));
		CHECK(t.e[4].samples == 1 && t.e[4].sym &&
		      !strcmp(t.e[4].sym, "p7+0x10") && !strcmp(t.e[4].dso, "/bin/p7"));
		for (uint32_t i = 0; i < 5 && i < t2.nr; i++)
			CHECK(t.e[i].samples == t2.e[i].samples &&
			      !strcmp(t.e[i].dso, t2.e[i].dso) &&
			      !strcmp(t.e[i].sym, t2.e[i].sym));
	}
	np_ctl_top_free(&t);
	np_ctl_top_free(&t2);
	npd_live_free(l);
}

static void test_symbol_cache(void)
{
	struct npd_live *l = npd_live_new(10, fake_symbolize, NULL);
	unsigned int calls;
	struct np_ctl_top t;

	sym_calls = 0;
	for (int i = 0; i < 100; i++) {
		sample1(l, 1, 0, 10, "a", 0x40000, 0);
		sample1(l, 1, 0, 11, "b", 0x40000, 0);
		sample1(l, 1, 1, 10, "a", KADDR(1), 1);
		sample1(l, 1, 1, 11, "b", KADDR(1), 1);
	}
	/* (10, u), (11, u) and one kernel address shared by every pid. */
	CHECK(sym_calls == 3);

	/* pid 10 execs: only its addresses are looked up again. */
	npd_live_invalidate(l, 10);
	calls = sym_calls;
	sample1(l, 1, 0, 10, "a", 0x40000, 0);
	sample1(l, 1, 0, 10, "a", 0x40000, 0);
	sample1(l, 1, 1, 10, "a", KADDR(1), 1);
	sample1(l, 1, 0, 11, "b", 0x40000, 0);
	CHECK(sym_calls == calls + 1);

	/* The same address in two processes is two functions. */
	t = top(l, 1, 1, -1, -1, NULL, NP_CTL_SORT_SYM, 20);
	CHECK(t.nr == 3 && t.samples == 404);
	np_ctl_top_free(&t);
	npd_live_free(l);
}

static void test_many_keys(void)
{
	struct npd_live *l = npd_live_new(10, fake_symbolize, NULL);
	struct np_ctl_top t;

	/* 100k distinct (pid, function) keys in one second: bounded, counted. */
	for (uint32_t i = 0; i < 100000; i++)
		sample1(l, 5, 0, 1000 + i, "many", 0x1000 + ((uint64_t)i << 12), 0);
	t = top(l, 5, 1, -1, -1, NULL, NP_CTL_SORT_PID, 1000);
	CHECK(t.samples == 100000);
	CHECK(t.matched >= 1000 && t.matched < 100000);
	CHECK(t.nr == 1000);
	np_ctl_top_free(&t);
	/* the default budget (4 MiB) and the fixed caches (< 1 MiB) */
	CHECK(npd_live_mem(l) < 5u << 20);
	npd_live_free(l);
}

/* Heap bytes in use now (glibc's count; 0 under the sanitizers). */
static size_t heap_used(void)
{
	struct mallinfo2 m = mallinfo2();

	return NP_TEST_SANITIZED ? 0 : m.uordblks + m.hblkhd;	/* + mmap'ed */
}

static void test_memory_budget(void)
{
	size_t heap0 = heap_used();
	struct npd_live *l = npd_live_new(60, fake_symbolize, NULL);
	struct np_ctl_top t;
	size_t heap;

	/*
	 * 20000 processes in one kernel function, a minute long: 75 MiB of
	 * tables unbounded.  The oldest seconds make room: the window
	 * shrinks, and what it still covers is whole.
	 */
	for (uint64_t sec = 1; sec <= 60; sec++)
		for (uint32_t i = 0; i < 20000; i++)
			sample1(l, sec, 0, 1000 + i, "storm", KADDR(2), 1);
	CHECK(npd_live_mem(l) < 5u << 20);
	/* What it counts is what it holds (malloc's overhead aside). */
	heap = heap_used() - heap0;
	CHECK(NP_TEST_SANITIZED ||
	      (npd_live_mem(l) < heap + heap / 16 &&
	       heap < npd_live_mem(l) + npd_live_mem(l) / 16),
	      "%zu bytes counted, %zu held", npd_live_mem(l), heap);
	t = top(l, 60, 60, -1, -1, NULL, NP_CTL_SORT_COMM, 10);
	CHECK(t.secs >= 2 && t.secs < 60);
	CHECK(t.samples == t.secs * 20000ULL && t.matched == t.samples);
	CHECK(t.nr == 1 && t.e[0].samples == t.samples &&
	      !strcmp(t.e[0].comm, "storm"));
	np_ctl_top_free(&t);
	npd_live_free(l);

	/*
	 * New stacks every second (1000 of 4 frames, 4000 new functions):
	 * the stack table passes half the budget again and again; each
	 * rebuild keeps the window's stacks, and drops older seconds when
	 * those alone are too many.  The newest seconds stay whole.
	 */
	l = npd_live_new(60, fake_symbolize, NULL);
	npd_live_set_budget(l, 2u << 20);
	for (uint64_t sec = 1; sec <= 30; sec++)
		for (uint64_t i = 0; i < 1000; i++) {
			uint64_t u[4];

			for (unsigned int f = 0; f < 4; f++)
				u[f] = (sec * 100000 + i * 4 + f) << 12;
			sample_stack(l, sec, 0, 7, "deep", NULL, 0, u, 4);
		}
	CHECK(npd_live_mem(l) < 3u << 20);
	t = top(l, 30, 30, -1, -1, NULL, NP_CTL_SORT_SYM, 5);
	CHECK(t.secs >= 1 && t.secs < 30);
	CHECK(t.samples == t.secs * 1000ULL && t.matched == t.samples);
	np_ctl_top_free(&t);
	npd_live_free(l);
}

static const char *fname(const struct np_ctl_stacks *t, const struct np_ctl_stack *st,
			 unsigned int i)
{
	if (i >= st->nr || st->frames[i] >= t->nr_frames)
		return "?";
	return t->f[st->frames[i]].sym ? t->f[st->frames[i]].sym : "(none)";
}

static struct np_ctl_stacks stacks(struct npd_live *l, uint64_t now, uint32_t secs,
				   int64_t pid, int32_t cpu, const char *comm,
				   uint32_t n)
{
	struct np_ctl_stacks_query q;
	struct np_ctl_stacks t;

	np_ctl_stacks_query_init(&q);
	q.secs = secs;
	q.pid = pid;
	q.cpu = cpu;
	q.n = n;
	if (comm)
		snprintf(q.comm, sizeof(q.comm), "%s", comm);
	if (npd_live_stacks(l, now, &q, &t)) {
		fprintf(stderr, "npd_live_stacks failed\n");
		exit(1);
	}
	return t;
}

/* The three stacks of feed_stacks, checked wherever they come from. */
static void check_three(const struct np_ctl_stacks *t)
{
	const struct np_ctl_stack *s;

	CHECK(t->nr == 3 && t->matched == 11 && t->other == 0 && t->other_stacks == 0);
	if (t->nr != 3)
		return;
	s = &t->s[0];
	CHECK(s->samples == 6 && s->pid == 1 && s->cpu == 0 && !strcmp(s->comm, "alpha"));
	CHECK(s->nr == 3 && !strcmp(fname(t, s, 0), "u1_10") &&
	      !strcmp(fname(t, s, 1), "u1_20") && !strcmp(fname(t, s, 2), "u1_30"));
	s = &t->s[1];
	CHECK(s->samples == 3 && s->pid == 1 && s->cpu == 1 && !strcmp(s->comm, "alpha"));
	CHECK(s->nr == 4 && !strcmp(fname(t, s, 0), "k_5") &&
	      !strcmp(fname(t, s, 1), "k_6") && !strcmp(fname(t, s, 2), "u1_20") &&
	      !strcmp(fname(t, s, 3), "u1_30"));
	if (s->nr == 4) {
		CHECK(t->f[s->frames[0]].kernel && t->f[s->frames[1]].kernel);
		CHECK(!t->f[s->frames[2]].kernel &&
		      !strcmp(t->f[s->frames[0]].dso, "[kernel.kallsyms]") &&
		      !strcmp(t->f[s->frames[2]].dso, "/bin/p1"));
		/* a frame is sent once: the callers shared with stack 0 */
		CHECK(s->frames[2] == t->s[0].frames[1] && s->frames[3] == t->s[0].frames[2]);
	}
	s = &t->s[2];
	CHECK(s->samples == 2 && s->pid == 2 && s->cpu == 1 && !strcmp(s->comm, "beta"));
	CHECK(s->nr == 2 && !strcmp(fname(t, s, 0), "u2_40") && !strcmp(fname(t, s, 1), "u2_30"));
	/* u1_10 u1_20 u1_30 k_5 k_6 u2_40 u2_30 */
	CHECK(t->nr_frames == 7);
}

static void feed_stacks(struct npd_live *l, uint64_t sec)
{
	static const uint64_t u1[] = { 0x10000, 0x20000, 0x30000 };
	static const uint64_t k1[] = { KADDR(5), KADDR(6) };
	static const uint64_t u2[] = { 0x40000, 0x30000 };

	for (int i = 0; i < 6; i++)
		sample_stack(l, sec, 0, 1, "alpha", NULL, 0, u1, 3);
	for (int i = 0; i < 3; i++)
		sample_stack(l, sec, 1, 1, "alpha", k1, 2, u1 + 1, 2);
	for (int i = 0; i < 2; i++)
		sample_stack(l, sec, 1, 2, "beta", NULL, 0, u2, 2);
}

/* t through format -> socket -> np_ctl_stacks, as a client sees it. */
static int roundtrip(const struct np_ctl_stacks *t, const char *raw,
		     struct np_ctl_stacks *out, char *err, size_t errlen)
{
	struct np_ctl_stacks_query q;
	struct np_ctl_client *c;
	struct np_buf b;
	int sv[2], ret;

	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv))
		exit(1);
	np_buf_init(&b);
	if (raw)
		np_ctl_put_word(&b, raw);
	else
		np_ctl_format_stacks_reply(&b, t);
	/* the reply waits in the socket before the request is even sent */
	if (b.oom || write(sv[1], np_buf_str(&b), b.len) != (ssize_t)b.len)
		exit(1);
	np_buf_free(&b);
	c = np_ctl_client_from_fd(sv[0]);
	np_ctl_stacks_query_init(&q);
	ret = np_ctl_stacks(c, &q, out, err, errlen);
	np_ctl_close(c);
	close(sv[1]);
	return ret;
}

static void test_stacks(void)
{
	struct npd_live *l = npd_live_new(10, fake_symbolize, NULL);
	struct np_ctl_stacks t, r;
	struct np_ctl_top tp;
	char err[200];

	feed_stacks(l, 10);
	t = stacks(l, 10, 5, -1, -1, NULL, 100);
	CHECK(t.secs == 1 && t.samples == 11 && t.lost == 0);
	check_three(&t);

	/* The same through the wire and the client. */
	CHECK(roundtrip(&t, NULL, &r, err, sizeof(err)) == 0);
	check_three(&r);
	CHECK(r.secs == 1 && r.samples == 11);
	np_ctl_stacks_free(&r);
	np_ctl_stacks_free(&t);

	/* Server-side filters. */
	t = stacks(l, 10, 5, 2, -1, NULL, 100);
	CHECK(t.nr == 1 && t.matched == 2 && t.samples == 11 && t.s[0].pid == 2);
	np_ctl_stacks_free(&t);
	t = stacks(l, 10, 5, -1, 1, NULL, 100);
	CHECK(t.nr == 2 && t.matched == 5);
	np_ctl_stacks_free(&t);
	t = stacks(l, 10, 5, -1, -1, "alpha", 100);
	CHECK(t.nr == 2 && t.matched == 9);
	np_ctl_stacks_free(&t);

	/* Bounded: the rest is one remainder, and only its frames are sent. */
	t = stacks(l, 10, 5, -1, -1, NULL, 1);
	CHECK(t.nr == 1 && t.matched == 11 && t.other == 5 && t.other_stacks == 2);
	CHECK(t.nr_frames == 3);
	/* alpha's 3 kernel-and-user samples, beta's 2 user-only ones */
	CHECK(t.other_kernel == 3 && t.other_user == 5);
	CHECK(roundtrip(&t, NULL, &r, err, sizeof(err)) == 0);
	CHECK(r.other_kinds && r.other == 5 && r.other_kernel == 3 && r.other_user == 5);
	np_ctl_stacks_free(&r);
	np_ctl_stacks_free(&t);

	/* "top" reads the innermost frame of the same stacks. */
	tp = top(l, 10, 5, -1, -1, NULL, NP_CTL_SORT_SYM, 20);
	CHECK(tp.nr == 3 && tp.e[0].samples == 6 && !strcmp(tp.e[0].sym, "u1_10"));
	CHECK(tp.nr == 3 && tp.e[1].samples == 3 && !strcmp(tp.e[1].sym, "k_5"));
	np_ctl_top_free(&tp);

	/*
	 * A rebuild at every second (budget 1 byte): second 10's stacks are
	 * renumbered, second 11's land on the same ids, nothing is lost.
	 */
	npd_live_set_stack_budget(l, 1);
	feed_stacks(l, 11);
	feed_stacks(l, 12);
	t = stacks(l, 12, 3, -1, -1, NULL, 100);
	CHECK(t.nr == 3 && t.secs == 3 && t.matched == 33);
	if (t.nr == 3) {
		CHECK(t.s[0].samples == 18 && t.s[1].samples == 9 && t.s[2].samples == 6);
		CHECK(!strcmp(fname(&t, &t.s[1], 0), "k_5") &&
		      !strcmp(fname(&t, &t.s[1], 3), "u1_30"));
	}
	np_ctl_stacks_free(&t);

	/* A daemon that does not split other yet. */
	CHECK(roundtrip(NULL, "NMIPROF/1 OK 1\nsecs=1 matched=4 samples=4 lost=0 frames=0 "
			"stacks=0 other=4 other_stacks=1\n", &r, err, sizeof(err)) == 0);
	CHECK(!r.other_kinds && r.other == 4);
	np_ctl_stacks_free(&r);

	/* An old daemon, and a reply naming a frame it never sent. */
	CHECK(roundtrip(NULL, "NMIPROF/1 ERR msg=unknown%20command%20'stacks'%20(status,%20top)\n",
			&r, err, sizeof(err)) == -2);
	CHECK(roundtrip(NULL, "NMIPROF/1 OK 3\nsecs=1 matched=1 samples=1 lost=0 frames=1 "
			"stacks=1 other=0 other_stacks=0\nframe kernel=0 dso=x\n"
			"stack samples=1 pid=1 cpu=0 comm=a frames=0,1\n",
			&r, err, sizeof(err)) == -1);
	CHECK(strstr(err, "malformed stacks reply line 3") != NULL);
	/* a trailing comma, a signed index, a frame count that lies */
	CHECK(roundtrip(NULL, "NMIPROF/1 OK 3\nsecs=1 matched=1 samples=1 lost=0 frames=1 "
			"stacks=1 other=0 other_stacks=0\nframe kernel=0 dso=x\n"
			"stack samples=1 pid=1 cpu=0 comm=a frames=0,\n",
			&r, err, sizeof(err)) == -1);
	CHECK(roundtrip(NULL, "NMIPROF/1 OK 3\nsecs=1 matched=1 samples=1 lost=0 frames=1 "
			"stacks=1 other=0 other_stacks=0\nframe kernel=0 dso=x\n"
			"stack samples=1 pid=1 cpu=0 comm=a frames=+0\n",
			&r, err, sizeof(err)) == -1);
	CHECK(roundtrip(NULL, "NMIPROF/1 OK 3\nsecs=1 matched=1 samples=1 lost=0 frames=2 "
			"stacks=1 other=0 other_stacks=0\nframe kernel=0 dso=x\n"
			"stack samples=1 pid=1 cpu=0 comm=a frames=0\n",
			&r, err, sizeof(err)) == -1);
	CHECK(strstr(err, "malformed stacks summary") != NULL);
	npd_live_free(l);
}

static const struct topview_row *find_row(struct topview *tv, uint32_t pid,
				     const char *comm, const char *sym)
{
	for (size_t i = 0; i < topview_nr_rows(tv); i++) {
		const struct topview_row *r = topview_row(tv, i);

		if (r->pid == pid && !strcmp(r->comm, comm) && !strcmp(r->sym, sym))
			return r;
	}
	return NULL;
}

/* The stacks reply through the client into top's model, as top --daemon. */
static void test_stacks_view(void)
{
	struct npd_live *l = npd_live_new(10, fake_symbolize, NULL);
	struct topview *tv = topview_new();
	const struct topview_row *r;
	struct np_ctl_stacks t, c;
	enum topview_sort o = TOPVIEW_SORT_SELF;
	struct topview_keys k;
	const char *bad;
	struct topview_filter f;
	struct topview_edge e[4];
	char err[200];

	/* rows per process: the cases look rows up by pid */
	if (tv && !topview_keys_parse("comm,pid,dso,sym", &k, &o, &bad))
		topview_set_keys(tv, &k);

	feed_stacks(l, 10);
	t = stacks(l, 10, 5, -1, -1, NULL, 100);
	CHECK(roundtrip(&t, NULL, &c, err, sizeof(err)) == 0);
	CHECK(tv && topview_load_stacks(tv, &c) == 0);
	topview_sort(tv, TOPVIEW_SORT_SELF);
	CHECK(topview_total(tv) == 11);
	/* rows carry pid and comm; the leaf is the top row */
	r = topview_row(tv, 0);
	CHECK(r && r->pid == 1 && !strcmp(r->comm, "alpha") && !strcmp(r->sym, "u1_10") &&
	      r->self == 6 && r->children == 6 && !r->kernel);
	r = find_row(tv, 2, "beta", "u2_40");
	CHECK(r && r->self == 2 && !strcmp(r->dso, "/bin/p2"));
	r = find_row(tv, 1, "alpha", "k_5");
	CHECK(r && r->self == 3 && r->kernel);
	/* children from whole stacks: u1_30 is on 9 of alpha's stacks */
	r = find_row(tv, 1, "alpha", "u1_30");
	CHECK(r && r->self == 0 && r->children == 9);
	/* the call graph: u1_20's callers and callees */
	r = find_row(tv, 1, "alpha", "u1_20");
	CHECK(r && r->children == 9);
	if (r) {
		size_t n = topview_callers(tv, r, e, 4);

		CHECK(n == 1 && !strcmp(e[0].row->sym, "u1_30") && e[0].weight == 9);
		n = topview_callees(tv, r, e, 4);
		CHECK(n == 2 && !strcmp(e[0].row->sym, "u1_10") && e[0].weight == 6 &&
		      !strcmp(e[1].row->sym, "k_6") && e[1].weight == 3);
	}
	np_ctl_stacks_free(&c);
	np_ctl_stacks_free(&t);

	/*
	 * Unnamed code in /bin/p3 at two offsets: two rows, named as report
	 * and in-process top name them, not one "[unknown]" row.
	 */
	{
		static const uint64_t a[] = { 0x100, 0x30000 }, b[] = { 0x200, 0x30000 };
		struct npd_live *l3 = npd_live_new(10, fake_symbolize, NULL);

		for (int i = 0; i < 3; i++)
			sample_stack(l3, 10, 0, 3, "gamma", NULL, 0, a, 2);
		sample_stack(l3, 10, 0, 3, "gamma", NULL, 0, b, 2);
		t = stacks(l3, 10, 5, -1, -1, NULL, 100);
		CHECK(roundtrip(&t, NULL, &c, err, sizeof(err)) == 0);
		CHECK(topview_load_stacks(tv, &c) == 0);
		topview_sort(tv, TOPVIEW_SORT_SELF);
		r = find_row(tv, 3, "gamma", "p3+0x100");
		CHECK(r && r->self == 3 && !strcmp(r->dso, "/bin/p3"));
		r = find_row(tv, 3, "gamma", "p3+0x200");
		CHECK(r && r->self == 1);
		CHECK(!find_row(tv, 3, "gamma", "[unknown]"));
		np_ctl_stacks_free(&c);
		np_ctl_stacks_free(&t);
		npd_live_free(l3);
	}

	/* Bounded reply: the remainder is one row, so shares stay shares. */
	t = stacks(l, 10, 5, -1, -1, NULL, 1);
	CHECK(topview_load_stacks(tv, &t) == 0);
	topview_sort(tv, TOPVIEW_SORT_SELF);
	CHECK(topview_total(tv) == 11);
	r = find_row(tv, 0, "[other]", "[other stacks]");
	CHECK(r && r->self == 5);

	/*
	 * Kernel frames only: the top stack (alpha, user only) drops out,
	 * and the remainder counts just its 3 samples with kernel frames,
	 * as a kernel row: 3 samples in all, not 0 (row gone) or 5.
	 */
	f = *topview_filter(tv);
	f.user = 0;
	CHECK(topview_set_filter(tv, &f) == 0 && topview_load_stacks(tv, &t) == 0);
	topview_sort(tv, TOPVIEW_SORT_SELF);
	CHECK(topview_total(tv) == 3);
	r = find_row(tv, 0, "[other]", "[other stacks]");
	CHECK(r && r->self == 3 && r->kernel);
	/* user frames only: 6 + the 5 remainder samples with user frames */
	f.user = 1;
	f.kernel = 0;
	CHECK(topview_set_filter(tv, &f) == 0 && topview_load_stacks(tv, &t) == 0);
	topview_sort(tv, TOPVIEW_SORT_SELF);
	CHECK(topview_total(tv) == 11);
	r = find_row(tv, 0, "[other]", "[other stacks]");
	CHECK(r && r->self == 5 && !r->kernel);
	np_ctl_stacks_free(&t);
	topview_free(tv);
	npd_live_free(l);
}

static const struct np_test_case cases[] = {
	NP_CASE(test_window_and_filters),
	NP_CASE(test_ties_and_unnamed),
	NP_CASE(test_symbol_cache),
	NP_CASE(test_many_keys),
	NP_CASE(test_memory_budget),
	NP_CASE(test_stacks),
	NP_CASE(test_stacks_view),
	{ 0 }
};

int main(int argc, char **argv)
{
	return np_test_main(argc, argv, cases);
}
