// SPDX-License-Identifier: GPL-2.0
/*
 * Hard-lockup watchdog: heartbeats, the NMI self-check, start and stop.
 * Who checks whose heartbeat is in watchdog_buddy.c.
 *
 * Every watched CPU runs a pinned hrtimer with period threshold * 2 / 5,
 * the kernel watchdog's ratio.  Its callback stamps the CPU's heartbeat
 * and then looks at its buddy, the next watched CPU (as in
 * kernel/watchdog_buddy.c), and past a stuck buddy at the next one: a
 * buddy whose heartbeat is older than the threshold has not taken a timer
 * interrupt for that long, so it runs with interrupts off.  The checker
 * sends it an NMI IPI, with a request (nmi_ipi.h) that tells the NMI is
 * ours; NMI_LOCAL handlers must never claim other users' NMIs.  In NMI
 * the stuck CPU checks its own heartbeat again and, if still stale,
 * reports itself: only it has its registers and its stack.
 *
 * Any other NMI on a CPU runs the same self-check: PMU NMIs (the kernel's
 * perf watchdog, nmiprof's own PMU source) through the NMI_LOCAL chain,
 * where every handler is called, and unclaimed ones through NMI_UNKNOWN.
 * Neither is claimed by the self-check.  An unclaimed NMI comes from
 * outside (a BMC, an NMI button, a hypervisor) and is the only way in
 * when every CPU is stuck, so it also sends our NMI to every other CPU
 * whose heartbeat is stale: each stuck CPU then reports itself.
 *
 * A report needs the CPU caught with interrupts disabled: with IF set in
 * the interrupted context the heartbeat was late because the CPU did not
 * run (a hypervisor preempted it), not because it ignores interrupts.
 * For the same reason a checker that did not run for a threshold itself
 * judges nobody on its first tick back.  A CPU that does not answer the
 * NMI within another threshold (stuck in an NMI handler, or in firmware)
 * is reported by its buddy, without registers.
 *
 * An episode is reported once.  The CPU's next heartbeat ends it: the
 * recovery line, a NMIPROF_LF_RECOVERED record and the trace events are
 * written from its hrtimer callback, never from NMI.  A healthy buddy
 * emits the lockup trace event as soon as the report is written, for a
 * CPU that never comes back.
 *
 * touch_nmi_watchdog() is honoured through a kprobe on the exported
 * arch_touch_nmi_watchdog(): the flag it sets is static to kernel/watchdog.c
 * (6.12) or kernel/watchdog_hld.c (6.1), so the call is all a module can
 * observe.  A touch counts as a heartbeat.
 *
 * Starting and stopping wait for no CPU: the one that matters is the one
 * stuck with interrupts off, and SET_WATCHDOG must not hang with it.  Each
 * CPU has what the watchdog wants there (np_wd_want).  Stopping clears it
 * and takes the CPU out of np_wd_active at once, and cancels its timer
 * with hrtimer_try_to_cancel(); a tick that finds itself unwanted does
 * not restart, should the cancel have met it running.  Starting puts
 * the CPU in np_wd_active at once, its heartbeat counting from then, so
 * that a CPU stuck across a restart is reported a threshold later.  A
 * pinned timer starts on its own CPU, from an asynchronous cross call
 * that does what np_wd_want says when it runs, and first ends an episode
 * the CPU was reported in: a stuck CPU catches up when it comes back.
 * Time a CPU spends in our own report code, waiting for the UART, does
 * not count against its heartbeat (np_wd_hold()).  The NMI handlers and
 * the cpuhp state (for CPUs coming and going, whose
 * callbacks run on that CPU) stay from load to unload: unregistering
 * waits for an RCU grace period, which a CPU with interrupts off holds
 * off.  Buddies are recomputed on every check from np_wd_active.  The
 * ioctl restarts with the new settings; a pm notifier stops the watchdog
 * across suspend and hibernation and starts it afresh, with new
 * heartbeats, afterwards.
 */
#define pr_fmt(fmt) "nmiprof: " fmt

#include <linux/atomic.h>
#include <linux/capability.h>
#include <linux/cpu.h>
#include <linux/cpuhotplug.h>
#include <linux/cpumask.h>
#include <linux/delay.h>
#include <linux/hrtimer.h>
#include <linux/kernel.h>
#include <linux/kprobes.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/percpu.h>
#include <linux/sched.h>
#include <linux/sched/isolation.h>
#include <linux/smp.h>
#include <linux/spinlock.h>
#include <linux/suspend.h>
#include <linux/timekeeping.h>
#include <linux/uaccess.h>
#include <asm/apic.h>
#include <asm/nmi.h>
#include <nmiprof/nmiprof_abi.h>

