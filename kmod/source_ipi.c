// SPDX-License-Identifier: GPL-2.0
/*
 * IPI source, for machines without a usable PMU: every sampled CPU runs a
 * hard hrtimer at freq_hz that sends an NMI IPI to its buddy, the next
 * sampled online CPU (itself when it is the only one).  The buddy's
 * NMI_LOCAL handler samples its own interrupted context, so CPUs that
 * spin with interrupts off are still sampled, as long as their buddy's
 * timer runs.
 *
 * An NMI carries no payload, so the sender raises the target's pending
 * count first and the target claims an NMI only when it finds the count
 * non-zero; NMIs of other users are never taken.
 *
 * apic->send_IPI(cpu, NMI_VECTOR) is used rather than send_IPI_mask(): the
 * x2APIC cluster mask path uses a per-CPU scratch cpumask that the timer
 * interrupt could race with.
 */
#include <linux/hrtimer.h>
#include <linux/percpu.h>
#include <linux/cpumask.h>
#include <linux/delay.h>
#include <linux/atomic.h>
#include <linux/ktime.h>
#include <asm/apic.h>
#include <asm/nmi.h>

#include "dispatch.h"
#include "session.h"
#include "source.h"

static DEFINE_PER_CPU(struct hrtimer, np_ipi_timer);
static DEFINE_PER_CPU(atomic_t, np_ipi_pending);	/* IPIs sent, unclaimed */
static DEFINE_PER_CPU(int, np_ipi_owed);		/* see np_ipi_nmi() */
static DEFINE_PER_CPU(u64, np_ipi_owed_until);
static struct cpumask np_ipi_cpus;	/* CPUs whose timer runs */
static u64 np_ipi_period_ns;

/*
 * Claim every IPI counted so far and sample once.  When that was more than
 * one IPI, the NMIs of the others may have collapsed into this one (a CPU
 * latches at most one pending NMI) or may still be on their way (the
 * sender counts before it writes the ICR, and a vCPU can stall in
 * between); such a late NMI finds no count.  It is ours, so np_ipi_owed
 * lets that many through as handled, without a sample, for a short time:
 * the kernel's back-to-back "swallow" logic, without requiring the late
 * NMI to hit the same instruction.  Owed NMIs that collapsed never come;
 * the deadline keeps them from hiding a genuine unknown NMI for long.
 * This only matters at rates where NMIs pile up (or in emulators).
 */
#define NP_IPI_OWED_NS	(50 * NSEC_PER_MSEC)

static int np_ipi_nmi(unsigned int type, struct pt_regs *regs)
{
	atomic_t *pending = this_cpu_ptr(&np_ipi_pending);
	int n = 0;

	/* Cheap test first: this handler sees every NMI_LOCAL NMI. */
	if (atomic_read(pending))
		n = atomic_xchg(pending, 0);
	if (n) {
		if (n > 1) {
			this_cpu_add(np_ipi_owed, n - 1);
			this_cpu_write(np_ipi_owed_until,
				       ktime_get_mono_fast_ns() + NP_IPI_OWED_NS);
		}
		np_on_nmi(regs, 0);
		return NMI_HANDLED;
	}
	/*
	 * With external sampling on, an NMI nobody claims is sampled by
	 * source_ext.c anyway, so never guess: a late IPI NMI then counts as
	 * external rather than hiding a real external one.
	 */
	if (!this_cpu_read(np_ipi_owed) || np_sess.external)
		return NMI_DONE;
	if (ktime_get_mono_fast_ns() > this_cpu_read(np_ipi_owed_until)) {
		this_cpu_write(np_ipi_owed, 0);
		return NMI_DONE;
	}
	this_cpu_dec(np_ipi_owed);
	return NMI_HANDLED;
}

static int np_ipi_buddy(int cpu)
{
	int next = cpumask_next(cpu, &np_ipi_cpus);

	if (next >= nr_cpu_ids)
		next = cpumask_first(&np_ipi_cpus);
	return next;
}

static enum hrtimer_restart np_ipi_tick(struct hrtimer *timer)
{
	int buddy = np_ipi_buddy(smp_processor_id());

	if (buddy < nr_cpu_ids) {
		atomic_inc(per_cpu_ptr(&np_ipi_pending, buddy));
		/* Pairs with atomic_xchg() in np_ipi_nmi(): the count is
		 * visible before the NMI can arrive.
		 */
		smp_mb__after_atomic();
		apic->send_IPI(buddy, NMI_VECTOR);
	}
	hrtimer_forward_now(timer, ns_to_ktime(np_ipi_period_ns));
	return HRTIMER_RESTART;
}

int np_ipi_start(void)
{
	if (!apic || !apic->send_IPI)
		return -ENODEV;
	cpumask_clear(&np_ipi_cpus);
	return register_nmi_handler(NMI_LOCAL, np_ipi_nmi, 0, "nmiprof_ipi");
}

/* Runs on @cpu (cpuhp online callback), so the timer is pinned there. */
void np_ipi_cpu_start(int cpu, u32 freq_hz)
{
	struct hrtimer *t = per_cpu_ptr(&np_ipi_timer, cpu);

	np_ipi_period_ns = NSEC_PER_SEC / freq_hz;
	atomic_set(per_cpu_ptr(&np_ipi_pending, cpu), 0);
	per_cpu(np_ipi_owed, cpu) = 0;
	cpumask_set_cpu(cpu, &np_ipi_cpus);
	hrtimer_init(t, CLOCK_MONOTONIC, HRTIMER_MODE_REL_PINNED_HARD);
	t->function = np_ipi_tick;
	hrtimer_start(t, ns_to_ktime(np_ipi_period_ns),
		      HRTIMER_MODE_REL_PINNED_HARD);
}

/* Runs on @cpu while it is still online (cpuhp teardown). */
void np_ipi_cpu_stop(int cpu)
{
	cpumask_clear_cpu(cpu, &np_ipi_cpus);
	hrtimer_cancel(per_cpu_ptr(&np_ipi_timer, cpu));
}

/*
 * All timers are cancelled.  Let every IPI already sent be claimed before
 * the handler goes, or it would be reported as an unknown NMI.  A target
 * that went offline meanwhile never claims; give up on it after 100 ms.
 */
void np_ipi_stop(void)
{
	int cpu, tries;

	for_each_possible_cpu(cpu) {
		atomic_t *pending = per_cpu_ptr(&np_ipi_pending, cpu);

		for (tries = 0; tries < 100 && atomic_read(pending); tries++)
			usleep_range(1000, 2000);
		atomic_set(pending, 0);
	}
	/* NMIs still owed arrive within microseconds on hardware; give an
	 * emulator's stalled vCPU some slack too.
	 */
	msleep(20);
	unregister_nmi_handler(NMI_LOCAL, "nmiprof_ipi");
}
