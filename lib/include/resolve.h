/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The one stack-resolution path: raw sample -> interned stack, used by
 * the aggregation (and so the store, report and export), the daemon's
 * live view and top, as perf's machine__resolve() and
 * thread__resolve_callchain() serve top, report and script.
 *
 * A stack is interned outermost first:
 *   - the user frames, the outermost run of unmapped ones folded into
 *     the one NP_SYM_UNMAPPED_RUN frame (symbolizer.h); the innermost
 *     user frame is always kept;
 *   - the kernel frames;
 *   - a sample without any frame but with an ip keeps the ip as its one
 *     frame (kernel or user by the sample's mode).
 * Each address becomes a frame through the caller's np_frame_fn, which
 * decides how it symbolizes and what it memoizes.
 */
#ifndef NP_RESOLVE_H
#define NP_RESOLVE_H

#include <stdint.h>
#include "np_event.h"
#include "np_hash.h"
#include "stacktab.h"

/* Frame id in the caller's stack table of addr; NP_ID_NONE on ENOMEM. */
typedef uint32_t (*np_frame_fn)(void *arg, uint64_t addr, int kernel);

/* Node of s's user part below the root (NP_STACK_EMPTY without user
 * frames); NP_ID_NONE on ENOMEM. */
uint32_t np_resolve_user(struct np_stacktab *st, const struct np_ev_sample *s,
			 np_frame_fn frame, void *arg);
/* The stack of s continued from node, its user part: kernel frames, or
 * the ip of a sample without frames.  NP_ID_NONE on ENOMEM. */
uint32_t np_resolve_kernel(struct np_stacktab *st, uint32_t node,
			   const struct np_ev_sample *s, np_frame_fn frame,
			   void *arg);

static inline uint32_t np_resolve_stack(struct np_stacktab *st,
					const struct np_ev_sample *s,
					np_frame_fn frame, void *arg)
{
	uint32_t node = np_resolve_user(st, s, frame, arg);

	return node == NP_ID_NONE ? node :
	       np_resolve_kernel(st, node, s, frame, arg);
}

/*
 * Per-process generations for memos keyed by (pid, address): a pid's
 * mappings changed (exec, mmap, exit) -> bump its generation, and every
 * entry stamped with the old one is stale.  Pids share buckets, so a
 * bump may cost a neighbour a few misses, never a wrong hit.
 */
#define NP_PIDGEN_BITS	10

struct np_pidgen {
	uint32_t gen[1U << NP_PIDGEN_BITS];
};

static inline uint32_t *np_pidgen_slot(struct np_pidgen *g, uint32_t pid)
{
	return &g->gen[np_hash_u64(pid) >> (64 - NP_PIDGEN_BITS)];
}

static inline uint32_t np_pidgen_get(struct np_pidgen *g, uint32_t pid)
{
	return *np_pidgen_slot(g, pid);
}

static inline void np_pidgen_bump(struct np_pidgen *g, uint32_t pid)
{
	(*np_pidgen_slot(g, pid))++;
}

#endif /* NP_RESOLVE_H */
