// SPDX-License-Identifier: GPL-2.0
/*
 * (pid, address) -> symbol memo (see symcache.h).
 */
#include <stdlib.h>
#include <string.h>

#include "symcache.h"
#include "resolve.h"

#define NPD_SYMCACHE_BITS	14	/* 16384 entries, 768 KiB */
#define NPD_KERNEL_PID		UINT32_MAX

struct npd_symcache_ent {
	uint64_t addr;
	uint32_t pid;		/* NPD_KERNEL_PID for kernel addresses */
	uint32_t gen;		/* valid while == its pid bucket's generation */
	struct np_sym sym;
	int rc;			/* np_symbolize's return value */
	int valid;
};

struct npd_symcache {
	struct np_symbolizer *sym;
	uint64_t hits, misses;
	struct np_pidgen pidgen;
	struct npd_symcache_ent tab[1U << NPD_SYMCACHE_BITS];
};

struct npd_symcache *npd_symcache_new(struct np_symbolizer *sym)
{
	struct npd_symcache *c = calloc(1, sizeof(*c));

	if (c)
		c->sym = sym;
	return c;
}

void npd_symcache_free(struct npd_symcache *c)
{
	free(c);
}

void npd_symcache_invalidate(struct npd_symcache *c, uint32_t pid)
{
	np_pidgen_bump(&c->pidgen, pid);
}

int npd_symcache_lookup(void *arg, uint32_t pid, uint64_t addr, int kernel,
			struct np_sym *out)
{
	struct npd_symcache *c = arg;
	uint32_t key_pid = kernel ? NPD_KERNEL_PID : pid;
	uint32_t gen = kernel ? 0 : np_pidgen_get(&c->pidgen, pid);
	uint64_t h = np_hash_add(np_hash_u64(addr), key_pid);
	struct npd_symcache_ent *e = &c->tab[h >> (64 - NPD_SYMCACHE_BITS)];

	if (e->valid && e->addr == addr && e->pid == key_pid && e->gen == gen) {
		c->hits++;
		*out = e->sym;
		return e->rc;
	}
	c->misses++;
	e->rc = np_symbolize(c->sym, pid, addr, kernel, out);
	e->sym = *out;
	e->addr = addr;
	e->pid = key_pid;
	e->gen = gen;
	e->valid = 1;
	return e->rc;
}

void npd_symcache_stats(const struct npd_symcache *c, uint64_t *hits,
			uint64_t *misses)
{
	*hits = c->hits;
	*misses = c->misses;
}
