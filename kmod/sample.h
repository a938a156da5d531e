/* SPDX-License-Identifier: GPL-2.0 */
#ifndef _NMIPROF_SAMPLE_H
#define _NMIPROF_SAMPLE_H

#include <linux/types.h>

struct pt_regs;

int np_sample_init(void);
void np_sample_exit(void);

/*
 * Write one NMIPROF_REC_SAMPLE of the context @regs interrupted, from NMI
 * context on this CPU.  @flags are NMIPROF_RF_* the caller knows about;
 * @time_ns is when it was interrupted (ktime_get_mono_fast_ns()).
 */
void np_sample(struct pt_regs *regs, u16 flags, u64 time_ns);

#endif /* _NMIPROF_SAMPLE_H */
