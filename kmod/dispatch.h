/* SPDX-License-Identifier: GPL-2.0 */
#ifndef _NMIPROF_DISPATCH_H
#define _NMIPROF_DISPATCH_H

#include <linux/types.h>
#include <nmiprof/nmiprof_abi.h>

struct pt_regs;

/*
 * The one entry point of every NMI source (PMU overflow, buddy IPI,
 * unclaimed NMI).  @flags: NMIPROF_RF_* describing the trigger.
 */
void np_on_nmi(struct pt_regs *regs, u16 flags);

/* Process context, serialised by the session: let samples in, or not. */
void np_dispatch_start(void);
bool np_dispatch_stop(void);

#endif /* _NMIPROF_DISPATCH_H */
