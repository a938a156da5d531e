// SPDX-License-Identifier: GPL-2.0
/*
 * IPI source, for machines without a usable PMU: a hard hrtimer on a
 * pacer CPU sends an NMI IPI to the sampled CPU it paces, whose NMI_LOCAL
 * handler then samples its own interrupted context.  Sampling that way
 * sees code running with interrupts off, which no timer interrupt can.
 *
 * That only holds when the timer runs on another CPU: a CPU pacing itself
 * cannot take its timer interrupt while it has interrupts off, and its
 * samples land in its own timer and send_IPI code.  So who paces and who
 * is sampled are separate: every sampled CPU is paced by the next online
 * CPU (wrapping), sampled or not.  Mapping each online CPU to the next one
 * is a rotation, so a CPU paces at most one target and needs one timer.
 * Only a CPU that is alone online paces itself; that is said once in dmesg.
 *
 * The pacers follow CPU hotplug: the session's cpuhp callbacks call
 * np_ipi_cpu_online() and np_ipi_cpu_offline() for every CPU, sampled or
 * not, and each recomputes the rotation over the CPUs that have joined.
 * A timer is pinned, so it is armed on its pacer through
 * smp_call_function_single(); cancelling works from anywhere.
 *
 * An NMI carries no payload, so the sender raises the target's pending
 * count first and the target claims an NMI only when it finds the count
 * non-zero; NMIs of other users are never taken.  The count belongs to
 * the target, not the pacer, so handing a target to a new pacer keeps it
 * exact.
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
#include <linux/mutex.h>
#include <linux/smp.h>
#include <asm/apic.h>
#include <asm/nmi.h>

#include "dispatch.h"
#include "session.h"
#include "source.h"

/* On the pacer: its timer, and the sampled CPU it NMIs (-1: none). */
static DEFINE_PER_CPU(struct hrtimer, np_ipi_timer);
static DEFINE_PER_CPU(int, np_ipi_target);
/* On the target. */
static DEFINE_PER_CPU(atomic_t, np_ipi_pending);	/* IPIs sent, unclaimed */
static DEFINE_PER_CPU(int, np_ipi_owed);		/* see np_ipi_nmi() */
static DEFINE_PER_CPU(u64, np_ipi_owed_until);
static u64 np_ipi_period_ns;

/*
 * The pacing plan, changed only in process context: the cpuhp callbacks
 * (already serialised by the hotplug lock) and np_ipi_quiesce().
 */
static DEFINE_MUTEX(np_ipi_lock);
static struct cpumask np_ipi_joined;	/* CPUs past np_ipi_cpu_online() */
static bool np_ipi_quiesced;		/* stopping: no more re-pacing */
static bool np_ipi_self_noted;		/* "paces itself" said this session */

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

	/*
	 * Cheap test first: this handler sees every NMI_LOCAL NMI.  The
	 * xchg pairs with send_IPI() in np_ipi_tick().
	 */
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

static enum hrtimer_restart np_ipi_tick(struct hrtimer *timer)
{
	/* Set before this timer was armed, see np_ipi_set(). */
	int target = __this_cpu_read(np_ipi_target);

	if (target < 0)
		return HRTIMER_NORESTART;
	atomic_inc(per_cpu_ptr(&np_ipi_pending, target));
	/*
	 * Pairs with atomic_xchg() in np_ipi_nmi(): send_IPI() makes the
	 * count visible before the NMI, see np_wd_raise() in watchdog.c.
	 */
	apic->send_IPI(target, NMI_VECTOR);
	hrtimer_forward_now(timer, ns_to_ktime(np_ipi_period_ns));
	return HRTIMER_RESTART;
}

/* On the pacer, from smp_call_function_single(): pins the timer there. */
static void np_ipi_arm(void *unused)
{
	hrtimer_start(this_cpu_ptr(&np_ipi_timer),
		      ns_to_ktime(np_ipi_period_ns),
		      HRTIMER_MODE_REL_PINNED_HARD);
}

