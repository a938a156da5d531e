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
 *
 * Nothing here waits for another CPU, which may be the one stuck with
 * interrupts off: a timer is pinned, so it is armed on its pacer by an
 * asynchronous cross call (smp_call_function_single_async()), which runs
 * whenever the pacer takes interrupts again; it is stopped with
 * hrtimer_try_to_cancel(), and a tick that finds no target (np_ipi_target
 * -1) does not restart, should the cancel have met it running
 * (hrtimer_cancel() would wait for it, and an NMI spinning on top of it).
 * The NMI handler stays registered from load to unload: unregistering
 * waits for an RCU grace period, which a CPU with interrupts off holds
 * off; it claims only requests (nmi_ipi.h), and np_on_nmi() writes
 * nothing between sessions.
 *
 * How often a pacer NMIs its target is bounded by the share of the
 * target's time the handler may take (cpu_time.c).
 *
 * Following a process (follow.c) each sampled CPU paces itself instead,
 * and its tick samples the interrupted context there (get_irq_regs()), as
 * perf's cpu-clock does, when current is followed: the followed process
 * is sampled only while its interrupts are on, but an idle CPU is not
 * woken every period to pace a busy one, nor a busy one interrupted to
 * pace an idle one.  A CPU not running the process ticks every
 * NP_IPI_SLOW periods only, until its tick finds it again: a task that
 * migrates there is sampled at most that much late.
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
#include <asm/irq_regs.h>
#include <asm/nmi.h>

#include "cpu_time.h"
#include "dispatch.h"
#include "follow.h"
#include "nmi_ipi.h"
#include "session.h"
#include "source.h"

/*
 * On the pacer: its timer, the sampled CPU it NMIs (-1: none), the cross
 * call that arms the timer there and how many of those are in flight.
 */
static DEFINE_PER_CPU(struct hrtimer, np_ipi_timer);
static DEFINE_PER_CPU(int, np_ipi_target);
static DEFINE_PER_CPU(call_single_data_t, np_ipi_arm_csd);
static DEFINE_PER_CPU(atomic_t, np_ipi_arm_inflight);
static bool np_ipi_registered;
/* On the target: its nmi_ipi.h request word. */
static DEFINE_PER_CPU(atomic_t, np_ipi_req);
static u64 np_ipi_period_ns;
static bool np_ipi_follow;		/* this session self-paces */

/* A self-pacing CPU that does not run the followed process ticks slower. */
#define NP_IPI_SLOW		8

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
	/* Pairs with WRITE_ONCE() in np_ipi_set(). */
	int target = READ_ONCE(*this_cpu_ptr(&np_ipi_target));
	u64 next;

	if (target < 0)
		return HRTIMER_NORESTART;
	next = READ_ONCE(np_ipi_period_ns);
	if (target == smp_processor_id() && READ_ONCE(np_ipi_follow)) {
		/* Hard irq on target itself: current is what it runs. */
		if (!np_follow_task(current)) {
			next *= NP_IPI_SLOW;
		} else {
			np_on_nmi(get_irq_regs(), 0);
			next = np_cpu_time_interval(target, next);
		}
		hrtimer_forward_now(timer, ns_to_ktime(next));
		return HRTIMER_RESTART;
	}
	np_nmi_ipi_send(per_cpu_ptr(&np_ipi_req, target), target, 1);
	next = np_cpu_time_interval(target, next);
	hrtimer_forward_now(timer, ns_to_ktime(next));
	return HRTIMER_RESTART;
}

/*
 * Cross call on the pacer, hardirq: pins the timer there.  It reads the
 * target as it is when it runs, so one sent long ago (the pacer had
 * interrupts off) does what the plan says now.  In hardirq on the
 * pacer, the tick cannot be running: active means queued.
 */
static void np_ipi_arm(void *unused)
{
	struct hrtimer *t = this_cpu_ptr(&np_ipi_timer);

	if (READ_ONCE(*this_cpu_ptr(&np_ipi_target)) >= 0 && !hrtimer_active(t))
		hrtimer_start(t, ns_to_ktime(READ_ONCE(np_ipi_period_ns)),
			      HRTIMER_MODE_REL_PINNED_HARD);
	/* Pairs with atomic_read_acquire() in np_ipi_exit(). */
	atomic_dec_return_release(this_cpu_ptr(&np_ipi_arm_inflight));
}

