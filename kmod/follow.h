/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Following one process (nmiprof_config.follow_pid): which tasks a
 * session samples.  See follow.c.
 */
#ifndef _NMIPROF_FOLLOW_H
#define _NMIPROF_FOLLOW_H

#include <linux/types.h>
#include <linux/compiler.h>

struct task_struct;

/* The followed process, global tgid; 0: every task.  Set at CONFIGURE. */
extern pid_t np_follow_tgid;

int np_follow_configure(u32 vpid);
bool np_follow_task_slow(struct task_struct *t);

/* Does the session sample @t, running on this CPU?  Any context. */
static inline bool np_follow_task(struct task_struct *t)
{
	return !READ_ONCE(np_follow_tgid) || np_follow_task_slow(t);
}

#endif /* _NMIPROF_FOLLOW_H */
