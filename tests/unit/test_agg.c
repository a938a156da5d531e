// SPDX-License-Identifier: GPL-2.0
/* Aggregator: keys, raw-stack cache, symbolize-once, reset. */
#include <stdio.h>
#include <string.h>
#include "agg.h"

#include "check.h"

struct symctx {
	int calls;
	char name[64];
};

/* Names each address "fn_<addr>" in "/bin/p<pid>" (kernel: one dso). */
static int fake_sym(void *arg, uint32_t pid, uint64_t addr, int kernel,
		    struct np_sym *out)
{
	struct symctx *c = arg;
	static char dso[32];

	c->calls++;
	snprintf(c->name, sizeof(c->name), "fn_%llx", (unsigned long long)addr);
	snprintf(dso, sizeof(dso), "/bin/p%u", pid);
	out->dso = kernel ? "[kernel.kallsyms]" : dso;
	out->name = c->name;
	out->offset = addr & 0xf;
	out->kernel = kernel;
	return 0;
}

static struct np_ev_sample mk(uint32_t pid, uint32_t cpu, const char *comm,
			   const uint64_t *k, int nk, const uint64_t *u, int nu)
{
	struct np_ev_sample s = { 0 };

	s.pid = s.tid = pid;
	s.cpu = cpu;
	snprintf(s.comm, sizeof(s.comm), "%s", comm);
	s.kframes = k;
	s.nr_kframes = nk;
	s.uframes = u;
	s.nr_uframes = nu;
	s.ip = nk ? k[0] : nu ? u[0] : 0;
	return s;
}

static uint64_t count_of(struct np_agg *a, uint32_t pid, uint32_t cpu,
			 const char *comm, uint32_t *stack)
{
	const struct np_agg_entry *e;
	uint32_t n;
	uint64_t sum = 0;

	e = np_agg_entries(a, &n);
	for (uint32_t i = 0; i < n; i++)
		if (e[i].pid == pid && e[i].cpu == cpu &&
		    !strcmp(np_stacktab_str_get(np_agg_stacktab(a), e[i].comm),
			    comm)) {
			sum += e[i].count;
			if (stack)
				*stack = e[i].stack;
		}
	return sum;
}

