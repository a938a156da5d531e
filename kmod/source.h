/* SPDX-License-Identifier: GPL-2.0 */
/*
 * NMI sources.  Each one ends in np_on_nmi() on the CPU to be sampled.
 * The per-CPU start/stop calls run on that CPU from the session's cpuhp
 * callbacks (sleepable, CPU online).
 */
#ifndef _NMIPROF_SOURCE_H
#define _NMIPROF_SOURCE_H

#include <linux/types.h>

/* source_pmu.c: pinned cycles counter, overflow handled in NMI. */
int np_pmu_probe(u32 freq_hz);
int np_pmu_cpu_start(int cpu, u32 freq_hz);
void np_pmu_cpu_stop(int cpu);

/*
 * source_ipi.c: an hrtimer on the next online CPU sends each sampled CPU
 * NMI IPIs.  Its cpuhp calls run for every CPU, sampled or not, since any
 * online CPU may pace another; np_ipi_quiesce() stops all pacing before
 * the session's cpuhp state is removed.  None of them waits for another
 * CPU; the NMI handler lives from np_ipi_init() to np_ipi_exit().
 */
int np_ipi_init(void);
void np_ipi_exit(void);
int np_ipi_start(u32 freq_hz);
void np_ipi_cpu_online(int cpu, bool hotplug);
void np_ipi_cpu_offline(int cpu);
void np_ipi_quiesce(void);

/* source_ext.c: NMIs no other handler claims, while started. */
int np_ext_init(void);
void np_ext_exit(void);
void np_ext_start(void);
void np_ext_stop(void);

#endif /* _NMIPROF_SOURCE_H */
