/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The watchdog's per-CPU state, shared by its core (watchdog.c: heartbeat
 * timers, the NMI self-check, start and stop) and its buddy check
 * (watchdog_buddy.c: who looks at whose heartbeat).
 */
#ifndef _NMIPROF_WATCHDOG_CPU_H
#define _NMIPROF_WATCHDOG_CPU_H

#include <linux/atomic.h>
#include <linux/cpumask.h>
#include <linux/hrtimer.h>
#include <linux/minmax.h>
#include <linux/percpu.h>
#include <linux/sched.h>
#include <linux/timekeeping.h>

/* How far a buddy got with a stuck CPU in this episode. */
enum np_wd_kick {
	NP_WD_KICK_NONE,
	NP_WD_KICK_SENT,	/* NMI IPI sent */
	NP_WD_KICK_SILENT,	/* no answer; the buddy reported it */
};

enum np_wd_state {
	NP_WD_OK,		/* no episode */
	NP_WD_REPORTING,	/* this CPU's NMI is writing the report */
	NP_WD_REPORTED,		/* report and snapshot written */
};

struct np_wd_cpu {
	struct hrtimer	timer;
	u64		beat_ns;	/* last heartbeat, mono fast clock */
	u64		preempted_ns;	/* last seen preempted by the host */
	atomic_t	nmi_req;	/* nmi_ipi.h: 1, check yourself */
	atomic_t	bt_req;		/* nmi_ipi.h: 1 + CPU that wants our
					 * backtrace
					 */
	atomic_t	kicked;		/* enum np_wd_kick */
	int		state;		/* enum np_wd_state, written by this CPU */
	int		held;		/* np_wd_hold() depth, written by this CPU */
	atomic_t	traced;		/* episode's trace event emitted */
	bool		beat_start;	/* beat_ns is when watching began,
					 * no heartbeat of this CPU's
					 */

	/* Snapshot for the trace events, published by state = REPORTED. */
	u64		since_ns;	/* heartbeat before the episode */
	u64		stuck_ns;	/* at report time */
	bool		since_start;	/* since_ns is beat_start's */
	unsigned long	ip;
	pid_t		tgid;
	pid_t		pid;
	char		comm[TASK_COMM_LEN];
};

DECLARE_PER_CPU(struct np_wd_cpu, np_wd);

/* Set while the watchdog is stopped; read by timers and NMIs. */
extern u64 np_wd_thresh_ns;
extern struct cpumask np_wd_active;	/* CPUs whose timer runs */

/*
 * Since when the CPU may have run with interrupts off: its heartbeat, or
 * a checker's sight of its vCPU preempted (np_wd_check()), the later.
 */
static inline u64 np_wd_seen(struct np_wd_cpu *w)
{
	return max(READ_ONCE(w->beat_ns), READ_ONCE(w->preempted_ns));
}

/*
 * Around the report functions that wait (the UART's owner lock, up to
 * 3 s, the port lock, a slow port): this CPU is busy in our own code, not
 * stuck.  Checkers pass it over while it is held, and the time held does
 * not count against its heartbeat: with a threshold of 1 s a CPU that
 * prints its backtrace behind other CPUs' reports would otherwise be
 * reported itself.  A CPU that really is stuck and is held on the way
 * (a backtrace asked of it) is reported that much later.  Hardirq or
 * NMI context, this CPU; the outermost hold of a nest counts.
 */
static inline u64 np_wd_hold(struct np_wd_cpu *w)
{
	WRITE_ONCE(w->held, w->held + 1);
	return ktime_get_mono_fast_ns();
}

static inline void np_wd_release(struct np_wd_cpu *w, u64 start)
{
	if (w->held == 1)
		WRITE_ONCE(w->beat_ns, w->beat_ns +
			   (ktime_get_mono_fast_ns() - start));
	/* Pairs with smp_rmb() in np_wd_check(): released, credited. */
	smp_wmb();
	WRITE_ONCE(w->held, w->held - 1);
}

/* watchdog.c, hrtimer context: emit @cpu's lockup trace event once. */
void np_wd_trace_lockup(struct np_wd_cpu *w, int cpu);

/* watchdog_buddy.c */
void np_wd_check_buddies(int cpu, u64 now);
void np_wd_sweep(int self);

#endif /* _NMIPROF_WATCHDOG_CPU_H */
