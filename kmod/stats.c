// SPDX-License-Identifier: GPL-2.0
/*
 * Per-CPU statistics: samples, latched nested entries, external NMIs and
 * the handler's cost (min/avg/max and a power-of-two histogram).
 *
 * Only the owning CPU writes its counters, from NMI context, so they are
 * plain u64s; readers take a racy snapshot that is good enough for
 * reporting.  Lost records are counted by the ring, not here.
 */
#include <linux/string.h>
#include <linux/cpumask.h>

#include "cpu_time.h"
#include "ring.h"
#include "stats.h"

DEFINE_PER_CPU(struct np_cpu_stats, np_stats);

/*
 * Only called while no source is running (see np_session_start()); the
 * watchdog may, so its lockup count is left alone.
 */
void np_stats_reset(void)
{
	int cpu;

	for_each_possible_cpu(cpu)
		memset(per_cpu_ptr(&np_stats, cpu), 0,
		       offsetof(struct np_cpu_stats, lockups));
}

void np_stats_read(int cpu, struct nmiprof_cpu_stats *out)
{
	struct np_cpu_stats *s = per_cpu_ptr(&np_stats, cpu);
	int i;

	memset(out, 0, sizeof(*out));
	/* Every run is a sample attempt, so avg = cost_sum_ns / samples. */
	out->samples = READ_ONCE(s->cost_nr);
	out->latched = READ_ONCE(s->latched);
	out->external = READ_ONCE(s->external);
	out->cost_min_ns = READ_ONCE(s->cost_min_ns);
	out->cost_max_ns = READ_ONCE(s->cost_max_ns);
	out->cost_sum_ns = READ_ONCE(s->cost_sum_ns);
	for (i = 0; i < NMIPROF_HIST_BUCKETS; i++)
		out->cost_hist[i] = READ_ONCE(s->cost_hist[i]);
	out->lockups = atomic64_read(&s->lockups);
	out->throttled = np_cpu_time_throttled(cpu);
	out->lost = np_ring_lost(cpu);
}