/* Make @pacer NMI @target, or nothing when @target is -1. */
static void np_ipi_set(int pacer, int target)
{
	int *cur = per_cpu_ptr(&np_ipi_target, pacer);

	if (*cur == target)
		return;
	/* Waits for a running np_ipi_tick(): none reads *cur below. */
	hrtimer_cancel(per_cpu_ptr(&np_ipi_timer, pacer));
	*cur = target;
	/*
	 * The cross call orders the write above before np_ipi_arm() runs
	 * on @pacer, so the tick it arms reads the new target.
	 */
	if (target >= 0)
		smp_call_function_single(pacer, np_ipi_arm, NULL, 1);
}

/*
 * Each joined CPU paces the joined CPU before it (wrapping), if that one
 * is sampled; a CPU alone paces itself.  Called with np_ipi_lock held.
 */
static void np_ipi_repace(void)
{
	int cpu, prev = cpumask_last(&np_ipi_joined);
	bool self = false;

	for_each_cpu(cpu, &np_ipi_joined) {
		np_ipi_set(cpu, cpumask_test_cpu(prev, np_sess.cpus) ?
				prev : -1);
		self |= cpu == prev && cpumask_test_cpu(cpu, np_sess.cpus);
		prev = cpu;
	}
	/*
	 * Say so only when it lasts: setting up the session joins the
	 * online CPUs one after another, so the first one is briefly alone
	 * until the next joins.  Those are still active; a CPU going down
	 * is inactive before its teardown here, and one coming up joins
	 * before it is active.
	 */
	if (self && !np_ipi_self_noted &&
	    cpumask_subset(cpu_active_mask, &np_ipi_joined)) {
		pr_info("nmiprof: cpu %d is the only online CPU and paces itself: it is not sampled while its interrupts are off\n",
			cpumask_first(&np_ipi_joined));
		np_ipi_self_noted = true;
	}
}

int np_ipi_start(u32 freq_hz)
{
	int cpu;

	if (!apic || !apic->send_IPI)
		return -ENODEV;
	np_ipi_period_ns = NSEC_PER_SEC / freq_hz;
	/* No timer of ours runs: the last session cancelled them all. */
	for_each_possible_cpu(cpu) {
		struct hrtimer *t = per_cpu_ptr(&np_ipi_timer, cpu);

		hrtimer_init(t, CLOCK_MONOTONIC, HRTIMER_MODE_REL_PINNED_HARD);
		t->function = np_ipi_tick;
		per_cpu(np_ipi_target, cpu) = -1;
	}
	cpumask_clear(&np_ipi_joined);
	np_ipi_quiesced = false;
	np_ipi_self_noted = false;
	return register_nmi_handler(NMI_LOCAL, np_ipi_nmi, 0, "nmiprof_ipi");
}

/* Runs on @cpu (cpuhp online callback), for every CPU, sampled or not. */
void np_ipi_cpu_online(int cpu)
{
	mutex_lock(&np_ipi_lock);
	/* Not joined, so no pacer NMIs @cpu yet: start from a clean count. */
	atomic_set(per_cpu_ptr(&np_ipi_pending, cpu), 0);
	per_cpu(np_ipi_owed, cpu) = 0;
	cpumask_set_cpu(cpu, &np_ipi_joined);
	if (!np_ipi_quiesced)
		np_ipi_repace();
	mutex_unlock(&np_ipi_lock);
}

/*
 * Runs on @cpu while it is still online (cpuhp teardown).  Its own timer
 * stops, whoever paced it stops, and the CPU it paced gets the next one.
 */
void np_ipi_cpu_offline(int cpu)
{
	mutex_lock(&np_ipi_lock);
	cpumask_clear_cpu(cpu, &np_ipi_joined);
	np_ipi_set(cpu, -1);
	if (!np_ipi_quiesced)
		np_ipi_repace();
	mutex_unlock(&np_ipi_lock);
}

/*
 * Before the session's cpuhp state is removed: stop every timer at once,
 * so the teardown of one CPU after another does not hand targets around
 * (and a last CPU standing does not claim to pace itself).
 */
void np_ipi_quiesce(void)
{
	int cpu;

	mutex_lock(&np_ipi_lock);
	np_ipi_quiesced = true;
	for_each_cpu(cpu, &np_ipi_joined)
		np_ipi_set(cpu, -1);
	mutex_unlock(&np_ipi_lock);
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
