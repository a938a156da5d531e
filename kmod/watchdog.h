/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Hard-lockup watchdog: hrtimer heartbeats checked by a buddy CPU, the
 * stuck CPU reporting itself from NMI (lockup_report.c).
 */
#ifndef _NMIPROF_WATCHDOG_H
#define _NMIPROF_WATCHDOG_H

#include <linux/compiler_types.h>

/* Module load/unload; the watchdog runs from load on unless disabled. */
int np_wd_init(void);
void np_wd_exit(void);

/* NMIPROF_IOC_GET_WATCHDOG and NMIPROF_IOC_SET_WATCHDOG. */
long np_wd_ioctl(unsigned int cmd, void __user *arg);

#endif /* _NMIPROF_WATCHDOG_H */