#include "lockup_report.h"
#include "nmi_ipi.h"
#include "watchdog.h"
#include "watchdog_cpu.h"

#define CREATE_TRACE_POINTS
#include "trace_lockup.h"

static bool watchdog = true;
module_param(watchdog, bool, 0444);
MODULE_PARM_DESC(watchdog, "Hard-lockup watchdog at load (default on)");

static unsigned int watchdog_thresh = 10;
module_param(watchdog_thresh, uint, 0444);
MODULE_PARM_DESC(watchdog_thresh, "Seconds with interrupts off that make a hard lockup (default 10)");

static char *watchdog_cpus;
module_param(watchdog_cpus, charp, 0444);
MODULE_PARM_DESC(watchdog_cpus, "CPUs to watch, a cpulist (default: the housekeeping CPUs, all but nohz_full ones)");

static bool watchdog_all_cpu_backtrace;
module_param(watchdog_all_cpu_backtrace, bool, 0444);
MODULE_PARM_DESC(watchdog_all_cpu_backtrace, "On a lockup, every CPU prints its backtrace");

static bool watchdog_panic;
module_param(watchdog_panic, bool, 0444);
MODULE_PARM_DESC(watchdog_panic, "Panic after the lockup report");

/* How long a panicking CPU waits for the other CPUs' backtraces. */
#define NP_WD_BT_WAIT_MS	10000

DEFINE_PER_CPU(struct np_wd_cpu, np_wd);

/* Settings, written under np_wd_mutex while the watchdog is stopped. */
static struct {
	bool		enabled;
	unsigned int	thresh_s;
	u32		flags;		/* NMIPROF_WF_* */
	struct cpumask	cpus;		/* CPUs to watch when online */
} np_wd_cfg;

static DEFINE_MUTEX(np_wd_mutex);	/* np_wd_cfg, start and stop */
static bool np_wd_running;		/* also under the hotplug lock */
static bool np_wd_suspended;		/* stopped by the pm notifier */
static int np_wd_hp_state;

/*
 * Read by timers and NMIs; ordered by the cross call that starts a timer.
 * One left running from the last start (np_wd_want_cpu()) may read either.
 */
u64 np_wd_thresh_ns;
static u64 np_wd_period_ns;
static u32 np_wd_flags;
struct cpumask np_wd_active;

/*
 * Per CPU: whether the watchdog wants its timer running, and the cross
 * call that makes it so there.  @lock orders a remote stop against that
 * call: it never sets np_wd_active after the stop cleared it.
 */
struct np_wd_ctl {
	raw_spinlock_t		lock;
	bool			want;
	call_single_data_t	csd;
	atomic_t		inflight;	/* cross calls not finished */
};

static DEFINE_PER_CPU(struct np_wd_ctl, np_wd_ctl);

/* hrtimer context, for a CPU whose report is written (state REPORTED). */
void np_wd_trace_lockup(struct np_wd_cpu *w, int cpu)
{
	if (atomic_xchg(&w->traced, 1))
		return;
	trace_lockup(cpu, w->pid, w->comm, w->ip, w->stuck_ns, false);
}

static void np_wd_recovered(struct np_wd_cpu *w, int cpu, u64 now)
{
	u64 episode = now - w->since_ns;
	u64 held = np_wd_hold(w);

	np_wd_trace_lockup(w, cpu);
	np_report_recovered(episode, w->since_start, w->tgid, w->pid, w->comm);
	trace_lockup(cpu, w->pid, w->comm, w->ip, episode, true);
	WRITE_ONCE(w->state, NP_WD_OK);
	np_wd_release(w, held);
}

/* Hardirq context, on the CPU: end the episode it was reported in, if any. */
static void np_wd_episode_end(struct np_wd_cpu *w, int cpu, u64 now)
{
	int kick = atomic_xchg(&w->kicked, NP_WD_KICK_NONE);
	u64 held;

	if (READ_ONCE(w->state) == NP_WD_REPORTED) {
		np_wd_recovered(w, cpu, now);
	} else if (kick == NP_WD_KICK_SILENT) {
		held = np_wd_hold(w);
		np_report_recovered(now - w->since_ns, w->since_start, 0, 0,
				    NULL);
		np_wd_release(w, held);
	}
}

