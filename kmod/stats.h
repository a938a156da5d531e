/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Per-CPU counters of the NMI handler, written only by the owning CPU in
 * NMI context (serialised by the latch) and read racily by ioctl.
 */
#ifndef _NMIPROF_STATS_H
#define _NMIPROF_STATS_H

#include <linux/percpu.h>
#include <linux/log2.h>
#include <nmiprof/nmiprof_abi.h>

struct np_cpu_stats {
	u64 latched;
	u64 external;
	u64 cost_min_ns;
	u64 cost_max_ns;
	u64 cost_sum_ns;
	u64 cost_nr;		/* handler runs: samples written + lost */
	u64 cost_hist[NMIPROF_HIST_BUCKETS];
	/* Last, kept by np_stats_reset(): since load.  A buddy counts a
	 * silent CPU's, so atomic.
	 */
	atomic64_t lockups;
};

DECLARE_PER_CPU(struct np_cpu_stats, np_stats);

/* Bucket i counts costs below 2^(i + 7) ns; the last one takes the rest. */
static __always_inline void np_stats_cost(u64 ns)
{
	struct np_cpu_stats *s = this_cpu_ptr(&np_stats);
	unsigned int b = min_t(unsigned int, fls64(ns >> 7),
			       NMIPROF_HIST_BUCKETS - 1);

	if (!s->cost_nr || ns < s->cost_min_ns)
		s->cost_min_ns = ns;
	if (ns > s->cost_max_ns)
		s->cost_max_ns = ns;
	s->cost_sum_ns += ns;
	s->cost_nr++;
	s->cost_hist[b]++;
}

void np_stats_reset(void);
void np_stats_read(int cpu, struct nmiprof_cpu_stats *out);

#endif /* _NMIPROF_STATS_H */
