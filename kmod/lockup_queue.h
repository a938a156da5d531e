/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The lockup queue: LOCKUP records kept from module load to unload,
 * apart from sessions and rings, until userspace acknowledges them.
 */
#ifndef _NMIPROF_LOCKUP_QUEUE_H
#define _NMIPROF_LOCKUP_QUEUE_H

#include <linux/types.h>
#include <nmiprof/nmiprof_abi.h>

/* The largest record queued: a report's frames, NMIPROF_DEFAULT_FRAMES. */
#define NP_LQ_REC_MAX	(sizeof(struct nmiprof_lockup) + \
			 NMIPROF_DEFAULT_FRAMES * sizeof(u64))

/* Any context, NMI included: queue a copy of @rec, whole. */
void np_lq_add(const struct nmiprof_lockup *rec);

/* Records dropped because the queue was full, since load. */
u64 np_lq_dropped(void);

/* Process context: NMIPROF_IOC_LOCKUP_READ and NMIPROF_IOC_LOCKUP_ACK. */
long np_lq_ioctl(unsigned int cmd, void __user *arg);

#endif /* _NMIPROF_LOCKUP_QUEUE_H */
