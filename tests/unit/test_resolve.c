// SPDX-License-Identifier: GPL-2.0
/*
 * The one stack-resolution path (lib/model/resolve.c) that the
 * aggregation, the daemon's live view and top share: its shaping rules,
 * and that it interns every frame a sample has.
 */
#include <stdio.h>
#include <string.h>
#include "check.h"
#include "resolve.h"

struct fake {
	struct np_stacktab *st;
	unsigned int calls;
	uint64_t fail_at;	/* this address fails as ENOMEM (0: none) */
};

/* Addresses below 0x400000 lie in no mapping. */
static uint32_t fake_frame(void *arg, uint64_t addr, int kernel)
{
	struct fake *f = arg;
	char name[32];
	struct np_sym s = { .kernel = kernel };

	f->calls++;
	if (addr == f->fail_at)
		return NP_ID_NONE;
	if (!kernel && addr < 0x400000) {
		s.dso = NP_DSO_UNMAPPED;
		s.offset = addr;
	} else {
		snprintf(name, sizeof(name), "%c%llx", kernel ? 'k' : 'u',
			 (unsigned long long)addr);
		s.dso = kernel ? "[kernel.kallsyms]" : "/bin/p";
		s.name = name;
	}
	return np_stacktab_frame(f->st, &s);
}

/* Frames innermost first as "name|name|..." ("-" for no name). */
static const char *str(struct np_stacktab *st, uint32_t node)
{
	static char buf[4096];
	const struct np_sym *fr[300];
	unsigned int n = np_stacktab_walk(st, node, fr, 300);
	size_t off = 0;

	buf[0] = 0;
	for (unsigned int i = 0; i < n && off < sizeof(buf); i++)
		off += snprintf(buf + off, sizeof(buf) - off, "%s%s", i ? "|" : "",
				fr[i]->name ? fr[i]->name : "-");
	return buf;
}

static uint32_t resolve(struct fake *f, uint64_t ip, uint32_t flags,
			const uint64_t *k, unsigned int nk,
			const uint64_t *u, unsigned int nu)
{
	struct np_ev_sample s = {
		.ip = ip, .pid = 7, .flags = flags, .comm = "p",
		.kframes = k, .nr_kframes = (uint16_t)nk,
		.uframes = u, .nr_uframes = (uint16_t)nu,
	};

	return np_resolve_stack(f->st, &s, fake_frame, f);
}

static void test_shape(void)
{
	struct fake f = { .st = np_stacktab_new() };
	const uint64_t k[] = { 0xffff1, 0xffff2 };
	const uint64_t u[] = { 0x401000, 0x402000, 0x10, 0x20, 0x30 };
	const uint64_t uin[] = { 0x10, 0x401000 };
	uint32_t n;

	CHECK(f.st);
	/* kernel then user, innermost first; the outer unmapped run is one */
	n = resolve(&f, 0xffff1, 0, k, 2, u, 5);
	CHECK(!strcmp(str(f.st, n), "kffff1|kffff2|u401000|u402000|"
				    NP_SYM_UNMAPPED_RUN));
	/* only the run and one frame more are looked at, then the kept ones */
	f.calls = 0;
	resolve(&f, 0x401000, NMIPROF_RF_USER_MODE, NULL, 0, u, 5);
	CHECK(f.calls == 4 + 2);
	/* an unmapped innermost frame is kept, even when all are unmapped */
	n = resolve(&f, 0x10, NMIPROF_RF_USER_MODE, NULL, 0, uin, 2);
	CHECK(!strcmp(str(f.st, n), "-|u401000"));
	n = resolve(&f, 0x10, NMIPROF_RF_USER_MODE, NULL, 0, u + 2, 3);
	CHECK(!strcmp(str(f.st, n), "-|" NP_SYM_UNMAPPED_RUN));
	/* no stack: the ip alone, kernel or user by the sample's mode */
	n = resolve(&f, 0xffff9, 0, NULL, 0, NULL, 0);
	CHECK(!strcmp(str(f.st, n), "kffff9"));
	n = resolve(&f, 0x409000, NMIPROF_RF_USER_MODE, NULL, 0, NULL, 0);
	CHECK(!strcmp(str(f.st, n), "u409000"));
	/* no stack and no ip: the empty stack */
	CHECK(resolve(&f, 0, 0, NULL, 0, NULL, 0) == NP_STACK_EMPTY);
	/* a failed frame fails the stack */
	f.fail_at = 0xffff2;
	CHECK(resolve(&f, 0xffff1, 0, k, 2, u, 5) == NP_ID_NONE);
	f.fail_at = 0x402000;
	CHECK(resolve(&f, 0xffff1, 0, k, 2, u, 5) == NP_ID_NONE);
	np_stacktab_free(f.st);
}

/* Every frame of the deepest sample is kept: no view truncates. */
static void test_deep(void)
{
	struct fake f = { .st = np_stacktab_new() };
	uint64_t k[NMIPROF_MAX_FRAMES], u[NMIPROF_MAX_FRAMES];
	uint32_t n;

	for (unsigned int i = 0; i < NMIPROF_MAX_FRAMES; i++) {
		k[i] = 0xff0000 + i;
		u[i] = 0x500000 + i;
	}
	n = resolve(&f, k[0], 0, k, NMIPROF_MAX_FRAMES, u, NMIPROF_MAX_FRAMES);
	CHECK(np_stacktab_depth(f.st, n) == 2 * NMIPROF_MAX_FRAMES);
	np_stacktab_free(f.st);
}

static void test_pidgen(void)
{
	struct np_pidgen g = { { 0 } };
	uint32_t a = np_pidgen_get(&g, 10), b = np_pidgen_get(&g, 11);

	np_pidgen_bump(&g, 10);
	CHECK(np_pidgen_get(&g, 10) != a);
	/* another pid changes only if it shares the bucket */
	CHECK(np_pidgen_get(&g, 11) == b ||
	      np_pidgen_slot(&g, 11) == np_pidgen_slot(&g, 10));
}

static const struct np_test_case cases[] = {
	NP_CASE(test_shape),
	NP_CASE(test_deep),
	NP_CASE(test_pidgen),
	{ 0 }
};

int main(int argc, char **argv)
{
	return np_test_main(argc, argv, cases);
}
