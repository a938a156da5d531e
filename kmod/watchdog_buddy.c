// SPDX-License-Identifier: GPL-2.0
/*
 * Who checks whose heartbeat (watchdog.c has the heartbeats themselves).
 *
 * From its timer, every watched CPU checks its buddy, the next watched
 * CPU (as in kernel/watchdog_buddy.c), and past a stuck buddy the next
 * one.  From an NMI that came from outside, a CPU checks all the others.
 * A CPU found stale is sent our NMI, once per episode, and reports itself
 * from it; one that never answers is reported by its checker.
 */
#include <linux/cpumask.h>
#include <linux/percpu.h>
#include <linux/ktime.h>
#include <linux/sched.h>
#include <linux/spinlock.h>
#include <linux/timekeeping.h>

#include "lockup_report.h"
#include "nmi_ipi.h"
#include "watchdog_cpu.h"

static unsigned int np_wd_buddy(unsigned int cpu)
{
	unsigned int next = cpumask_next(cpu, &np_wd_active);

	if (next >= nr_cpu_ids)
		next = cpumask_first(&np_wd_active);
	return next == cpu ? nr_cpu_ids : next;
}

/*
 * Send @cpu our NMI, once per episode: the first checker to move it from
 * KICK_NONE does, whether a buddy's timer or an external NMI's sweep.
 */
static void np_wd_kick(unsigned int cpu)
{
	struct np_wd_cpu *b = per_cpu_ptr(&np_wd, cpu);

	if (atomic_cmpxchg(&b->kicked, NP_WD_KICK_NONE,
			   NP_WD_KICK_SENT) != NP_WD_KICK_NONE)
		return;		/* another checker got there first */
	np_nmi_ipi_send(&b->nmi_req, cpu, 1);
}

/* Hardirq context: the report waits for the UART, we are not stuck. */
static void np_wd_report_silent(unsigned int cpu, s64 age, bool at_least)
{
	struct np_wd_cpu *w = this_cpu_ptr(&np_wd);
	u64 held = np_wd_hold(w);

	np_report_silent(cpu, age, at_least);
	np_wd_release(w, held);
}

/*
 * Check one CPU's heartbeat; true if it is late (stuck).
 *
 * A vCPU the host has preempted runs nothing, with interrupts off or
 * on: it is late, not stuck, and from then on only the time it runs
 * counts (np_wd_seen()).  So one the host preempts inside an irqs-off
 * region is reported only if it then runs with interrupts off for a
 * threshold less the preemption no check saw, under a period.  That is
 * the one paravirt signal a module has.  The kernel's own hard-lockup
 * detectors (watchdog_hld.c in 6.1, watchdog_perf.c and
 * watchdog_buddy.c in 6.12) use none, and KVM guests turn them off for
 * these false positives (kvm_guest_init()).  The steal clock would
 * measure the preemption exactly, from the stuck CPU's NMI, but neither
 * kernel exports it (the pv_steal_clock static call, KVM's steal_time),
 * and the kcpustat steal time is accounted by the CPU's own tick, after
 * the fact.  kvm_check_and_clear_guest_paused(), which the soft-lockup
 * detector calls, only sees a VM the host paused (handled by the
 * checker that did not run, np_wd_timer_fn()), is not exported, and
 * clears the flag the kernel's own detector reads.
 */
static bool np_wd_check(unsigned int buddy, u64 now)
{
	struct np_wd_cpu *b = per_cpu_ptr(&np_wd, buddy);
	bool held = READ_ONCE(b->held);
	s64 age;

	/*
	 * Pairs with smp_mb__before_atomic() in np_wd_cpu_sync() and with
	 * smp_wmb() in np_wd_release(): no longer held, credited.
	 */
	smp_rmb();
	age = now - np_wd_seen(b);
	if (age <= (s64)np_wd_thresh_ns)
		return false;
	if (held)
		return true;	/* in our own report code: it answers */

	/* Pairs with smp_store_release() in np_wd_self_check(). */
	switch (smp_load_acquire(&b->state)) {
	case NP_WD_REPORTED:
		np_wd_trace_lockup(b, buddy);
		return true;
	case NP_WD_REPORTING:
		/* It answered: still writing, or waiting for the port. */
		return true;
	}
	if (vcpu_is_preempted(buddy)) {
		WRITE_ONCE(b->preempted_ns, now);
		return true;
	}
	switch (atomic_read(&b->kicked)) {
	case NP_WD_KICK_NONE:
		np_wd_kick(buddy);
		break;
	case NP_WD_KICK_SENT:
		/*
		 * No report a threshold after our NMI: the CPU does not take
		 * NMIs (it is stuck in an NMI handler, or in firmware).  Say
		 * so from here; only it could read its registers and stack.
		 */
		if (age <= 2 * (s64)np_wd_thresh_ns)
			break;
		/* b is stuck outside our code: its episode is ours to set. */
		b->since_ns = now - age;
		/* From the restart or a sight of it preempted: no heartbeat. */
		b->since_start = READ_ONCE(b->beat_start) ||
				 b->since_ns != READ_ONCE(b->beat_ns);
		/* Pairs with atomic_xchg() in np_wd_timer_fn(). */
		if (atomic_cmpxchg(&b->kicked, NP_WD_KICK_SENT,
				   NP_WD_KICK_SILENT) == NP_WD_KICK_SENT)
			np_wd_report_silent(buddy, age, b->since_start);
		break;
	}
	return true;
}

/*
 * Check our buddy and, past it, every CPU whose own checker is stuck: a
 * CPU with interrupts off checks nobody, so a chain of stuck CPUs would
 * leave all but its first unreported (seen: a CPU stuck holding a serial
 * port's lock, and its checker spinning on that lock).  Several checkers
 * may then look at one CPU; the kicked state makes one of them act.
 */
void np_wd_check_buddies(int cpu, u64 now)
{
	unsigned int buddy = cpu, n;

	/*
	 * Bounded by the number of CPUs, not by coming back to @cpu: a timer
	 * that fires while its CPU is being taken out of np_wd_active (cpuhp
	 * teardown clears the bit before it cancels the timer) never does.
	 */
	for (n = 0; n < nr_cpu_ids; n++) {
		buddy = np_wd_buddy(buddy);
		if (buddy >= nr_cpu_ids || buddy == cpu)
			return;
		if (!np_wd_check(buddy, now))
			return;		/* alive: it checks its own buddy */
	}
}

/*
 * NMI context, after an NMI from outside: kick every other watched CPU
 * whose heartbeat is stale into reporting itself.  When every CPU runs
 * with interrupts off no timer checks anyone, and an external NMI (a BMC
 * watchdog's pre-timeout, an NMI button, a hypervisor's injection) lands
 * on one CPU only; without this, only that CPU would speak.  np_wd_kick()
 * keeps it to one NMI per CPU and episode however many arrive.
 */
void np_wd_sweep(int self)
{
	u64 now = ktime_get_mono_fast_ns();
	unsigned int cpu;

	for_each_cpu(cpu, &np_wd_active) {
		struct np_wd_cpu *b = per_cpu_ptr(&np_wd, cpu);

		if (cpu == self || READ_ONCE(b->held) ||
		    (s64)(now - READ_ONCE(b->beat_ns)) <= (s64)np_wd_thresh_ns ||
		    READ_ONCE(b->state) != NP_WD_OK)
			continue;
		np_wd_kick(cpu);
	}
}

