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

/* source_ipi.c: a CPU's hrtimer sends an NMI IPI to its buddy CPU. */
int np_ipi_start(void);
void np_ipi_cpu_start(int cpu, u32 freq_hz);
void np_ipi_cpu_stop(int cpu);
void np_ipi_stop(void);

/* source_ext.c: NMIs no other handler claims. */
int np_ext_start(void);
void np_ext_stop(void);

#endif /* _NMIPROF_SOURCE_H */
