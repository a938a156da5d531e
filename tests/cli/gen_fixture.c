// SPDX-License-Identifier: GPL-2.0
/*
 * gen_fixture: writes the deterministic profile file the CLI golden tests
 * read (tests/cli/fixture.nmp was made by it):
 *
 *   gen_fixture OUT [STORE_DIR]
 *
 * With STORE_DIR, also a daemon-style store holding the same two slices
 * and three hard-lockup reports (two CPUs stuck at once, then one), for
 * report --store/--since/--until and lockups list/show.
 *
 * Two segments (slices) with fixed times, two processes, kernel and user
 * frames, recursion, a frame without a symbol, and names that need
 * escaping in xml/folded output.
 */
#include <stdio.h>
#include <string.h>

#include "agg.h"
#include "lockstore.h"
#include "stacktab.h"
#include "store.h"

#define T0	1767225600000000000ULL	/* 2026-01-01 00:00:00 UTC */
#define MIN	60000000000ULL

#define U(name)	{ "/usr/bin/app", name, 0x10, 0, NULL }
#define L(name)	{ "/usr/lib/libc.so.6", name, 0x20, 0, NULL }
#define K(name)	{ "[kernel.kallsyms]", name, 0x30, 1, NULL }

struct stk {
	uint32_t pid, cpu;
	const char *comm;
	uint64_t count;
	unsigned n;
	struct np_sym f[8];	/* innermost first */
};

static const struct stk slice1[] = {
	{ 100, 0, "app", 60, 4, { U("compute"), U("work"), U("main"), L("__libc_start_main") } },
	{ 100, 1, "app", 20, 4, { U("compute"), U("work"), U("main"), L("__libc_start_main") } },
	{ 100, 0, "app", 15, 4, { U("parse"), U("work"), U("main"), L("__libc_start_main") } },
	{ 100, 0, "app", 10, 6, { K("clear_page_erms"), K("do_syscall_64"), L("write"),
				  U("flush"), U("main"), L("__libc_start_main") } },
	{ 100, 1, "app", 5, 5, { U("fib"), U("fib"), U("fib"), U("main"), L("__libc_start_main") } },
};

static const struct stk slice2[] = {
	{ 100, 0, "app", 30, 4, { U("compute"), U("work"), U("main"), L("__libc_start_main") } },
	{ 200, 1, "db;writer", 25, 3, { U("std::vector<int>::push_back"), U("main"),
				       L("__libc_start_main") } },
	{ 200, 1, "db;writer", 8, 2, { { "/usr/bin/app", NULL, 0x4f2a, 0, NULL }, U("main") } },
	{ 0, 0, "swapper/0", 12, 2, { K("default_idle"), K("cpu_startup_entry") } },
	/* compute reached a second way: two call chains, two callers */
	{ 100, 1, "app", 6, 4, { U("compute"), U("parse"), U("main"), L("__libc_start_main") } },
};

static int fill(struct np_agg *a, const struct stk *s, size_t n)
{
	struct np_stacktab *st = np_agg_stacktab(a);

	for (size_t i = 0; i < n; i++) {
		uint32_t stack = np_stacktab_stack(st, s[i].f, s[i].n);
		uint32_t comm = np_stacktab_str(st, s[i].comm, strlen(s[i].comm));

		if (stack == NP_ID_NONE || comm == NP_ID_NONE ||
		    np_agg_add(a, s[i].pid, s[i].cpu, comm, stack, s[i].count))
			return -1;
	}
	return 0;
}

