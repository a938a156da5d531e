// SPDX-License-Identifier: GPL-2.0
/*
 * (pid, address) -> symbol memo (see symcache.h).
 */
#include <stdlib.h>
#include <string.h>

#include "symcache.h"

#define NPD_SYMCACHE_BITS	14	/* 16384 entries, 768 KiB */
#define NPD_PIDGEN_BITS		10	/* 1024 pid buckets */
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
	uint32_t pidgen[1U << NPD_PIDGEN_BITS];
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

static uint32_t *npd_symcache_pidgen(struct npd_symcache *c, uint32_t pid)
{
	return &c->pidgen[(pid * 0x9e3779b9U) >> (32 - NPD_PIDGEN_BITS)];
}

void npd_symcache_invalidate(struct npd_symcache *c, uint32_t pid)
{
	(*npd_symcache_pidgen(c, pid))++;
}

int npd_symcache_lookup(void *arg, uint32_t pid, uint64_t addr, int kernel,
			struct np_sym *out)
{
	struct npd_symcache *c = arg;
	uint32_t key_pid = kernel ? NPD_KERNEL_PID : pid;
	uint32_t gen = kernel ? 0 : *npd_symcache_pidgen(c, pid);
	uint64_t h = (addr ^ ((uint64_t)key_pid << 32)) * 0x9e3779b97f4a7c15ULL;
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
