// SPDX-License-Identifier: GPL-2.0
/*
 * Following one process: a session given follow_pid samples that process
 * and its descendants only, so following one process (record -p PID,
 * record -- CMD, top -p) does not pay for sampling the rest of the
 * system, idle CPUs included.
 *
 * perf does this with per-task events, switched in and out with the task
 * by the scheduler's perf hooks, which a module cannot reach.  Instead a
 * task is followed when its thread group, or one of its ancestors', is
 * follow_pid: the real_parent chain, as perf's inherit=1 events follow
 * fork, checked where it is needed:
 *   - in the NMI handler, for current (dispatch.c): the exact filter;
 *   - by the IPI source's self-pacing timers (source_ipi.c), for current
 *     too, so that a CPU running anything else, or idle, is neither
 *     sampled nor woken every period.
 *
 * real_parent is read under RCU.
 *
 * A task reparented because its parent exited (to init or a subreaper)
 * loses its ancestry and is no longer sampled; perf would go on.  The
 * walk stops at NP_FOLLOW_DEPTH ancestors.
 */
#include <linux/pid.h>
#include <linux/rcupdate.h>
#include <linux/sched.h>

#include "follow.h"

#define NP_FOLLOW_DEPTH		64

pid_t np_follow_tgid;

/* In process context, no session running: @vpid in the caller's namespace. */
int np_follow_configure(u32 vpid)
{
	struct task_struct *t;
	pid_t tgid = 0;

	if (vpid) {
		rcu_read_lock();
		t = pid_task(find_vpid(vpid), PIDTYPE_TGID);
		if (t)
			tgid = task_tgid_nr(t);
		rcu_read_unlock();
		if (!tgid)
			return -ESRCH;
	}
	/* Read by NMIs only after the session starts (session.h). */
	WRITE_ONCE(np_follow_tgid, tgid);
	return 0;
}

bool np_follow_task_slow(struct task_struct *t)
{
	pid_t root = READ_ONCE(np_follow_tgid);
	bool ret = false;
	int depth;

	rcu_read_lock();
	for (depth = 0; depth < NP_FOLLOW_DEPTH; depth++) {
		if (t->tgid == root) {
			ret = true;
			break;
		}
		/* idle (0), init (1): the top, and their own parents */
		if (t->pid <= 1)
			break;
		t = rcu_dereference(t->real_parent);
	}
	rcu_read_unlock();
	return ret;
}