static enum hrtimer_restart np_wd_timer_fn(struct hrtimer *timer)
{
	struct np_wd_cpu *w = this_cpu_ptr(&np_wd);
	int cpu = smp_processor_id();
	u64 now = ktime_get_mono_fast_ns();
	u64 prev = w->beat_ns;

	/* Stopped while queued or running: np_wd_want_cpu(). */
	if (!READ_ONCE(this_cpu_ptr(&np_wd_ctl)->want))
		return HRTIMER_NORESTART;
	/*
	 * The heartbeat first: from here on our own NMI self-check finds
	 * us alive, so an episode can only end, not start, below.
	 */
	WRITE_ONCE(w->beat_ns, now);
	WRITE_ONCE(w->beat_start, false);
	np_wd_episode_end(w, cpu, now);

	/*
	 * A checker that did not run for a threshold itself (a paused or
	 * preempted VM, or it was the stuck one) has no fresh view of its
	 * buddy: everybody's heartbeat is late.  Judge next period.
	 */
	if (now - prev <= np_wd_thresh_ns)
		np_wd_check_buddies(cpu, now);
	hrtimer_forward_now(timer, ns_to_ktime(np_wd_period_ns));
	return HRTIMER_RESTART;
}

/*
 * Panic only once the other CPUs have printed their backtraces (each
 * clears its request when done), or time is up.
 */
static void np_wd_wait_backtraces(void)
{
	unsigned int ms, cpu;

	for (ms = 0; ms < NP_WD_BT_WAIT_MS; ms++) {
		for_each_online_cpu(cpu)
			if (atomic_read(&per_cpu_ptr(&np_wd, cpu)->bt_req))
				break;
		if (cpu >= nr_cpu_ids)
			return;
		mdelay(1);
	}
}

/* NMI context: every other online CPU appends its own backtrace. */
static void np_wd_request_backtraces(int self)
{
	unsigned int cpu;

	for_each_online_cpu(cpu)
		if (cpu != self)
			np_nmi_ipi_send(&per_cpu_ptr(&np_wd, cpu)->bt_req, cpu,
					self + 1);
}

/* NMI context, on any NMI: is this CPU the one that is stuck? */
static void np_wd_self_check(struct pt_regs *regs)
{
	struct np_wd_cpu *w = this_cpu_ptr(&np_wd);
	int cpu = smp_processor_id();
	u64 beat, now;
	s64 age;

	if (!cpumask_test_cpu(cpu, &np_wd_active) ||
	    READ_ONCE(w->state) != NP_WD_OK ||
	    atomic_read(&w->kicked) == NP_WD_KICK_SILENT)
		return;			/* not watched, or already reported */
	if (w->held)
		return;			/* interrupted our own report code */
	beat = READ_ONCE(w->beat_ns);
	now = ktime_get_mono_fast_ns();
	if ((s64)(now - np_wd_seen(w)) <= (s64)np_wd_thresh_ns)
		return;
	age = now - beat;
	/*
	 * Interrupts are on where we interrupted: a pending timer interrupt
	 * is taken as soon as we return, so this is no hard lockup.  The
	 * heartbeat was late because this CPU did not run at all (a
	 * hypervisor preempted it) or has only just re-enabled interrupts.
	 * Let the buddy ask again next period if it stays late.
	 */
	if (!regs_irqs_disabled(regs)) {
		atomic_cmpxchg(&w->kicked, NP_WD_KICK_SENT, NP_WD_KICK_NONE);
		return;
	}

	/* No second report from a nested NMI. */
	WRITE_ONCE(w->state, NP_WD_REPORTING);
	w->since_ns = beat;
	w->since_start = READ_ONCE(w->beat_start);
	w->stuck_ns = age;
	w->ip = instruction_pointer(regs);
	w->tgid = task_tgid_nr(current);
	w->pid = task_pid_nr(current);
	memcpy(w->comm, current->comm, sizeof(w->comm));
	atomic_set(&w->traced, 0);

	np_report_lockup(regs, age, w->since_start);
	/* Pairs with smp_load_acquire() in np_wd_check(). */
	smp_store_release(&w->state, NP_WD_REPORTED);

	if (np_wd_flags & NMIPROF_WF_ALL_CPU_BT)
		np_wd_request_backtraces(cpu);
	if (np_wd_flags & NMIPROF_WF_PANIC) {
		if (np_wd_flags & NMIPROF_WF_ALL_CPU_BT)
			np_wd_wait_backtraces();
		nmi_panic(regs, "nmiprof: hard LOCKUP");
	}
}

