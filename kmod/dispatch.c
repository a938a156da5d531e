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
#include <linux/cpumask.h>
#include <linux/delay.h>

#include "dispatch.h"
#include "follow.h"
#include "nmi_latch.h"
#include "sample.h"
#include "stats.h"

DEFINE_PER_CPU(int, np_latch_state);

/*
 * Off between sessions.  A source stopped on a CPU that does not answer
 * (stuck with interrupts off) may still call in when that CPU comes
 * back; it must write nothing then.
 */
static bool np_dispatch_on;

/* How long np_dispatch_stop() lets a CPU finish the sample it is taking. */
#define NP_DISPATCH_QUIET_MS	100

void np_dispatch_start(void)
{
	/* Pairs with smp_load_acquire() in np_on_nmi(): rings reset first. */
	smp_store_release(&np_dispatch_on, true);
}

/*
 * After this returns no CPU writes a sample until the next start, unless
 * one has been inside np_on_nmi() for NP_DISPATCH_QUIET_MS, i.e. it is
 * stuck in NMI: then false, and the caller leaves its ring alone.
 * No synchronize_rcu(): a CPU with interrupts off holds it off.
 */
bool np_dispatch_stop(void)
{
	unsigned int cpu, ms = 0;

	WRITE_ONCE(np_dispatch_on, false);
	/* Pairs with smp_mb() in np_on_nmi(): it sees off, or we see it in. */
	smp_mb();
	for_each_possible_cpu(cpu) {
		while (READ_ONCE(per_cpu(np_latch_state, cpu)) !=
		       NP_LATCH_NOT_RUNNING) {
			if (ms++ >= NP_DISPATCH_QUIET_MS)
				return false;
			usleep_range(1000, 2000);
		}
	}
	return true;
}

void np_on_nmi(struct pt_regs *regs, u16 flags)
{
	u64 t0;

	if (!np_latch_enter()) {
		this_cpu_inc(np_stats.latched);
		return;
	}
	smp_mb();	/* Pairs with smp_mb() in np_dispatch_stop(). */
	/* Pairs with smp_store_release() in np_dispatch_start(). */
	if (!smp_load_acquire(&np_dispatch_on) || !np_follow_task(current)) {
		while (np_latch_exit_replay())
			;
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
