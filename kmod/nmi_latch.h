/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Per-CPU three-state latch that keeps nmiprof's NMI work from ever
 * running re-entrantly on one CPU.
 *
 * x86 re-enables NMIs on the first iret, so a page fault or breakpoint
 * taken inside an NMI handler lets a second NMI in.  Kernels with the
 * nested-NMI entry fix (repeat_nmi/end_repeat_nmi, see entry_check.c)
 * already replay such an NMI after the first one returns; the latch is our
 * own guarantee on top of that.
 *
 * This is the scheme of commit c7d65a78fc18 ("x86: Remove cmpxchg from
 * i386 NMI nesting code"):
 *
 *   NOT_RUNNING -> EXECUTING   np_latch_enter(), we own the CPU's handler
 *   EXECUTING   -> LATCHED     a nested entry, which returns at once
 *   EXECUTING   -> NOT_RUNNING np_latch_exit_replay() returns false
 *   LATCHED     -> EXECUTING   np_latch_exit_replay() returns true: run the
 *                              body once more for the entry we latched
 *
 * The exit is one this_cpu_dec_return(): from EXECUTING it reaches
 * NOT_RUNNING, from LATCHED it reaches EXECUTING, which is exactly the
 * state the replay needs, so no cmpxchg is required.  Nothing between the
 * state read and write in np_latch_enter() can trap, so an NMI cannot slip
 * in between them while we are in NMI context; from task/irq context an
 * NMI arriving there runs to completion and leaves NOT_RUNNING behind.
 */
#ifndef _NMIPROF_NMI_LATCH_H
#define _NMIPROF_NMI_LATCH_H

#include <linux/percpu.h>

enum np_latch_state {
	NP_LATCH_NOT_RUNNING	= 0,
	NP_LATCH_EXECUTING	= 1,
	NP_LATCH_LATCHED	= 2,
};

DECLARE_PER_CPU(int, np_latch_state);

/* True: the caller runs the body.  False: latched for the owner to replay. */
static __always_inline bool np_latch_enter(void)
{
	if (this_cpu_read(np_latch_state) != NP_LATCH_NOT_RUNNING) {
		this_cpu_write(np_latch_state, NP_LATCH_LATCHED);
		return false;
	}
	this_cpu_write(np_latch_state, NP_LATCH_EXECUTING);
	return true;
}

/* True: an entry was latched meanwhile, run the body again. */
static __always_inline bool np_latch_exit_replay(void)
{
	return this_cpu_dec_return(np_latch_state) != NP_LATCH_NOT_RUNNING;
}

#endif /* _NMIPROF_NMI_LATCH_H */