static void test_basic(void)
{
	uint64_t k[] = { 0xffffffff81000010, 0xffffffff81000020 };
	uint64_t u[] = { 0x401010, 0x402020, 0x403030 };
	uint64_t u2[] = { 0x401011, 0x402020, 0x403030 };
	struct symctx ctx = { 0 };
	struct np_agg_opts o;
	struct np_agg *a;
	struct np_ev_sample s;
	const struct np_sym *fr[8];
	uint32_t stack = 0;

	np_agg_opts_init(&o);
	o.symbolize = fake_sym;
	o.symbolize_arg = &ctx;
	a = np_agg_new(&o);
	s = mk(10, 0, "app", k, 2, u, 3);
	for (int i = 0; i < 100; i++)
		CHECK(np_agg_sample(a, &s) == 0);
	CHECK(ctx.calls == 5);	/* symbolized once, not 100 times */
	s.cpu = 1;
	CHECK(np_agg_sample(a, &s) == 0);
	CHECK(ctx.calls == 5);	/* cpu is not part of the raw key */
	CHECK(count_of(a, 10, 0, "app", &stack) == 100);
	CHECK(count_of(a, 10, 1, "app", NULL) == 1);
	CHECK(np_stacktab_walk(np_agg_stacktab(a), stack, fr, 8) == 5);
	CHECK(fr[0]->kernel && !strcmp(fr[0]->name, "fn_ffffffff81000010"));
	CHECK(!fr[2]->kernel && !strcmp(fr[2]->name, "fn_401010"));
	CHECK(!strcmp(fr[4]->dso, "/bin/p10"));

	/* different comm, different pid, different stack */
	s = mk(10, 0, "app-worker", k, 2, u, 3);
	np_agg_sample(a, &s);
	s = mk(11, 0, "app", k, 2, u, 3);
	np_agg_sample(a, &s);
	s = mk(10, 0, "app", k, 2, u2, 3);
	np_agg_sample(a, &s);
	CHECK(count_of(a, 10, 0, "app-worker", NULL) == 1);
	CHECK(count_of(a, 11, 0, "app", NULL) == 1);
	CHECK(count_of(a, 10, 0, "app", NULL) == 101);
	CHECK(np_agg_samples(a) == 104);
	{
		uint32_t n;

		np_agg_entries(a, &n);
		CHECK(n == 5);
	}
	/* stack-less sample keeps its ip */
	s = mk(12, 0, "idle", NULL, 0, NULL, 0);
	s.ip = 0xffffffff81000099;
	np_agg_sample(a, &s);
	CHECK(count_of(a, 12, 0, "idle", &stack) == 1);
	CHECK(np_stacktab_depth(np_agg_stacktab(a), stack) == 1);
	/* ... its own ip: stack-less samples (--no-user-stacks in user
	 * mode) of one process at two ips are two stacks */
	s.ip = 0xffffffff810000aa;
	np_agg_sample(a, &s);
	np_agg_sample(a, &s);
	{
		const struct np_agg_entry *e;
		uint32_t n, seen = 0;

		e = np_agg_entries(a, &n);
		for (uint32_t i = 0; i < n; i++) {
			if (e[i].pid != 12)
				continue;
			CHECK(np_stacktab_walk(np_agg_stacktab(a), e[i].stack, fr, 8) == 1);
			if (!strcmp(fr[0]->name, "fn_ffffffff81000099")) {
				seen |= 1;
				CHECK(e[i].count == 1);
			}
			if (!strcmp(fr[0]->name, "fn_ffffffff810000aa")) {
				seen |= 2;
				CHECK(e[i].count == 2);
			}
		}
		CHECK(seen == 3);
	}

	/* reset: counts gone, raw cache dropped -> symbolized again */
	np_agg_lost(a, 7);
	CHECK(np_agg_lost_count(a) == 7);
	np_agg_reset(a);
	CHECK(np_agg_samples(a) == 0 && np_agg_lost_count(a) == 0);
	ctx.calls = 0;
	s = mk(10, 0, "app", k, 2, u, 3);
	np_agg_sample(a, &s);
	CHECK(ctx.calls == 5);
	CHECK(count_of(a, 10, 0, "app", NULL) == 1);
	np_agg_free(a);
}

/*
 * A new raw stack symbolizes only the addresses not seen in this slice
 * for the same (pid, comm); kernel addresses are shared by every pid.
 */