/*
 * Sees every NMI_LOCAL NMI.  Returns how many of our own requests it
 * claimed (nmi_ipi.h), so the NMI core can tell two that merged into one
 * NMI from an unknown one (its swallow logic).
 */
static int np_wd_nmi(unsigned int type, struct pt_regs *regs)
{
	struct np_wd_cpu *w = this_cpu_ptr(&np_wd);
	int handled = 0, bt;

	if (np_nmi_ipi_claim(&w->nmi_req))
		handled++;
	np_wd_self_check(regs);
	if (handled)
		np_nmi_ipi_done(&w->nmi_req);
	bt = np_nmi_ipi_claim(&w->bt_req);
	if (bt) {
		u64 held = np_wd_hold(w);

		np_report_backtrace(regs, bt - 1);
		np_wd_release(w, held);
		np_nmi_ipi_done(&w->bt_req);
		handled++;
	}
	return handled;
}

/*
 * Unclaimed NMIs: check ourselves and sweep the others; never claimed,
 * the kernel reports them (and panics on them if so configured).
 */
static int np_wd_unknown_nmi(unsigned int type, struct pt_regs *regs)
{
	int cpu = smp_processor_id();

	np_wd_self_check(regs);
	if (cpumask_test_cpu(cpu, &np_wd_active))
		np_wd_sweep(cpu);
	return NMI_DONE;
}

/* touch_nmi_watchdog(): the caller knows it runs long with irqs off. */
static int np_wd_touch(struct kprobe *p, struct pt_regs *regs)
{
	raw_cpu_write(np_wd.beat_ns, ktime_get_mono_fast_ns());
	raw_cpu_write(np_wd.beat_start, false);
	return 0;
}

static struct kprobe np_wd_touch_kp = {
	.symbol_name	= "arch_touch_nmi_watchdog",
	.pre_handler	= np_wd_touch,
};

static bool np_wd_touch_on;

/*
 * Hardirq context, on @cpu (its cross call, or its cpuhp callback with
 * interrupts off): end the last episode, then start or stop the timer as
 * np_wd_want says now; a call sent long ago does what is wanted today.
 * On its CPU the timer's callback cannot be running: active means queued.
 */
static void np_wd_cpu_sync(int cpu)
{
	struct np_wd_ctl *c = per_cpu_ptr(&np_wd_ctl, cpu);
	struct np_wd_cpu *w = per_cpu_ptr(&np_wd, cpu);
	u64 now = ktime_get_mono_fast_ns();

	np_wd_episode_end(w, cpu, now);
	raw_spin_lock(&c->lock);
	if (c->want) {
		WRITE_ONCE(w->beat_ns, now);
		WRITE_ONCE(w->beat_start, false);
		WRITE_ONCE(w->state, NP_WD_OK);
		/* Pairs with smp_rmb() in np_wd_check(): a buddy that finds
		 * us in the mask finds the fresh heartbeat too.
		 */
		smp_mb__before_atomic();
		cpumask_set_cpu(cpu, &np_wd_active);
		hrtimer_start(&w->timer, ns_to_ktime(READ_ONCE(np_wd_period_ns)),
			      HRTIMER_MODE_REL_PINNED_HARD);
	} else {
		cpumask_clear_cpu(cpu, &np_wd_active);
		hrtimer_try_to_cancel(&w->timer);
	}
	raw_spin_unlock(&c->lock);
}

static void np_wd_cpu_sync_ipi(void *unused)
{
	int cpu = smp_processor_id();

	np_wd_cpu_sync(cpu);
	/* Pairs with atomic_read_acquire() in np_wd_exit(). */
	atomic_dec_return_release(per_cpu_ptr(&np_wd_ctl.inflight, cpu));
}

/*
 * Process context, @cpu online (hotplug lock held): want its timer or
 * not, without waiting for @cpu.  Stopping takes it out of the checks at
 * once.  The cross call then ends what it was reported in and starts the
 * timer; -EBUSY: the last one has not run yet, and will read the new
 * want when it does.
 */
