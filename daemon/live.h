/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The live ring: per-second aggregates of the last live_seconds seconds,
 * in memory, for "top N over the last K seconds" queries on the control
 * socket.  The store keeps whole stacks per minute; live views need
 * second resolution and cheap filtering, so this keeps each second's
 * counts keyed by (symbolized stack, pid, cpu, comm): the "top" query
 * reads the innermost frames, "stacks" the whole stacks.
 *
 * Seconds are CLOCK_MONOTONIC seconds (sample time_ns / 1e9): the ring
 * must not jump when the wall clock is set.
 */
#ifndef NPD_LIVE_H
#define NPD_LIVE_H

#include <stdint.h>
#include "np_ctl.h"
#include "agg.h"		/* np_symbolize_fn */
#include "np_event.h"
#include "symbolizer.h"

struct npd_live;

/*
 * symbolize names each sample's addresses (np_symbolize fits): called
 * once per distinct (pid, address) until npd_live_invalidate.
 * NULL on ENOMEM.
 */
struct npd_live *npd_live_new(uint32_t seconds, np_symbolize_fn symbolize,
			      void *arg);
void npd_live_free(struct npd_live *l);

/* One sample at monotonic second sec (its stack, or its ip alone). */
void npd_live_sample(struct npd_live *l, uint64_t sec,
		     const struct np_ev_sample *s);
void npd_live_lost(struct npd_live *l, uint64_t sec, uint64_t lost);
/* pid's address space changed (exec, mmap, exit): forget its names. */
void npd_live_invalidate(struct npd_live *l, uint32_t pid);

/*
 * Answer q over the seconds (now_sec - q->secs, now_sec].  Fills *t with
 * malloc'ed entries (release with np_ctl_top_free).  0 or -ENOMEM.
 */
int npd_live_top(struct npd_live *l, uint64_t now_sec,
		 const struct np_ctl_top_query *q, struct np_ctl_top *t);
/*
 * The same window as whole stacks, at most q->n of them (the rest summed
 * in t->other).  Release with np_ctl_stacks_free.  0 or -ENOMEM.
 */
int npd_live_stacks(struct npd_live *l, uint64_t now_sec,
		    const struct np_ctl_stacks_query *q, struct np_ctl_stacks *t);
/*
 * Bytes the seconds' tables and the stack table may hold together
 * (default 4 MiB; the oldest seconds go first), and the stack table
 * bytes that trigger its rebuild (default half the budget).  For tests.
 */
void npd_live_set_budget(struct npd_live *l, size_t bytes);
void npd_live_set_stack_budget(struct npd_live *l, size_t bytes);
uint32_t npd_live_seconds(const struct npd_live *l);
size_t npd_live_mem(const struct npd_live *l);

#endif /* NPD_LIVE_H */
