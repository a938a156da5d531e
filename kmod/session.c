// SPDX-License-Identifier: GPL-2.0
/*
 * The sampling session: validated configuration, source selection, and
 * starting/stopping the sources on every sampled CPU.
 *
 * Starting and stopping never wait for a CPU: the one that matters most
 * may be stuck with interrupts off, and an operator killing the recorder
 * or restarting nmiprofd then must not end up in D state holding
 * np_lock and the hotplug lock.  So no cross call that waits, no
 * cpuhp_setup_state()/cpuhp_remove_state() with callbacks (they run them
 * on each CPU and wait), no synchronize_rcu() (a CPU with interrupts off
 * holds off the grace period).  Instead each CPU has what the session
 * wants there (np_sess_cpu.want) and a work item bound to it that makes
 * it so there: a CPU that is stuck catches up when it comes back, and
 * cleans up what the last session left.  The IPI source arms its timers
 * the same way, from irq_work (source_ipi.c), and np_on_nmi() writes
 * nothing between sessions (dispatch.c).
 *
 * The session's dynamic cpuhp state is set up without callbacks, for
 * CPUs coming and going while it runs: their callbacks run on that CPU,
 * which is answering.
 *
 * Callers serialise with np_session_lock (main.c takes it for ioctls,
 * release and module exit).
 */
#include <linux/cpu.h>
#include <linux/cpuhotplug.h>
#include <linux/cpumask.h>
#include <linux/mutex.h>
#include <linux/printk.h>
#include <linux/rcupdate.h>
#include <linux/slab.h>
#include <linux/wait.h>
#include <linux/workqueue.h>
#include <nmiprof/nmiprof_abi.h>

#include "dispatch.h"
#include "entry_check.h"
#include "follow.h"
#include "latch_selftest.h"
#include "lockup_report.h"
#include "ring.h"
#include "session.h"
#include "source.h"
#include "stats.h"

struct np_session np_sess;

static int np_hp_state = -1;	/* cpuhp state while running, else -1 */
static bool np_ext_on;
static int np_start_err;	/* first per-CPU start failure */

/* How long START waits for the CPUs' PMU counters, to report a failure. */
#define NP_START_WAIT_MS	1000

/*
 * Per CPU: what the session wants there, and what is started there (a PMU
 * counter, the latch self-test timer), changed only on that CPU under
 * @lock, by @work or by the cpuhp callbacks.
 */
struct np_sess_cpu {
	struct work_struct	work;
	struct mutex		lock;
	bool			want;		/* sampled by the session */
	bool			on;		/* started, for session @on_gen */
	u32			on_source;
	unsigned long		on_gen;
	unsigned long		done_gen;	/* last np_sess_gen applied */
};

static DEFINE_PER_CPU(struct np_sess_cpu, np_sess_cpu);
static unsigned long np_sess_gen;	/* one more at each start and stop */
static DECLARE_WAIT_QUEUE_HEAD(np_sess_cpu_wq);
static u32 np_cfg_source;	/* as configured, may be AUTO */
static u32 np_watermark;

static const char * const np_source_names[] = {
	[NMIPROF_SRC_AUTO]	= "auto",
	[NMIPROF_SRC_PMU]	= "pmu",
	[NMIPROF_SRC_IPI]	= "ipi",
	[NMIPROF_SRC_EXTERNAL]	= "external",
};

bool np_session_running(void)
{
	return np_hp_state >= 0;
}

static void np_sess_cpu_work(struct work_struct *work);