static void np_wd_want_cpu(int cpu, bool want)
{
	struct np_wd_ctl *c = per_cpu_ptr(&np_wd_ctl, cpu);
	struct np_wd_cpu *w = per_cpu_ptr(&np_wd, cpu);
	unsigned long flags;

	raw_spin_lock_irqsave(&c->lock, flags);
	WRITE_ONCE(c->want, want);
	if (!want) {
		cpumask_clear_cpu(cpu, &np_wd_active);
		hrtimer_try_to_cancel(&w->timer);
	} else if (!cpumask_test_cpu(cpu, &np_wd_active)) {
		/*
		 * Watched from now on, before the cross call gets there: a
		 * CPU with interrupts off would not be watched until it
		 * came back.  Its heartbeat counts from now, so a report
		 * says "at least"; one reported before keeps its episode,
		 * which its cross call ends.
		 */
		if (READ_ONCE(w->state) == NP_WD_OK) {
			WRITE_ONCE(w->beat_ns, ktime_get_mono_fast_ns());
			WRITE_ONCE(w->beat_start, true);
		}
		/* Pairs with smp_rmb() in np_wd_check(), as below. */
		smp_mb__before_atomic();
		cpumask_set_cpu(cpu, &np_wd_active);
	}
	raw_spin_unlock_irqrestore(&c->lock, flags);
	atomic_inc(&c->inflight);
	if (smp_call_function_single_async(cpu, &c->csd))
		atomic_dec(&c->inflight);
}

/* cpuhp, on @cpu coming online: start its heartbeat. */
static int np_wd_cpu_online(unsigned int cpu)
{
	struct np_wd_cpu *w = per_cpu_ptr(&np_wd, cpu);

	/* Coming up, it has no NMI of ours in flight. */
	atomic_set(&w->nmi_req, 0);
	atomic_set(&w->bt_req, 0);
	atomic_set(&w->kicked, NP_WD_KICK_NONE);
	WRITE_ONCE(w->state, NP_WD_OK);
	WRITE_ONCE(per_cpu(np_wd_ctl.want, cpu),
		   np_wd_running && cpumask_test_cpu(cpu, &np_wd_cfg.cpus));
	local_irq_disable();
	np_wd_cpu_sync(cpu);
	local_irq_enable();
	return 0;
}

/* cpuhp, on @cpu while still online: nobody may check it any more. */
static int np_wd_cpu_offline(unsigned int cpu)
{
	WRITE_ONCE(per_cpu(np_wd_ctl.want, cpu), false);
	local_irq_disable();
	np_wd_cpu_sync(cpu);
	local_irq_enable();
	return 0;
}

/* Never waits for a CPU (see the top). */
static void np_wd_start(void)
{
	unsigned int cpu;

	lockdep_assert_held(&np_wd_mutex);
	WRITE_ONCE(np_wd_thresh_ns, (u64)np_wd_cfg.thresh_s * NSEC_PER_SEC);
	WRITE_ONCE(np_wd_period_ns, np_wd_thresh_ns * 2 / 5);
	WRITE_ONCE(np_wd_flags, np_wd_cfg.flags);
	cpus_read_lock();
	np_wd_running = true;
	for_each_online_cpu(cpu)
		if (cpumask_test_cpu(cpu, &np_wd_cfg.cpus))
			np_wd_want_cpu(cpu, true);
	cpus_read_unlock();
	pr_info("watchdog on: threshold %u s, CPUs %*pbl\n",
		np_wd_cfg.thresh_s, cpumask_pr_args(&np_wd_cfg.cpus));
}

/* Never waits for a CPU (see the top). */
static void np_wd_stop(void)
{
	unsigned int cpu;

	lockdep_assert_held(&np_wd_mutex);
	if (!np_wd_running)
		return;
	cpus_read_lock();
	np_wd_running = false;
	for_each_online_cpu(cpu)
		if (READ_ONCE(per_cpu(np_wd_ctl.want, cpu)))
			np_wd_want_cpu(cpu, false);
	cpus_read_unlock();
	pr_info("watchdog off\n");
}

/* From load to unload; the handlers look only at np_wd_active's CPUs. */
static int np_wd_nmi_register(void)
{
	int ret;

	ret = register_nmi_handler(NMI_LOCAL, np_wd_nmi, 0, "nmiprof_wd");
	if (ret)
		return ret;
	ret = register_nmi_handler(NMI_UNKNOWN, np_wd_unknown_nmi, 0,
				   "nmiprof_wd_unknown");
	if (ret) {
		unregister_nmi_handler(NMI_LOCAL, "nmiprof_wd");
		return ret;
	}
	return 0;
}