static void test_frame_memo(void)
{
	uint64_t k[] = { 0xffffffff81000010, 0xffffffff81000020 };
	uint64_t u[] = { 0x401010, 0x402020, 0x403030 };
	uint64_t u2[] = { 0x401011, 0x402020, 0x403030 };
	struct symctx ctx = { 0 };
	const struct np_sym *fr[8];
	struct np_agg_opts o;
	struct np_agg *a;
	struct np_ev_sample s;
	uint32_t stack = 0;

	np_agg_opts_init(&o);
	o.symbolize = fake_sym;
	o.symbolize_arg = &ctx;
	a = np_agg_new(&o);
	s = mk(20, 0, "m", k, 2, u, 3);
	np_agg_sample(a, &s);
	CHECK(ctx.calls == 5);
	s = mk(20, 0, "m", k, 2, u2, 3);	/* one new address */
	np_agg_sample(a, &s);
	CHECK(ctx.calls == 6);
	s = mk(21, 0, "m", k, 2, u, 3);	/* another process: its own names */
	np_agg_sample(a, &s);
	CHECK(ctx.calls == 9);
	CHECK(count_of(a, 21, 0, "m", &stack) == 1);
	CHECK(np_stacktab_walk(np_agg_stacktab(a), stack, fr, 8) == 5);
	CHECK(!strcmp(fr[4]->dso, "/bin/p21") && !strcmp(fr[2]->dso, "/bin/p21"));
	CHECK(!strcmp(fr[0]->dso, "[kernel.kallsyms]"));
	s = mk(20, 0, "m2", k, 2, u, 3);	/* same pid after an exec */
	np_agg_sample(a, &s);
	CHECK(ctx.calls == 12);
	np_agg_reset(a);
	s = mk(20, 0, "m", k, 2, u, 3);
	np_agg_sample(a, &s);
	CHECK(ctx.calls == 17);
	CHECK(count_of(a, 20, 0, "m", &stack) == 1);
	CHECK(np_stacktab_walk(np_agg_stacktab(a), stack, fr, 8) == 5);
	CHECK(!strcmp(fr[2]->name, "fn_401010") && !strcmp(fr[4]->dso, "/bin/p20"));
	/* more processes than memo slots, one address: every one keeps its
	 * own name even where two of them share a slot */
	for (uint32_t pid = 1000; pid < 7000; pid++) {
		char want[32];
		int bad = 0;

		s = mk(pid, 0, "m", NULL, 0, u, 1);
		np_agg_sample(a, &s);
		snprintf(want, sizeof(want), "/bin/p%u", pid);
		if (count_of(a, pid, 0, "m", &stack) != 1 ||
		    np_stacktab_walk(np_agg_stacktab(a), stack, fr, 8) != 1 ||
		    strcmp(fr[0]->dso, want))
			bad++;
		CHECK(!bad);
		if (bad)
			break;
	}
	np_agg_free(a);
}

static void test_no_cpu_no_symbolizer(void)
{
	uint64_t k[] = { 0xffffffff81000010 };
	struct np_agg_opts o;
	struct np_agg *a;
	struct np_ev_sample s;
	const struct np_sym *fr[2];
	uint32_t stack = 0;

	np_agg_opts_init(&o);
	o.by_cpu = 0;
	a = np_agg_new(&o);
	s = mk(1, 0, "k", k, 1, NULL, 0);
	np_agg_sample(a, &s);
	s.cpu = 3;
	np_agg_sample(a, &s);
	CHECK(count_of(a, 1, NP_CPU_ANY, "k", &stack) == 2);
	CHECK(np_stacktab_walk(np_agg_stacktab(a), stack, fr, 2) == 1);
	CHECK(fr[0]->name == NULL && fr[0]->offset == k[0] &&
	      !strcmp(fr[0]->dso, "[kernel.kallsyms]"));
	np_agg_free(a);
}

static void test_cap(void)
{
	struct np_agg_opts o;
	struct np_agg *a;

	np_agg_opts_init(&o);
	o.stacktab_cap = 1;	/* every reset clears the table */
	a = np_agg_new(&o);
	for (uint64_t i = 0; i < 1000; i++) {
		uint64_t k[2] = { 0xffffffff81000000 + i, 0xffffffff82000000 };
		struct np_ev_sample s = mk(1, 0, "x", k, 2, NULL, 0);

		np_agg_sample(a, &s);
	}
	CHECK(np_stacktab_nr_frames(np_agg_stacktab(a)) == 1001);
	np_agg_reset(a);
	CHECK(np_stacktab_nr_frames(np_agg_stacktab(a)) == 0);
	np_agg_free(a);
}

/*
 * A table cleared past its cap keeps its arrays' capacity: what it holds
 * after, not what it once held, decides the next clear (the fleet
 * exporter and the daemon re-interned every slice, their table once
 * past the cap).
 */