int np_session_init(u32 freq_hz, u32 source, bool user_stacks)
{
	unsigned int cpu;
	int ret;

	for_each_possible_cpu(cpu) {
		struct np_sess_cpu *c = per_cpu_ptr(&np_sess_cpu, cpu);

		INIT_WORK(&c->work, np_sess_cpu_work);
		mutex_init(&c->lock);
	}
	if (!zalloc_cpumask_var(&np_sess.cpus, GFP_KERNEL))
		return -ENOMEM;
	ret = np_ipi_init();
	if (ret)
		goto err_cpus;
	ret = np_ext_init();
	if (ret)
		goto err_ipi;
	cpumask_copy(np_sess.cpus, cpu_possible_mask);
	np_sess.freq_hz = freq_hz;
	np_sess.kstack_depth = NMIPROF_DEFAULT_FRAMES;
	np_sess.ustack_depth = NMIPROF_DEFAULT_FRAMES;
	np_sess.user_stacks = user_stacks && np_nested_nmi_safe;
	np_cfg_source = source;
	return 0;

err_ipi:
	np_ipi_exit();
err_cpus:
	free_cpumask_var(np_sess.cpus);
	return ret;
}

/* After np_session_stop(): a CPU that was stuck has come back, or we wait. */
void np_session_exit(void)
{
	unsigned int cpu;

	for_each_possible_cpu(cpu)
		flush_work(per_cpu_ptr(&np_sess_cpu.work, cpu));
	np_ext_exit();
	np_ipi_exit();
	free_cpumask_var(np_sess.cpus);
}

static bool np_zero(const void *p, size_t len)
{
	return !memchr_inv(p, 0, len);
}

int np_session_configure(const struct nmiprof_config *cfg)
{
	const u32 known = NMIPROF_CF_USER_STACKS | NMIPROF_CF_EXTERNAL |
			  NMIPROF_CF_USER_REGS;
	unsigned int cpu, bit;
	int ret;

	if (np_session_running())
		return -EBUSY;
	if (!cfg->freq_hz || cfg->freq_hz > NMIPROF_MAX_FREQ ||
	    cfg->source > NMIPROF_SRC_EXTERNAL ||
	    cfg->kstack_depth > NMIPROF_MAX_FRAMES ||
	    cfg->ustack_depth > NMIPROF_MAX_FRAMES ||
	    (cfg->flags & ~known) ||
	    cfg->ustack_bytes > NMIPROF_MAX_USTACK_BYTES ||
	    cfg->watermark > np_ring_data_size() ||
	    !np_zero(cfg->__reserved, sizeof(cfg->__reserved)))
		return -EINVAL;
	/* Every CPU named must exist. */
	for (bit = 0; bit < 64 * ARRAY_SIZE(cfg->cpumask); bit++) {
		if (!(cfg->cpumask[bit / 64] & BIT_ULL(bit % 64)))
			continue;
		if (bit >= nr_cpu_ids || !cpu_possible(bit))
			return -EINVAL;
	}

	ret = np_follow_configure(cfg->follow_pid);
	if (ret)
		return ret;

	np_sess.freq_hz = cfg->freq_hz;
	np_sess.kstack_depth = cfg->kstack_depth;
	np_sess.ustack_depth = cfg->ustack_depth;
	/* Faulting work only where a nested NMI can't corrupt the stack. */
	np_sess.user_stacks = (cfg->flags & NMIPROF_CF_USER_STACKS) &&
			      np_nested_nmi_safe;
	np_sess.user_regs = np_sess.user_stacks &&
			    (cfg->flags & NMIPROF_CF_USER_REGS);
	np_sess.ustack_bytes = np_sess.user_regs ?
			       round_down(cfg->ustack_bytes, 8) : 0;
	np_sess.external = cfg->flags & NMIPROF_CF_EXTERNAL;
	np_cfg_source = cfg->source;
	np_watermark = cfg->watermark;

	cpumask_clear(np_sess.cpus);
	for_each_possible_cpu(cpu) {
		if (cpu >= 64 * ARRAY_SIZE(cfg->cpumask))
			break;
		if (cfg->cpumask[cpu / 64] & BIT_ULL(cpu % 64))
			cpumask_set_cpu(cpu, np_sess.cpus);
	}
	if (cpumask_empty(np_sess.cpus))
		cpumask_copy(np_sess.cpus, cpu_possible_mask);
	return 0;
}

/*
 * On @cpu, sleepable: start or stop what the session wants there.  What a
 * session that has ended since left there goes first.
 */
