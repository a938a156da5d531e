// SPDX-License-Identifier: GPL-2.0
/*
 * The per-CPU "on NMI" dispatcher every source calls.
 *
 * It owns the nesting latch and the cost accounting, then hands the
 * interrupted context to the sampler.  The hard-lockup watchdog does not
 * come through here: it has its own NMI handlers (watchdog.c), which must
 * work with no session and no source running.
 */
#include <linux/percpu.h>
#include <linux/ktime.h>

#include "dispatch.h"
#include "nmi_latch.h"
#include "sample.h"
#include "stats.h"

DEFINE_PER_CPU(int, np_latch_state);

void np_on_nmi(struct pt_regs *regs, u16 flags)
{
	u64 t0;

	if (!np_latch_enter()) {
		this_cpu_inc(np_stats.latched);
		return;
	}
	do {
		/* The sample's time and the start of its cost, one clock read. */
		t0 = ktime_get_mono_fast_ns();
		if (flags & NMIPROF_RF_EXTERNAL)
			this_cpu_inc(np_stats.external);
		np_sample(regs, flags, t0);
		np_stats_cost(ktime_get_mono_fast_ns() - t0);
		/*
		 * A latched entry interrupted us, not @regs; what it would
		 * have seen is this handler.  Replay it as one more sample of
		 * the context we interrupted, marked as such.
		 */
		flags |= NMIPROF_RF_LATCHED;
	} while (np_latch_exit_replay());
}