static void test_cap_refill(void)
{
	struct np_agg_opts o;
	struct np_agg *a;
	uint64_t gen;

	np_agg_opts_init(&o);
	o.stacktab_cap = 64 << 10;
	a = np_agg_new(&o);
	for (uint64_t i = 0; a && i < 20000; i++) {
		uint64_t k[2] = { 0xffffffff81000000 + i, 0xffffffff82000000 };
		struct np_ev_sample s = mk(1, 0, "x", k, 2, NULL, 0);

		np_agg_sample(a, &s);
	}
	gen = np_stacktab_gen(np_agg_stacktab(a));
	np_agg_reset(a);		/* past the cap: cleared */
	CHECK(np_stacktab_gen(np_agg_stacktab(a)) != gen);
	for (uint64_t i = 0; a && i < 10; i++) {
		uint64_t k[2] = { 0xffffffff81000000 + i, 0xffffffff82000000 };
		struct np_ev_sample s = mk(1, 0, "x", k, 2, NULL, 0);

		np_agg_sample(a, &s);
	}
	gen = np_stacktab_gen(np_agg_stacktab(a));
	np_agg_reset(a);		/* 11 frames: kept */
	CHECK(np_stacktab_gen(np_agg_stacktab(a)) == gen);
	CHECK(np_stacktab_nr_frames(np_agg_stacktab(a)) == 11);
	np_agg_free(a);
}

/* Addresses below 0x400000 or at 0xdead... lie in no mapping. */
static int map_sym(void *arg, uint32_t pid, uint64_t addr, int kernel,
		   struct np_sym *out)
{
	static char name[64];

	out->kernel = kernel;
	if (!kernel && (addr < 0x400000 || addr >> 32 == 0xdead)) {
		out->dso = NP_DSO_UNMAPPED;
		out->name = NULL;
		out->offset = addr;
		return 1;
	}
	snprintf(name, sizeof(name), "fn_%llx", (unsigned long long)addr);
	out->dso = kernel ? "[kernel.kallsyms]" : "/bin/p";
	out->name = name;
	out->offset = 0;
	return 0;
}

/* Frames of a stack, innermost first, as "dso:name|dso:name|...". */
static void stack_str(struct np_agg *a, uint32_t stack, char *buf, size_t len)
{
	const struct np_sym *fr[16];
	unsigned int n = np_stacktab_walk(np_agg_stacktab(a), stack, fr, 16);
	size_t off = 0;

	buf[0] = 0;
	for (unsigned int i = 0; i < n && off < len; i++)
		off += snprintf(buf + off, len - off, "%s%s:%s", i ? "|" : "",
				fr[i]->dso, fr[i]->name ? fr[i]->name : "-");
}

static uint32_t entries_of(struct np_agg *a, uint32_t pid)
{
	const struct np_agg_entry *e;
	uint32_t n, m = 0;

	e = np_agg_entries(a, &n);
	for (uint32_t i = 0; i < n; i++)
		m += e[i].pid == pid;
	return m;
}