static void np_sess_cpu_apply(unsigned int cpu)
{
	struct np_sess_cpu *c = per_cpu_ptr(&np_sess_cpu, cpu);
	/* Pairs with smp_store_release() in np_sess_cpus_want(). */
	unsigned long gen = smp_load_acquire(&np_sess_gen);
	bool want;
	int ret;

	mutex_lock(&c->lock);
	want = READ_ONCE(c->want);
	if (c->on && (!want || c->on_gen != gen)) {
		np_latch_selftest_cpu_stop(cpu);
		if (c->on_source == NMIPROF_SRC_PMU)
			np_pmu_cpu_stop(cpu);
		c->on = false;
	}
	if (want && !c->on) {
		c->on = true;
		c->on_gen = gen;
		c->on_source = np_sess.source;
		if (c->on_source == NMIPROF_SRC_PMU) {
			ret = np_pmu_cpu_start(cpu, np_sess.freq_hz);
			/* Don't block a CPU from coming online; START reports it. */
			if (ret)
				cmpxchg(&np_start_err, 0, ret);
		}
		np_latch_selftest_cpu_start(cpu);
	}
	WRITE_ONCE(c->done_gen, gen);
	mutex_unlock(&c->lock);
	wake_up_all(&np_sess_cpu_wq);
}

static void np_sess_cpu_work(struct work_struct *work)
{
	/* On its CPU, unless that went offline: then its teardown ran. */
	np_sess_cpu_apply(raw_smp_processor_id());
}

/*
 * Process context, hotplug lock held: tell every online CPU what the
 * session wants there now, and let it get there when it can.
 */
static void np_sess_cpus_want(bool running)
{
	unsigned int cpu;

	for_each_online_cpu(cpu)
		WRITE_ONCE(per_cpu(np_sess_cpu.want, cpu),
			   running && cpumask_test_cpu(cpu, np_sess.cpus));
	/* Pairs with smp_load_acquire() in np_sess_cpu_apply(). */
	smp_store_release(&np_sess_gen, np_sess_gen + 1);
	for_each_online_cpu(cpu)
		queue_work_on(cpu, system_highpri_wq,
			      per_cpu_ptr(&np_sess_cpu.work, cpu));
}

static bool np_sess_cpus_done(void)
{
	unsigned long gen = READ_ONCE(np_sess_gen);
	unsigned int cpu;

	for_each_online_cpu(cpu)
		if (READ_ONCE(per_cpu(np_sess_cpu.done_gen, cpu)) != gen)
			return false;
	return true;
}

/* cpuhp, on @cpu coming online while the session runs. */
static int np_cpu_online(unsigned int cpu)
{
	/* Any online CPU may pace a sampled one (source_ipi.c). */
	if (np_sess.source == NMIPROF_SRC_IPI)
		np_ipi_cpu_online(cpu, true);
	WRITE_ONCE(per_cpu(np_sess_cpu.want, cpu),
		   cpumask_test_cpu(cpu, np_sess.cpus));
	np_sess_cpu_apply(cpu);
	return 0;
}

/* cpuhp, on @cpu going down while the session runs. */
static int np_cpu_offline(unsigned int cpu)
{
	WRITE_ONCE(per_cpu(np_sess_cpu.want, cpu), false);
	np_sess_cpu_apply(cpu);
	if (np_sess.source == NMIPROF_SRC_IPI)
		np_ipi_cpu_offline(cpu);
	return 0;
}

static int np_pick_source(void)
{
	int ret;

	switch (np_cfg_source) {
	case NMIPROF_SRC_AUTO:
		ret = np_pmu_probe(np_sess.freq_hz);
		if (ret)
			pr_info("nmiprof: no PMU cycles counter (%d), using NMI IPIs\n",
				ret);
		return ret ? NMIPROF_SRC_IPI : NMIPROF_SRC_PMU;
	case NMIPROF_SRC_PMU:
		ret = np_pmu_probe(np_sess.freq_hz);
		return ret ? ret : NMIPROF_SRC_PMU;
	default:
		return np_cfg_source;
	}
}

/*
 * @ring_lockups: the owner predates ABI 1.3 and its lockup queue, and
 * reads LOCKUP records from the rings.
 */
