/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The hard-lockup report: written by the stuck CPU itself, from NMI, to
 * the UART directly (nmi_uart.c), to printk and to the lockup queue.
 */
#ifndef _NMIPROF_LOCKUP_REPORT_H
#define _NMIPROF_LOCKUP_REPORT_H

#include <linux/types.h>

struct pt_regs;

int np_report_init(void);
void np_report_exit(void);

/*
 * NMI context, on the stuck CPU: header, task, registers, backtrace, then
 * a NMIPROF_REC_LOCKUP record.  @stuck_ns: time since the last heartbeat,
 * or with @at_least since the watchdog began to watch a CPU that has had
 * no heartbeat since (stuck across a restart), a lower bound.
 */
void np_report_lockup(struct pt_regs *regs, u64 stuck_ns, bool at_least);

/* NMI context: this CPU's part of an all-CPU backtrace. */
void np_report_backtrace(struct pt_regs *regs, int lockup_cpu);

/*
 * Any context but NMI, on the CPU that came back after @stuck_ns, which
 * had been running task @pid/@tid/@comm (TASK_COMM_LEN bytes; NULL and
 * zeroes when unknown) when reported.
 */
void np_report_recovered(u64 stuck_ns, bool at_least, pid_t pid, pid_t tid,
			 const char *comm);

/* Any context but NMI, on a buddy: @cpu is stuck and ignores NMIs. */
void np_report_silent(int cpu, u64 stuck_ns, bool at_least);

/*
 * Process context, once np_sess.ring_lockups is clear: true when no
 * report is copying into a ring, false if one is still at it after
 * 100 ms (its CPU is stuck in NMI).
 */
bool np_report_ring_quiesce(void);

#endif /* _NMIPROF_LOCKUP_REPORT_H */