static void test_unmapped_run(void)
{
	/* the same code, then two different runs of junk from the stack */
	uint64_t u1[] = { 0x401000, 0x402000, 0x1234, 0xdead00000001, 0 };
	uint64_t u2[] = { 0x401000, 0x402000, 0x6f6c, 0 };
	/* junk between code is left alone: only the outermost run goes */
	uint64_t u3[] = { 0x401000, 0x10, 0x402000, 0x20 };
	/* an unmapped innermost frame (ip) is kept */
	uint64_t u4[] = { 0x30, 0x40 };
	uint64_t k[] = { 0xffffffff81000010 };
	struct np_agg_opts o;
	struct np_agg *a;
	struct np_ev_sample s;
	uint32_t stack = 0, stack2 = 0;
	char buf[512];

	np_agg_opts_init(&o);
	o.symbolize = map_sym;
	a = np_agg_new(&o);
	CHECK(a);
	if (!a)
		return;
	s = mk(1, 0, "p", k, 1, u1, 5);
	CHECK(np_agg_sample(a, &s) == 0);
	s = mk(1, 0, "p", k, 1, u2, 4);
	CHECK(np_agg_sample(a, &s) == 0);
	CHECK(count_of(a, 1, 0, "p", &stack) == 2);
	CHECK(entries_of(a, 1) == 1);	/* one stack, twice */
	stack_str(a, stack, buf, sizeof(buf));
	CHECK(!strcmp(buf, "[kernel.kallsyms]:fn_ffffffff81000010|/bin/p:fn_401000|"
			   "/bin/p:fn_402000|" NP_DSO_UNMAPPED ":" NP_SYM_UNMAPPED_RUN));
	s = mk(2, 0, "q", NULL, 0, u3, 4);
	CHECK(np_agg_sample(a, &s) == 0);
	CHECK(count_of(a, 2, 0, "q", &stack2) == 1);
	stack_str(a, stack2, buf, sizeof(buf));
	CHECK(!strcmp(buf, "/bin/p:fn_401000|" NP_DSO_UNMAPPED ":-|/bin/p:fn_402000|"
			   NP_DSO_UNMAPPED ":" NP_SYM_UNMAPPED_RUN));
	s = mk(3, 0, "r", NULL, 0, u4, 2);
	CHECK(np_agg_sample(a, &s) == 0);
	CHECK(count_of(a, 3, 0, "r", &stack2) == 1);
	stack_str(a, stack2, buf, sizeof(buf));
	CHECK(!strcmp(buf, NP_DSO_UNMAPPED ":-|" NP_DSO_UNMAPPED ":" NP_SYM_UNMAPPED_RUN));
	np_agg_free(a);
}

/* Names addresses by their 4 KiB page: 256 raw addresses, one function. */
static int page_sym(void *arg, uint32_t pid, uint64_t addr, int kernel,
		    struct np_sym *out)
{
	static char name[64];

	(void)arg;
	(void)pid;
	snprintf(name, sizeof(name), "fn_%llx", (unsigned long long)(addr >> 12));
	out->dso = "/bin/p";
	out->name = name;
	out->offset = 0;	/* one frame per function */
	out->kernel = kernel;
	return 0;
}

/*
 * 10^5 distinct raw stacks that are 100 symbolized ones, each seen twice:
 * the raw cache overflows its bound and is emptied several times, yet
 * every count is exact, and the aggregator stays small (an unbounded
 * raw cache alone would be 4 MiB here).
 */
static void test_raw_bound(void)
{
	struct np_agg_opts o;
	const struct np_agg_entry *e;
	struct np_agg *a;
	uint32_t n;
	int bad = 0;

	np_agg_opts_init(&o);
	o.symbolize = page_sym;
	a = np_agg_new(&o);
	for (int pass = 0; pass < 2; pass++)
		for (uint64_t i = 0; i < 100000; i++) {
			/* leaf: page i % 100, one of 1000 addresses in it */
			uint64_t u[2] = { 0x400000 + (i % 100) * 0x1000 + i / 100 % 1000,
					  0x900000 };
			struct np_ev_sample s = mk(7, 0, "w", NULL, 0, u, 2);

			CHECK(np_agg_sample(a, &s) == 0);
		}
	e = np_agg_entries(a, &n);
	CHECK(n == 100);
	for (uint32_t i = 0; i < n; i++)
		bad += e[i].count != 2000;
	CHECK(bad == 0);
	CHECK(np_agg_samples(a) == 200000);
	CHECK(np_agg_mem(a) < (2U << 20));
	np_agg_free(a);
}

/*
 * One user part under many kernel paths (a process busy in user code,
 * interrupted everywhere): every stack is whole and right, and the user
 * part is shared only by samples of the same pid, comm and user frames.
 */