int np_session_start(bool ring_lockups)
{
	unsigned int cpu;
	int ret;

	if (np_session_running())
		return -EBUSY;
	ret = np_rings_create();
	if (ret)
		return ret;
	ret = np_pick_source();
	if (ret < 0) {
		pr_info("nmiprof: no PMU cycles counter (%d)\n", ret);
		return ret;
	}
	np_sess.source = ret;

	/* No writer runs now; np_dispatch_start() orders these writes. */
	np_rings_reset(np_watermark);
	np_stats_reset();
	np_start_err = 0;
	np_dispatch_start();

	if (np_sess.external || np_sess.source == NMIPROF_SRC_EXTERNAL) {
		np_ext_start();
		np_ext_on = true;
	}
	if (np_sess.source == NMIPROF_SRC_IPI) {
		ret = np_ipi_start(np_sess.freq_hz);
		if (ret)
			goto err;
	}

	cpus_read_lock();
	ret = cpuhp_setup_state_nocalls_cpuslocked(CPUHP_AP_ONLINE_DYN,
						   "nmiprof:online",
						   np_cpu_online,
						   np_cpu_offline);
	if (ret < 0) {
		cpus_read_unlock();
		goto err;
	}
	np_hp_state = ret;
	if (np_sess.source == NMIPROF_SRC_IPI)
		for_each_online_cpu(cpu)
			np_ipi_cpu_online(cpu, false);
	np_sess_cpus_want(true);
	cpus_read_unlock();
	/* The watchdog writes the rings from now on: after the reset. */
	smp_store_release(&np_sess.ring_lockups, ring_lockups);

	/* A counter that failed is worth an error; a stuck CPU is not. */
	if (np_sess.source == NMIPROF_SRC_PMU)
		wait_event_timeout(np_sess_cpu_wq, np_sess_cpus_done(),
				   msecs_to_jiffies(NP_START_WAIT_MS));
	if (READ_ONCE(np_start_err)) {
		ret = READ_ONCE(np_start_err);
		np_session_stop();
		return ret;
	}
	pr_info("nmiprof: sampling at %u Hz on %u CPUs, source %s%s%s\n",
		np_sess.freq_hz, cpumask_weight(np_sess.cpus),
		np_source_names[np_sess.source],
		np_ext_on && np_sess.source != NMIPROF_SRC_EXTERNAL ?
		"+external" : "",
		np_follow_tgid ? ", one process and its descendants" : "");
	return 0;

err:
	if (np_ext_on)
		np_ext_stop();
	np_ext_on = false;
	np_dispatch_stop();
	return ret;
}

/* Bounded: waits for no CPU that does not answer (see the top). */
void np_session_stop(void)
{
	bool quiet;

	if (!np_session_running())
		return;
	/*
	 * The watchdog's ring records (owners before ABI 1.3) stop here,
	 * samples in np_dispatch_stop().  No synchronize_rcu(): a CPU with
	 * interrupts off holds it off.
	 */
	WRITE_ONCE(np_sess.ring_lockups, false);
	quiet = np_report_ring_quiesce();
	/*
	 * The pacers first: an NMI they send after samples are off is
	 * claimed (it carries our request) but samples nothing.  At most
	 * the one a running tick sends still comes.
	 */
	if (np_sess.source == NMIPROF_SRC_IPI)
		np_ipi_quiesce();
	quiet = np_dispatch_stop() && quiet;
	if (np_ext_on)
		np_ext_stop();
	np_ext_on = false;
	cpus_read_lock();
	cpuhp_remove_state_nocalls_cpuslocked(np_hp_state);
	np_hp_state = -1;
	np_sess_cpus_want(false);
	cpus_read_unlock();
	/* A CPU still in np_on_nmi() owns its ring. */
	if (quiet)
		np_rings_flush_lost();
	else
		pr_warn("nmiprof: a CPU is stuck in NMI; its ring is left as is\n");
	/* Let a reader drain what is left. */
	wake_up_all(&np_ring_wq);
}