static void np_wd_nmi_unregister(void)
{
	unregister_nmi_handler(NMI_UNKNOWN, "nmiprof_wd_unknown");
	unregister_nmi_handler(NMI_LOCAL, "nmiprof_wd");
}

static int np_wd_pm_notify(struct notifier_block *nb, unsigned long action,
			   void *data)
{
	mutex_lock(&np_wd_mutex);
	switch (action) {
	case PM_SUSPEND_PREPARE:
	case PM_HIBERNATION_PREPARE:
	case PM_RESTORE_PREPARE:
		if (np_wd_running) {
			np_wd_stop();
			np_wd_suspended = true;
		}
		break;
	case PM_POST_SUSPEND:
	case PM_POST_HIBERNATION:
	case PM_POST_RESTORE:
		if (np_wd_suspended)
			np_wd_start();
		np_wd_suspended = false;
		break;
	}
	mutex_unlock(&np_wd_mutex);
	return NOTIFY_OK;
}

static struct notifier_block np_wd_pm_nb = {
	.notifier_call = np_wd_pm_notify,
};

/*
 * As the kernel's watchdog does: not the nohz_full CPUs, which our
 * heartbeat timer would give a tick.
 */
static void np_wd_default_cpus(struct cpumask *cpus)
{
	cpumask_and(cpus, cpu_possible_mask,
		    housekeeping_cpumask(HK_TYPE_TIMER));
}

static void np_wd_to_user(struct nmiprof_watchdog *u)
{
	unsigned int cpu;

	memset(u, 0, sizeof(*u));
	u->enabled = np_wd_cfg.enabled;
	u->threshold_s = np_wd_cfg.thresh_s;
	u->flags = np_wd_cfg.flags;
	for_each_cpu(cpu, &np_wd_cfg.cpus)
		if (cpu < ARRAY_SIZE(u->cpumask) * 64)
			u->cpumask[cpu / 64] |= 1ULL << (cpu % 64);
}

/*
 * Refuse anything this module would not act on exactly as written, like
 * NMIPROF_IOC_CONFIGURE does: "enabled" other than 0/1 and CPUs that
 * cannot exist are errors, not bits to drop, so they stay free for later
 * ABI use and a caller learns its mask was wrong.
 */
static int np_wd_from_user(const struct nmiprof_watchdog *u,
			   struct cpumask *cpus)
{
	unsigned int cpu, i;

	if (u->enabled > 1 ||
	    u->threshold_s < 1 || u->threshold_s > NMIPROF_WD_MAX_THRESHOLD ||
	    u->flags & ~(NMIPROF_WF_ALL_CPU_BT | NMIPROF_WF_PANIC) ||
	    u->__reserved0)
		return -EINVAL;
	for (i = 0; i < ARRAY_SIZE(u->__reserved); i++)
		if (u->__reserved[i])
			return -EINVAL;
	/* np_wd_init() turned it off for good: it cannot send an NMI. */
	if (u->enabled && (!apic || !apic->send_IPI))
		return -ENODEV;

	cpumask_clear(cpus);
	for (cpu = 0; cpu < ARRAY_SIZE(u->cpumask) * 64; cpu++) {
		if (!(u->cpumask[cpu / 64] & BIT_ULL(cpu % 64)))
			continue;
		if (cpu >= nr_cpu_ids || !cpu_possible(cpu))
			return -EINVAL;
		cpumask_set_cpu(cpu, cpus);
	}
	if (cpumask_empty(cpus))
		np_wd_default_cpus(cpus);
	return 0;
}

long np_wd_ioctl(unsigned int cmd, void __user *arg)
{
	struct nmiprof_watchdog u;
	cpumask_var_t cpus;
	long ret = 0;

	switch (cmd) {
	case NMIPROF_IOC_GET_WATCHDOG:
		mutex_lock(&np_wd_mutex);
		np_wd_to_user(&u);
		mutex_unlock(&np_wd_mutex);
		return copy_to_user(arg, &u, sizeof(u)) ? -EFAULT : 0;
	case NMIPROF_IOC_SET_WATCHDOG:
		break;
	default:
		return -ENOTTY;
	}

	/* It can panic the machine. */
	if (!capable(CAP_SYS_ADMIN))
		return -EPERM;
	if (copy_from_user(&u, arg, sizeof(u)))
		return -EFAULT;
	if (!zalloc_cpumask_var(&cpus, GFP_KERNEL))
		return -ENOMEM;
	ret = np_wd_from_user(&u, cpus);
	if (ret)
		goto out;

	mutex_lock(&np_wd_mutex);
	np_wd_stop();
	np_wd_cfg.enabled = u.enabled;
	np_wd_cfg.thresh_s = u.threshold_s;
	np_wd_cfg.flags = u.flags;
	cpumask_copy(&np_wd_cfg.cpus, cpus);
	/* While suspended, the pm notifier starts it on resume. */
	if (np_wd_cfg.enabled && !np_wd_suspended)
		np_wd_start();
	mutex_unlock(&np_wd_mutex);
out:
	free_cpumask_var(cpus);
	return ret;
}

