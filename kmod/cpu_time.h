/* SPDX-License-Identifier: GPL-2.0 */
#ifndef _NMIPROF_CPU_TIME_H
#define _NMIPROF_CPU_TIME_H

#include <linux/types.h>

/* Session start, no source running: forget the last session's costs. */
void np_cpu_time_reset(void);

/*
 * hrtimer context on @target's pacer: how long to wait before the next
 * NMI to @target, at least @period_ns.
 */
u64 np_cpu_time_interval(int target, u64 period_ns);

/* Ticks of @cpu's pacer that waited longer than the period asked. */
u64 np_cpu_time_throttled(int cpu);

#endif /* _NMIPROF_CPU_TIME_H */
