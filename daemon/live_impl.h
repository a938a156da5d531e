/* SPDX-License-Identifier: GPL-2.0 */
/* Private to the live view: the ring (live.c) its queries (live_query.c) read. */
#ifndef NPD_LIVE_IMPL_H
#define NPD_LIVE_IMPL_H

#include <stddef.h>
#include <stdint.h>
#include "live.h"
#include "np_idx.h"
#include "resolve.h"
#include "stacktab.h"

/* Tables and stack table, not counting the fixed caches (~500 KiB). */
#define NPD_LIVE_BUDGET		(4U << 20)
/* Past this many distinct keys in one second, new keys are only counted. */
#define NPD_LIVE_MAX_KEYS	(1U << 16)
#define NPD_LIVE_MIN_CAP	64U
#define NPD_LIVE_MAX_DEPTH	256	/* frames of a stack: all a sample has */
_Static_assert(2 * NMIPROF_MAX_FRAMES + 1 <= NPD_LIVE_MAX_DEPTH,
	       "a resolved sample fits the live view's stacks");
#define NPD_LIVE_CACHE_BITS	12	/* 4096 entries, 96 KiB */
#define NPD_LIVE_SCACHE_BITS	14	/* 16384 stacks, 384 KiB */
#define NPD_KERNEL_PID		UINT32_MAX	/* kernel addresses: any pid */

/* 20 bytes: the comm is a string of the stack table. */
struct npd_live_ent {
	uint32_t stack, pid, cpu;
	uint32_t comm;		/* string id in npd_live.frames */
	uint32_t count;
};

struct npd_live_slot {
	uint64_t sec;		/* UINT64_MAX: never used */
	uint64_t samples, lost;	/* every sample, including unkeyed ones */
	uint32_t cap, nr;
	struct npd_live_ent *tab;	/* nr keys, room for cap */
	struct np_idx idx;		/* over tab[], room for cap keys */
};

struct npd_live_cached {
	uint64_t ip;
	uint32_t pid;		/* NPD_KERNEL_PID for kernel addresses */
	uint32_t gen;		/* valid while == its pid bucket's generation */
	uint32_t frame;
	uint32_t valid;
};

/* A raw stack seen before: its interned stack id. */
struct npd_live_scached {
	uint64_t hash;		/* of pid, ip and every address */
	uint32_t pid, gen;	/* gen: of pid's bucket at insertion */
	uint32_t stack;		/* NP_STACK_EMPTY (never a result): unused */
};

struct npd_live {
	uint32_t nslots;
	struct npd_live_slot *slots;
	size_t tab_bytes;	/* all slots' tables and indexes */
	struct np_stacktab *frames;	/* frames, comms, the stacks' call trie */
	size_t budget;			/* tables + stack table, bytes */
	size_t rebuild_at;		/* stack table bytes that trigger a rebuild */
	np_symbolize_fn symbolize;
	void *symbolize_arg;
	struct npd_live_cached *cache;
	struct npd_live_scached *scache;
	struct np_pidgen pidgen;
};

static inline uint32_t npd_live_hash(uint32_t stack, uint32_t pid, uint32_t cpu,
			      uint32_t comm)
{
	return (uint32_t)(np_hash_add(np_hash_u64((uint64_t)stack << 32 | pid),
				      (uint64_t)cpu << 32 | comm) >> 32);
}

#endif /* NPD_LIVE_IMPL_H */