int np_wd_init(void)
{
	unsigned int cpu;
	int ret;

	if (!watchdog_thresh || watchdog_thresh > NMIPROF_WD_MAX_THRESHOLD) {
		pr_err("watchdog_thresh=%u must be in 1..%u\n",
		       watchdog_thresh, NMIPROF_WD_MAX_THRESHOLD);
		return -EINVAL;
	}
	np_wd_default_cpus(&np_wd_cfg.cpus);
	if (watchdog_cpus && cpulist_parse(watchdog_cpus, &np_wd_cfg.cpus)) {
		pr_err("watchdog_cpus=%s is not a cpulist\n", watchdog_cpus);
		return -EINVAL;
	}
	np_wd_cfg.enabled = watchdog;
	np_wd_cfg.thresh_s = watchdog_thresh;
	np_wd_cfg.flags = (watchdog_all_cpu_backtrace ? NMIPROF_WF_ALL_CPU_BT : 0) |
			  (watchdog_panic ? NMIPROF_WF_PANIC : 0);

	if (!apic || !apic->send_IPI) {
		pr_warn("no APIC to send NMIs with; watchdog unavailable\n");
		np_wd_cfg.enabled = false;
	}

	ret = np_report_init();
	if (ret)
		return ret;
	for_each_possible_cpu(cpu) {
		struct hrtimer *t = per_cpu_ptr(&np_wd.timer, cpu);
		struct np_wd_ctl *c = per_cpu_ptr(&np_wd_ctl, cpu);

		hrtimer_init(t, CLOCK_MONOTONIC, HRTIMER_MODE_REL_PINNED_HARD);
		t->function = np_wd_timer_fn;
		raw_spin_lock_init(&c->lock);
		INIT_CSD(&c->csd, np_wd_cpu_sync_ipi, NULL);
	}

	ret = np_wd_nmi_register();
	if (ret)
		goto err_report;
	ret = cpuhp_setup_state_nocalls(CPUHP_AP_ONLINE_DYN,
					"nmiprof/watchdog:online",
					np_wd_cpu_online, np_wd_cpu_offline);
	if (ret < 0)
		goto err_nmi;
	np_wd_hp_state = ret;

	if (register_kprobe(&np_wd_touch_kp))
		pr_info("touch_nmi_watchdog() cannot be observed; not honoured\n");
	else
		np_wd_touch_on = true;

	mutex_lock(&np_wd_mutex);
	if (np_wd_cfg.enabled)
		np_wd_start();
	mutex_unlock(&np_wd_mutex);
	register_pm_notifier(&np_wd_pm_nb);
	return 0;

err_nmi:
	np_wd_nmi_unregister();
err_report:
	np_report_exit();
	return ret;
}

/*
 * Unload waits for a stuck CPU, here and in the kernel's free_module()
 * (synchronize_rcu()): its timer, cross call and NMI handler run our code.
 */
void np_wd_exit(void)
{
	unsigned int cpu;

	unregister_pm_notifier(&np_wd_pm_nb);
	mutex_lock(&np_wd_mutex);
	np_wd_stop();
	mutex_unlock(&np_wd_mutex);
	cpuhp_remove_state_nocalls(np_wd_hp_state);
	for_each_possible_cpu(cpu) {
		while (atomic_read_acquire(per_cpu_ptr(&np_wd_ctl.inflight,
						       cpu)))
			usleep_range(1000, 2000);
		hrtimer_cancel(per_cpu_ptr(&np_wd.timer, cpu));
	}
	if (np_wd_touch_on)
		unregister_kprobe(&np_wd_touch_kp);
	np_wd_nmi_unregister();
	np_report_exit();
}
