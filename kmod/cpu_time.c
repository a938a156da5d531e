// SPDX-License-Identifier: GPL-2.0
/*
 * A CPU-time limit for the NMIs we pace ourselves (the IPI source): the
 * equivalent of the kernel's perf_cpu_time_max_percent, which throttles
 * PMU events, including our PMU source's, but knows nothing of NMI IPIs.
 * Without it, a CAP_PERFMON process asking for 100 kHz with deep stacks
 * keeps a CPU in NMI most of the time.
 *
 * The pacer of a CPU reads that CPU's handler runs and their summed cost
 * from its statistics (stats.h: cost_nr and cost_sum_ns, written by the
 * target in NMI) at most every NP_CT_WINDOW_NS, and keeps its NMIs at
 * least the window's average cost * 100 / cpu_time_max_percent apart,
 * never closer than the period asked: at most that share of the CPU goes
 * to the handler.  Nothing is added to the NMI path.  The average is over
 * a window of time rather than of samples, so one slow sample (a vCPU the
 * host preempted inside the handler) moves it little at high rates.
 * Every stretched tick is counted, and the first of a session is said in
 * dmesg, as perf says when it lowers perf_event_max_sample_rate.
 *
 * Each target's state is written only by its pacer's timer; a target
 * handed to another pacer may have one window judged by both, which the
 * next window corrects.
 */
#define pr_fmt(fmt) "nmiprof: " fmt

#include <linux/atomic.h>
#include <linux/ktime.h>
#include <linux/timekeeping.h>
#include <linux/math64.h>
#include <linux/minmax.h>
#include <linux/moduleparam.h>
#include <linux/percpu.h>
#include <linux/printk.h>

#include "cpu_time.h"
#include "stats.h"

/* How often the cost is looked at, and the longest interval it sets. */
#define NP_CT_WINDOW_NS		(100 * NSEC_PER_MSEC)
#define NP_CT_MAX_INTERVAL_NS	(100 * NSEC_PER_MSEC)

static unsigned int np_cpu_time_max_percent = 25;

static int np_ct_param_set(const char *val, const struct kernel_param *kp)
{
	unsigned int pct;
	int ret = kstrtouint(val, 0, &pct);

	if (ret)
		return ret;
	if (pct > 100)
		return -EINVAL;
	WRITE_ONCE(np_cpu_time_max_percent, pct);
	return 0;
}

static const struct kernel_param_ops np_ct_param_ops = {
	.set	= np_ct_param_set,
	.get	= param_get_uint,
};
module_param_cb(cpu_time_max_percent, &np_ct_param_ops,
		&np_cpu_time_max_percent, 0644);
MODULE_PARM_DESC(cpu_time_max_percent,
		 "Most of a CPU's time the IPI source's NMIs may take, in percent (0 or 100: no limit; default 25, as perf's)");

struct np_ct {
	u64		t_ns;		/* start of the window, 0: none yet */
	u64		nr;		/* cost_nr then */
	u64		sum_ns;		/* cost_sum_ns then */
	u64		interval_ns;	/* between NMIs, for now */
	atomic64_t	throttled;
};

static DEFINE_PER_CPU(struct np_ct, np_ct);
static atomic_t np_ct_said;

void np_cpu_time_reset(void)
{
	int cpu;

	for_each_possible_cpu(cpu) {
		struct np_ct *ct = per_cpu_ptr(&np_ct, cpu);

		ct->t_ns = 0;
		atomic64_set(&ct->throttled, 0);
	}
	atomic_set(&np_ct_said, 0);
}

u64 np_cpu_time_interval(int target, u64 period_ns)
{
	struct np_cpu_stats *s = per_cpu_ptr(&np_stats, target);
	struct np_ct *ct = per_cpu_ptr(&np_ct, target);
	unsigned int pct = READ_ONCE(np_cpu_time_max_percent);
	u64 now = ktime_get_mono_fast_ns();
	/* The target adds to the sum before the count (np_stats_cost()). */
	u64 nr = READ_ONCE(s->cost_nr);
	u64 sum = READ_ONCE(s->cost_sum_ns);
	u64 avg, least;

	if (!pct || pct >= 100)
		return period_ns;
	if (!ct->t_ns || nr < ct->nr) {		/* first look, or reset */
		ct->t_ns = now;
		ct->nr = nr;
		ct->sum_ns = sum;
		ct->interval_ns = period_ns;
		return period_ns;
	}
	if (now - ct->t_ns >= NP_CT_WINDOW_NS && nr > ct->nr) {
		avg = div64_u64(sum - ct->sum_ns, nr - ct->nr);
		least = min_t(u64, div_u64(avg * 100, pct),
			      NP_CT_MAX_INTERVAL_NS);
		ct->interval_ns = max(least, period_ns);
		ct->t_ns = now;
		ct->nr = nr;
		ct->sum_ns = sum;
		if (ct->interval_ns > period_ns && !atomic_xchg(&np_ct_said, 1))
			pr_info("CPU %d's NMI handler takes %llu ns, over cpu_time_max_percent=%u of the %llu ns period: its NMIs now come at least %llu ns apart\n",
				target, avg, pct, period_ns, ct->interval_ns);
	}
	if (ct->interval_ns > period_ns)
		atomic64_inc(&ct->throttled);
	return ct->interval_ns;
}

u64 np_cpu_time_throttled(int cpu)
{
	return atomic64_read(&per_cpu_ptr(&np_ct, cpu)->throttled);
}
