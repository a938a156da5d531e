// SPDX-License-Identifier: GPL-2.0
/*
 * The daemon's symbol memo (daemon/symcache.c) over the real symbolizer:
 * answers equal np_symbolize's, repeats are hits, a pid's invalidation
 * forgets that pid only, kernel entries survive it.
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "symcache.h"

#include "../unit/check.h"

/* global and not inlined: looked up by its address, found in our symbol table */
void test_symcache_marker(void);
__attribute__((noinline)) void test_symcache_marker(void)
{
	__asm__ volatile("" ::: "memory");
}

static int same(const struct np_sym *a, const struct np_sym *b)
{
	return a->kernel == b->kernel && a->offset == b->offset &&
	       !strcmp(a->dso ? a->dso : "", b->dso ? b->dso : "") &&
	       !strcmp(a->name ? a->name : "", b->name ? b->name : "");
}

/* lookups memoized per (pid, address), kernel ones shared, per pid invalidated */
static void test_memo(void)
{
	/* Its exact address: the function is a lone "ret", one byte long. */
	uint64_t ip = (uint64_t)(uintptr_t)&test_symcache_marker;
	uint64_t kip = 0xffffffff81000100ULL;
	uint32_t pid = (uint32_t)getpid();
	struct np_sym direct, memo, kdirect, kmemo;
	struct np_symbolizer *sym;
	struct npd_symcache *c;
	uint64_t hits, misses;
	char err[256];
	int rc1, rc2;

	sym = np_symbolizer_new(err, sizeof(err));
	CHECK(sym != NULL, "symbolizer: %s", err);
	if (!sym)
		return;
	c = npd_symcache_new(sym);
	CHECK(c != NULL);
	if (!c) {
		np_symbolizer_free(sym);
		return;
	}

	rc1 = np_symbolize(sym, pid, ip, 0, &direct);
	rc2 = npd_symcache_lookup(c, pid, ip, 0, &memo);
	CHECK(rc1 == rc2 && same(&direct, &memo));
	CHECK(memo.name && !strcmp(memo.name, "test_symcache_marker") &&
	      memo.offset == 0);
	rc2 = npd_symcache_lookup(c, pid, ip, 0, &memo);
	CHECK(rc1 == rc2 && same(&direct, &memo));
	np_symbolize(sym, pid, kip, 1, &kdirect);
	npd_symcache_lookup(c, pid, kip, 1, &kmemo);
	CHECK(same(&kdirect, &kmemo));
	/* The same kernel address from another pid is the same entry. */
	npd_symcache_lookup(c, pid + 1, kip, 1, &kmemo);
	npd_symcache_stats(c, &hits, &misses);
	CHECK(hits == 2 && misses == 2);

	/* exec/mmap/exit of pid: its user entries are looked up again. */
	npd_symcache_invalidate(c, pid);
	rc2 = npd_symcache_lookup(c, pid, ip, 0, &memo);
	CHECK(rc1 == rc2 && same(&direct, &memo));
	npd_symcache_lookup(c, pid, kip, 1, &kmemo);
	npd_symcache_stats(c, &hits, &misses);
	CHECK(hits == 3 && misses == 3);

	npd_symcache_free(c);
	np_symbolizer_free(sym);
}

static const struct np_test_case cases[] = {
	NP_CASE(test_memo),
	{ 0 }
};

int main(int argc, char **argv)
{
	return np_test_main(argc, argv, cases);
}
