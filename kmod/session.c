// SPDX-License-Identifier: GPL-2.0
/*
 * The sampling session: validated configuration, source selection, and
 * starting/stopping the sources on every sampled CPU.
 *
 * A session is a dynamic cpuhp state: setting it up runs the online
 * callback on each online CPU (on that CPU, sleepable), CPUs that come
 * online later get the same call, CPUs going down get the teardown, and
 * removing the state stops every CPU.  That keeps the sources right
 * across hotplug without tracking it ourselves.
 *
 * Callers serialise with np_session_lock (main.c takes it for ioctls,
 * release and module exit).
 */
#include <linux/cpuhotplug.h>
#include <linux/cpumask.h>
#include <linux/printk.h>
#include <linux/rcupdate.h>
#include <linux/slab.h>
#include <linux/wait.h>
#include <nmiprof/nmiprof_abi.h>

#include "entry_check.h"
#include "latch_selftest.h"
#include "ring.h"
#include "session.h"
#include "source.h"
#include "stats.h"

struct np_session np_sess;

static int np_hp_state = -1;	/* cpuhp state while running, else -1 */
static bool np_ext_on;
static int np_start_err;	/* first per-CPU start failure */
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

int np_session_init(u32 freq_hz, u32 source, bool user_stacks)
{
	if (!zalloc_cpumask_var(&np_sess.cpus, GFP_KERNEL))
		return -ENOMEM;
	cpumask_copy(np_sess.cpus, cpu_possible_mask);
	np_sess.freq_hz = freq_hz;
	np_sess.kstack_depth = NMIPROF_DEFAULT_FRAMES;
	np_sess.ustack_depth = NMIPROF_DEFAULT_FRAMES;
	np_sess.user_stacks = user_stacks && np_nested_nmi_safe;
	np_cfg_source = source;
	return 0;
}

void np_session_exit(void)
{
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

static int np_cpu_online(unsigned int cpu)
{
	int ret;

	/* Any online CPU may pace a sampled one (source_ipi.c). */
	if (np_sess.source == NMIPROF_SRC_IPI)
		np_ipi_cpu_online(cpu);
	if (!cpumask_test_cpu(cpu, np_sess.cpus))
		return 0;
	if (np_sess.source == NMIPROF_SRC_PMU) {
		ret = np_pmu_cpu_start(cpu, np_sess.freq_hz);
		/* Don't block a CPU from coming online; START reports it. */
		if (ret && !np_start_err)
			np_start_err = ret;
	}
	np_latch_selftest_cpu_start(cpu);
	return 0;
}

static int np_cpu_offline(unsigned int cpu)
{
	if (cpumask_test_cpu(cpu, np_sess.cpus)) {
		np_latch_selftest_cpu_stop(cpu);
		if (np_sess.source == NMIPROF_SRC_PMU)
			np_pmu_cpu_stop(cpu);
	}
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
	int ret;

	if (np_session_running())
		return -EBUSY;
	ret = np_pick_source();
	if (ret < 0) {
		pr_info("nmiprof: no PMU cycles counter (%d)\n", ret);
		return ret;
	}
	np_sess.source = ret;

	/* No writer runs now; sources started below order these writes. */
	np_rings_reset(np_watermark);
	np_stats_reset();
	np_start_err = 0;

	if (np_sess.external || np_sess.source == NMIPROF_SRC_EXTERNAL) {
		ret = np_ext_start();
		if (ret)
			return ret;
		np_ext_on = true;
	}
	if (np_sess.source == NMIPROF_SRC_IPI) {
		ret = np_ipi_start(np_sess.freq_hz);
		if (ret)
			goto err_ext;
	}

	ret = cpuhp_setup_state(CPUHP_AP_ONLINE_DYN, "nmiprof:online",
				np_cpu_online, np_cpu_offline);
	if (ret < 0)
		goto err_ipi;
	np_hp_state = ret;
	/* The watchdog writes the rings from now on: after the reset. */
	smp_store_release(&np_sess.ring_lockups, ring_lockups);
	if (np_start_err) {
		ret = np_start_err;
		np_session_stop();
		return ret;
	}
	pr_info("nmiprof: sampling at %u Hz on %u CPUs, source %s%s\n",
		np_sess.freq_hz, cpumask_weight(np_sess.cpus),
		np_source_names[np_sess.source],
		np_ext_on && np_sess.source != NMIPROF_SRC_EXTERNAL ?
		"+external" : "");
	return 0;

err_ipi:
	if (np_sess.source == NMIPROF_SRC_IPI)
		np_ipi_stop();
err_ext:
	if (np_ext_on)
		np_ext_stop();
	np_ext_on = false;
	return ret;
}

void np_session_stop(void)
{
	if (!np_session_running())
		return;
	WRITE_ONCE(np_sess.ring_lockups, false);
	if (np_sess.source == NMIPROF_SRC_IPI)
		np_ipi_quiesce();
	/* Runs np_cpu_offline() on every online CPU: timers and events go. */
	cpuhp_remove_state(np_hp_state);
	np_hp_state = -1;
	if (np_sess.source == NMIPROF_SRC_IPI)
		np_ipi_stop();
	if (np_ext_on)
		np_ext_stop();
	np_ext_on = false;
	/*
	 * NMI handlers and the watchdog's hrtimer are RCU readers: none
	 * is still writing a ring, and none will again.
	 */
	synchronize_rcu();
	np_rings_flush_lost();
	/* Let a reader drain what is left. */
	wake_up_all(&np_ring_wq);
}
