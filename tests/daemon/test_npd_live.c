// SPDX-License-Identifier: GPL-2.0
/*
 * The daemon's live ring (daemon/live.c): the time window, filters, sort
 * keys, ordering and truncation of top queries, lost counts, recycling
 * of old seconds, and the (pid, address) symbol cache with its per-pid
 * invalidation.  A fake symbolizer names addresses and counts calls.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "live.h"

static int failures;

#define CHECK(cond) do {						\
	if (!(cond)) {							\
		fprintf(stderr, "%s:%d: CHECK failed: %s\n",		\
			__FILE__, __LINE__, #cond);			\
		failures++;						\
	}								\
} while (0)

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
			npd_live_sample(l, sec, 0, 1, "alpha", 0x10000 + i, 0);
		npd_live_sample(l, sec, 1, 2, "beta", KADDR(5), 1);
		npd_live_sample(l, sec, 1, 2, "beta", KADDR(5) + 8, 1);
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
	npd_live_sample(l, 115, 0, 3, "gamma", 0x20000, 0);
	npd_live_sample(l, 95, 0, 3, "gamma", 0x20000, 0);
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
	npd_live_sample(l, 10, 0, 7, "x", 0x30000, 0);
	npd_live_sample(l, 10, 0, 7, "x", 0x10000, 0);
	npd_live_sample(l, 10, 0, 7, "x", 0x20000, 0);
	/* No symbol: grouped by dso, reported without sym. */
	npd_live_sample(l, 10, 0, 7, "x", 0x10, 0);
	npd_live_sample(l, 10, 0, 7, "x", 0x20, 0);
	t = top(l, 10, 1, -1, -1, NULL, NP_CTL_SORT_SYM, 20);
	t2 = top(l, 10, 1, -1, -1, NULL, NP_CTL_SORT_SYM, 20);
	CHECK(t.nr == 4 && t2.nr == 4);
	if (t.nr == 4) {
		CHECK(t.e[0].samples == 2 && t.e[0].sym == NULL &&
		      !strcmp(t.e[0].dso, "/bin/p7"));
		for (uint32_t i = 0; i < 4 && i < t2.nr; i++)
			CHECK(t.e[i].samples == t2.e[i].samples &&
			      !strcmp(t.e[i].dso, t2.e[i].dso) &&
			      (t.e[i].sym == t2.e[i].sym ||
			       !strcmp(t.e[i].sym, t2.e[i].sym)));
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
		npd_live_sample(l, 1, 0, 10, "a", 0x40000, 0);
		npd_live_sample(l, 1, 0, 11, "b", 0x40000, 0);
		npd_live_sample(l, 1, 1, 10, "a", KADDR(1), 1);
		npd_live_sample(l, 1, 1, 11, "b", KADDR(1), 1);
	}
	/* (10, u), (11, u) and one kernel address shared by every pid. */
	CHECK(sym_calls == 3);

	/* pid 10 execs: only its addresses are looked up again. */
	npd_live_invalidate(l, 10);
	calls = sym_calls;
	npd_live_sample(l, 1, 0, 10, "a", 0x40000, 0);
	npd_live_sample(l, 1, 0, 10, "a", 0x40000, 0);
	npd_live_sample(l, 1, 1, 10, "a", KADDR(1), 1);
	npd_live_sample(l, 1, 0, 11, "b", 0x40000, 0);
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
		npd_live_sample(l, 5, 0, 1000 + i, "many", 0x1000 + ((uint64_t)i << 12), 0);
	t = top(l, 5, 1, -1, -1, NULL, NP_CTL_SORT_PID, 1000);
	CHECK(t.samples == 100000);
	CHECK(t.matched >= 65536 && t.matched < 100000);
	CHECK(t.nr == 1000);
	np_ctl_top_free(&t);
	CHECK(npd_live_mem(l) < 64u << 20);
	npd_live_free(l);
}

static void test_memory_budget(void)
{
	struct npd_live *l = npd_live_new(60, fake_symbolize, NULL);
	struct np_ctl_top t;

	/* 20000 keys a second for a minute: 120 MiB of tables uncapped. */
	for (uint64_t sec = 1; sec <= 60; sec++)
		for (uint32_t i = 0; i < 20000; i++)
			npd_live_sample(l, sec, 0, 1000 + i, "storm", 0x2000, 0);
	CHECK(npd_live_mem(l) < (32u + 8u) << 20);
	t = top(l, 60, 60, -1, -1, NULL, NP_CTL_SORT_COMM, 10);
	CHECK(t.samples == 60 * 20000);
	CHECK(t.matched > 0 && t.matched < t.samples);
	np_ctl_top_free(&t);
	npd_live_free(l);
}

int main(void)
{
	test_window_and_filters();
	test_ties_and_unnamed();
	test_symbol_cache();
	test_many_keys();
	test_memory_budget();
	if (failures) {
		fprintf(stderr, "test_npd_live: %d check(s) failed\n", failures);
		return 1;
	}
	printf("test_npd_live: all checks passed\n");
	return 0;
}
