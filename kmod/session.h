/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The sampling session's settings, shared by the NMI-side files.
 *
 * main.c writes np_sess only while no source is running (under its
 * mutex); starting the sources (cpuhp callbacks, register_nmi_handler())
 * orders those writes before any NMI reads them.
 */
#ifndef _NMIPROF_SESSION_H
#define _NMIPROF_SESSION_H

#include <linux/types.h>
#include <linux/cpumask.h>

struct np_session {
	u32		freq_hz;
	u32		kstack_depth;
	u32		ustack_depth;
	u32		ustack_bytes;	/* raw user stack copy, 0 = off */
	bool		user_stacks;	/* requested and nested-NMI safe */
	bool		user_regs;
	bool		external;	/* sample unclaimed NMIs too */
	u32		source;		/* enum nmiprof_source in use */
	bool		ring_lockups;	/* LOCKUP records in the rings too */
	cpumask_var_t	cpus;		/* CPUs to sample */
};

extern struct np_session np_sess;

struct nmiprof_config;

int np_session_init(u32 freq_hz, u32 source, bool user_stacks);
void np_session_exit(void);
int np_session_configure(const struct nmiprof_config *cfg);
int np_session_start(bool ring_lockups);
void np_session_stop(void);
bool np_session_running(void);

#endif /* _NMIPROF_SESSION_H */