static void test_user_part(void)
{
	uint64_t u[] = { 0x401010, 0x402020, 0x403030, 0x404040, 0x405050 };
	struct symctx ctx = { 0 };
	const struct np_sym *fr[16];
	const struct np_agg_entry *e;
	struct np_agg_opts o;
	struct np_agg *a;
	struct np_ev_sample s;
	uint32_t stack = 0, n;
	char want[32], name[32];
	int bad = 0;

	np_agg_opts_init(&o);
	o.symbolize = fake_sym;
	o.symbolize_arg = &ctx;
	a = np_agg_new(&o);
	for (uint32_t pid = 30; pid < 32; pid++) {
		for (uint32_t i = 0; i < 40; i++) {
			/* kernel paths 0..3 frames deep: 1 + 1 + 7 + 10 stacks */
			uint64_t k[3] = { 0xffffffff81000000 + i,
					  0xffffffff82000000 + i % 7,
					  0xffffffff83000000 };
			uint32_t nk = i % 4;

			s = mk(pid, 0, "busy", nk ? k + 3 - nk : NULL, nk, u, 5);
			CHECK(np_agg_sample(a, &s) == 0);
		}
	}
	CHECK(entries_of(a, 30) == 19 && entries_of(a, 31) == 19);
	CHECK(count_of(a, 30, 0, "busy", NULL) == 40);
	CHECK(count_of(a, 31, 0, "busy", NULL) == 40);
	/* every stack: its kernel path, then the user part of its own pid */
	e = np_agg_entries(a, &n);
	for (uint32_t i = 0; i < n; i++) {
		uint32_t depth = np_stacktab_walk(np_agg_stacktab(a), e[i].stack, fr, 16);

		if (depth < 5 || depth > 8) {
			bad++;
			continue;
		}
		snprintf(want, sizeof(want), "/bin/p%u", e[i].pid);
		for (uint32_t j = 0; j < depth - 5; j++)
			bad += !fr[j]->kernel;
		for (uint32_t j = depth - 5; j < depth; j++) {
			snprintf(name, sizeof(name), "fn_%llx",
				 (unsigned long long)u[j - (depth - 5)]);
			bad += fr[j]->kernel || strcmp(fr[j]->name, name) ||
			       strcmp(fr[j]->dso, want);
		}
	}
	CHECK(bad == 0);
	/* same pid and frames, another comm (an exec): its own user part */
	s = mk(30, 0, "busy2", NULL, 0, u, 5);
	CHECK(np_agg_sample(a, &s) == 0);
	CHECK(count_of(a, 30, 0, "busy2", &stack) == 1);
	CHECK(np_stacktab_walk(np_agg_stacktab(a), stack, fr, 16) == 5);
	/* one user frame fewer: not the same user part */
	s = mk(32, 0, "busy", NULL, 0, u + 1, 4);
	CHECK(np_agg_sample(a, &s) == 0);
	CHECK(count_of(a, 32, 0, "busy", &stack) == 1);
	CHECK(np_stacktab_walk(np_agg_stacktab(a), stack, fr, 16) == 4);
	CHECK(!strcmp(fr[0]->name, "fn_402020"));
	/* more user parts than memo slots: each process keeps its own */
	bad = 0;
	for (uint32_t pid = 1000; pid < 2000 && !bad; pid++) {
		uint64_t k[1] = { 0xffffffff81000000 + pid % 3 };

		s = mk(pid, 0, "many", k, 1, u, 5);
		CHECK(np_agg_sample(a, &s) == 0);
		snprintf(want, sizeof(want), "/bin/p%u", pid);
		bad += count_of(a, pid, 0, "many", &stack) != 1 ||
		       np_stacktab_walk(np_agg_stacktab(a), stack, fr, 16) != 6 ||
		       strcmp(fr[5]->dso, want);
	}
	CHECK(bad == 0);
	np_agg_free(a);
}

static const struct np_test_case cases[] = {
	NP_CASE(test_basic),
	NP_CASE(test_frame_memo),
	NP_CASE(test_user_part),
	NP_CASE(test_no_cpu_no_symbolizer),
	NP_CASE(test_cap),
	NP_CASE(test_cap_refill),
	NP_CASE(test_unmapped_run),
	NP_CASE(test_raw_bound),
	{ 0 }
};

int main(int argc, char **argv)
{
	return np_test_main(argc, argv, cases);
}
