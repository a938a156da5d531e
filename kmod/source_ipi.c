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
 * The target tells our NMIs from others' by a request word (nmi_ipi.h).
 * The word belongs to the target, not the pacer, so handing a target to a
 * new pacer keeps it exact.  A tick that finds the last request not yet
 * served sends nothing: the target is still on its way to, or inside,
 * the NMI for it, so it could not take another sample anyway.
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
#include "nmi_ipi.h"
#include "session.h"
#include "source.h"

/* On the pacer: its timer, and the sampled CPU it NMIs (-1: none). */
static DEFINE_PER_CPU(struct hrtimer, np_ipi_timer);
static DEFINE_PER_CPU(int, np_ipi_target);
/* On the target: its nmi_ipi.h request word. */
static DEFINE_PER_CPU(atomic_t, np_ipi_req);
static u64 np_ipi_period_ns;

/*
 * The pacing plan, changed only in process context: the cpuhp callbacks
 * (already serialised by the hotplug lock) and np_ipi_quiesce().
 */
static DEFINE_MUTEX(np_ipi_lock);
static struct cpumask np_ipi_joined;	/* CPUs past np_ipi_cpu_online() */
static bool np_ipi_quiesced;		/* stopping: no more re-pacing */
static bool np_ipi_self_noted;		/* "paces itself" said this session */

static int np_ipi_nmi(unsigned int type, struct pt_regs *regs)
{
	atomic_t *req = this_cpu_ptr(&np_ipi_req);

	if (!np_nmi_ipi_claim(req))
		return NMI_DONE;
	np_on_nmi(regs, 0);
	np_nmi_ipi_done(req);
	return NMI_HANDLED;
}

static enum hrtimer_restart np_ipi_tick(struct hrtimer *timer)
{
	/* Set before this timer was armed, see np_ipi_set(). */
	int target = __this_cpu_read(np_ipi_target);

	if (target < 0)
		return HRTIMER_NORESTART;
	np_nmi_ipi_send(per_cpu_ptr(&np_ipi_req, target), target, 1);
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
	/* Not joined, so no pacer NMIs @cpu yet: start with no request. */
	atomic_set(per_cpu_ptr(&np_ipi_req, cpu), 0);
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

/* All timers are cancelled: let requests already sent be claimed. */
void np_ipi_stop(void)
{
	int cpu;

	for_each_possible_cpu(cpu)
		np_nmi_ipi_drain(per_cpu_ptr(&np_ipi_req, cpu));
	unregister_nmi_handler(NMI_LOCAL, "nmiprof_ipi");
}