/*
 * Have np_ipi_arm() run on @pacer, without waiting.  -EBUSY: the last one
 * has not started yet, and will read the new target when it does.
 */
static void np_ipi_arm_on(int pacer)
{
	atomic_t *inflight = per_cpu_ptr(&np_ipi_arm_inflight, pacer);

	atomic_inc(inflight);
	if (smp_call_function_single_async(pacer,
					   per_cpu_ptr(&np_ipi_arm_csd, pacer)))
		atomic_dec(inflight);
}

/*
 * Make @pacer NMI @target, or nothing when @target is -1, without
 * waiting for @pacer.  @pacer is online: the callers hold the hotplug
 * lock.
 */
static void np_ipi_set(int pacer, int target)
{
	int *cur = per_cpu_ptr(&np_ipi_target, pacer);

	if (*cur == target)
		return;
	/* Pairs with READ_ONCE() in np_ipi_tick() and np_ipi_arm(). */
	WRITE_ONCE(*cur, target);
	if (target < 0)
		hrtimer_try_to_cancel(per_cpu_ptr(&np_ipi_timer, pacer));
	else
		np_ipi_arm_on(pacer);
}

/*
 * Each joined CPU paces the joined CPU before it (wrapping), if that one
 * is sampled; a CPU alone paces itself.  Following a process, each
 * sampled CPU paces itself.  Called with np_ipi_lock held.
 */
static void np_ipi_repace(void)
{
	int cpu, prev = cpumask_last(&np_ipi_joined);
	bool self = false;

	if (np_ipi_follow) {
		for_each_cpu(cpu, &np_ipi_joined)
			np_ipi_set(cpu, cpumask_test_cpu(cpu, np_sess.cpus) ?
					cpu : -1);
		return;
	}
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

/* At load: the timers, and the NMI handler for as long as we are loaded. */
int np_ipi_init(void)
{
	int cpu, ret;

	for_each_possible_cpu(cpu) {
		struct hrtimer *t = per_cpu_ptr(&np_ipi_timer, cpu);

		hrtimer_init(t, CLOCK_MONOTONIC, HRTIMER_MODE_REL_PINNED_HARD);
		t->function = np_ipi_tick;
		per_cpu(np_ipi_target, cpu) = -1;
		INIT_CSD(per_cpu_ptr(&np_ipi_arm_csd, cpu), np_ipi_arm, NULL);
	}
	if (!apic || !apic->send_IPI)
		return 0;	/* np_ipi_start() says so */
	ret = register_nmi_handler(NMI_LOCAL, np_ipi_nmi, 0, "nmiprof_ipi");
	np_ipi_registered = !ret;
	return ret;
}

/* At unload: a CPU that was stuck has long come back, or we wait. */
void np_ipi_exit(void)
{
	int cpu;

	for_each_possible_cpu(cpu) {
		WRITE_ONCE(per_cpu(np_ipi_target, cpu), -1);
		while (atomic_read_acquire(per_cpu_ptr(&np_ipi_arm_inflight,
						       cpu)))
			usleep_range(1000, 2000);
		hrtimer_cancel(per_cpu_ptr(&np_ipi_timer, cpu));
	}
	if (np_ipi_registered)
		unregister_nmi_handler(NMI_LOCAL, "nmiprof_ipi");
}

int np_ipi_start(u32 freq_hz)
{
	if (!np_ipi_registered)
		return -ENODEV;
	/* A tick of the last session still running reads either. */
	WRITE_ONCE(np_ipi_period_ns, NSEC_PER_SEC / freq_hz);
	/* Pairs with READ_ONCE() in np_ipi_tick(), as the period. */
	WRITE_ONCE(np_ipi_follow, READ_ONCE(np_follow_tgid) != 0);
	np_cpu_time_reset();
	cpumask_clear(&np_ipi_joined);
	np_ipi_quiesced = false;
	np_ipi_self_noted = false;
	return 0;
}

/*
 * For every CPU, sampled or not: from the cpuhp callback on @cpu as it
 * comes online (@hotplug), or from np_session_start() for one already
 * online, which may not be answering.
 */
void np_ipi_cpu_online(int cpu, bool hotplug)
{
	mutex_lock(&np_ipi_lock);
	/*
	 * Coming up, it has no NMI of ours in flight: start with no request.
	 * One already online may have: the NMI still claims it.
	 */
	if (hotplug)
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
