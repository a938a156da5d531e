// SPDX-License-Identifier: GPL-2.0
/*
 * Latch self-test (module parameter latch_selftest=1, for the QEMU tests).
 *
 * Nested NMIs never reach module code on current kernels: entry_64.S
 * (repeat_nmi) and exc_nmi's own latch replay them first.  The dispatcher
 * latch matters when np_on_nmi() runs outside NMI context and an NMI
 * interrupts it, which is what the hard-lockup watchdog's hrtimer path
 * will do.  This drives exactly that: a per-CPU hard hrtimer calls the
 * dispatcher with its interrupted registers while the sources keep
 * sending NMIs, so some of them land inside it, get latched and replayed
 * (NMIPROF_RF_LATCHED samples, "latched" in the stats).
 */
#include <linux/hrtimer.h>
#include <linux/percpu.h>
#include <linux/moduleparam.h>
#include <asm/irq_regs.h>

#include "dispatch.h"
#include "latch_selftest.h"

static bool latch_selftest;
module_param(latch_selftest, bool, 0444);
MODULE_PARM_DESC(latch_selftest, "Also sample from an hrtimer, to exercise the nesting latch (testing)");

#define NP_SELFTEST_PERIOD_NS	(NSEC_PER_SEC / 500)

static DEFINE_PER_CPU(struct hrtimer, np_selftest_timer);

static enum hrtimer_restart np_selftest_tick(struct hrtimer *timer)
{
	struct pt_regs *regs = get_irq_regs();

	if (regs)
		np_on_nmi(regs, 0);
	hrtimer_forward_now(timer, ns_to_ktime(NP_SELFTEST_PERIOD_NS));
	return HRTIMER_RESTART;
}

/* On @cpu, from the session's cpuhp online callback. */
void np_latch_selftest_cpu_start(int cpu)
{
	struct hrtimer *t = per_cpu_ptr(&np_selftest_timer, cpu);

	if (!latch_selftest)
		return;
	hrtimer_init(t, CLOCK_MONOTONIC, HRTIMER_MODE_REL_PINNED_HARD);
	t->function = np_selftest_tick;
	hrtimer_start(t, ns_to_ktime(NP_SELFTEST_PERIOD_NS),
		      HRTIMER_MODE_REL_PINNED_HARD);
}

void np_latch_selftest_cpu_stop(int cpu)
{
	if (latch_selftest)
		hrtimer_cancel(per_cpu_ptr(&np_selftest_timer, cpu));
}