static int write_store(const char *dir, struct np_agg *a)
{
	static const uint64_t kframes[] = {
		0xffffffff81a00010ULL, 0xffffffff81a00120ULL, 0xffffffff81000230ULL,
	};
	static const struct np_sym syms[] = {
		{ "[kernel.kallsyms]", "spin_forever", 0x10, 1, NULL },
		{ "[kernel.kallsyms]", "stuck_ioctl", 0x20, 1, NULL },
		{ NULL, NULL, 0xffffffff81000230ULL, 1, NULL },
	};
	struct np_ev_lockup l = {
		.time_ns = 5000000000ULL, .stuck_ns = 10500000000ULL,
		.cpu = 1, .pid = 4242, .tid = 4243, .flags = NMIPROF_LF_HARD,
		.comm = "wedged", .nr_kframes = 3, .kframes = kframes,
	};
	struct np_store_opts o;
	struct np_store *st;
	char err[256] = "";

	l.regs.ip = 0xffffffff81a00010ULL;
	l.regs.sp = 0xffffc90000123f00ULL;
	l.regs.flags = 0x46;
	np_store_opts_init(&o);
	o.dir = dir;
	o.max_bytes = 0;
	o.max_age_ns = 0;
	st = np_store_open(&o, err, sizeof(err));
	if (!st)
		goto fail;
	np_agg_reset(a);
	if (fill(a, slice1, sizeof(slice1) / sizeof(slice1[0])) ||
	    np_store_write(st, a, T0, T0 + MIN, err, sizeof(err)))
		goto fail;
	np_agg_reset(a);
	if (fill(a, slice2, sizeof(slice2) / sizeof(slice2[0])) ||
	    np_store_write(st, a, T0 + MIN, T0 + 2 * MIN, err, sizeof(err)))
		goto fail;
	np_store_close(st);
	if (np_lockstore_write(dir, &l, syms, T0 + 90 * 1000000000ULL, NULL, 0,
			       err, sizeof(err)))
		goto fail;
	/* CPU 0 stuck while CPU 1 was: the same episode; then CPU 2 alone. */
	l.cpu = 0;
	l.time_ns = 5300000000ULL;
	l.stuck_ns = 4800000000ULL;
	if (np_lockstore_write(dir, &l, syms, T0 + 91 * 1000000000ULL, NULL, 0,
			       err, sizeof(err)))
		goto fail;
	/* Stuck across a watchdog restart: a lower bound; and a flag bit
	 * no minor defines yet, which readers ignore. */
	l.cpu = 2;
	l.time_ns = 60000000000ULL;
	l.stuck_ns = 5000000000ULL;
	l.flags = NMIPROF_LF_HARD | NMIPROF_LF_AT_LEAST | 0x8000;
	if (np_lockstore_write(dir, &l, syms, T0 + 150 * 1000000000ULL, NULL, 0,
			       err, sizeof(err)))
		goto fail;
	return 0;
fail:
	fprintf(stderr, "gen_fixture: %s: %s\n", dir, err[0] ? err : "out of memory");
	return -1;
}

int main(int argc, char **argv)
{
	struct np_agg *a = np_agg_new(NULL);
	struct np_profile *f;
	char err[256];

	if (argc < 2 || argc > 3 || !a) {
		fprintf(stderr, "usage: gen_fixture OUT [STORE_DIR]\n");
		return 1;
	}
	f = np_profile_create(argv[1], NP_STORE_DEFAULT_LEVEL, err, sizeof(err));
	if (!f) {
		fprintf(stderr, "gen_fixture: %s\n", err);
		return 1;
	}
	np_agg_lost(a, 3);
	if (fill(a, slice1, sizeof(slice1) / sizeof(slice1[0])) ||
	    np_profile_write(f, a, T0, T0 + MIN, err, sizeof(err)))
		goto fail;
	np_agg_reset(a);
	if (fill(a, slice2, sizeof(slice2) / sizeof(slice2[0])) ||
	    np_profile_write(f, a, T0 + MIN, T0 + 2 * MIN, err, sizeof(err)))
		goto fail;
	if (np_profile_close(f)) {
		fprintf(stderr, "gen_fixture: close failed\n");
		return 1;
	}
	if (argc == 3 && write_store(argv[2], a))
		return 1;
	np_agg_free(a);
	return 0;
fail:
	fprintf(stderr, "gen_fixture: %s\n", err[0] ? err : "out of memory");
	return 1;
}
