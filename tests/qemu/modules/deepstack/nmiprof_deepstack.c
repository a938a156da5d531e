// SPDX-License-Identifier: GPL-2.0
/*
 * nmiprof_deepstack: keep one CPU busy in the kernel at the bottom of a
 * deep call chain, so the sampler's ORC walk has @depth frames to unwind
 * (the handler-cost benchmark, tests/qemu/scenarios/bench_kmod.sh).
 *
 *   insmod nmiprof_deepstack.ko cpu=1 depth=40 secs=4
 *
 * A kthread bound to @cpu recurses @depth levels, then spins for @secs
 * seconds (at most 8) with interrupts on; load returns at once, unload
 * waits for it.
 */
#include <linux/module.h>
#include <linux/kthread.h>
#include <linux/ktime.h>
#include <linux/completion.h>

static unsigned int cpu = 1;
module_param(cpu, uint, 0444);
MODULE_PARM_DESC(cpu, "CPU to run on");

static unsigned int depth = 40;
module_param(depth, uint, 0444);
MODULE_PARM_DESC(depth, "Call depth before spinning (1..100)");

static unsigned int secs = 4;
module_param(secs, uint, 0444);
MODULE_PARM_DESC(secs, "Seconds to spin (1..8)");

static DECLARE_COMPLETION(deep_done);
static u64 deep_iters;

static noinline void nmiprof_deep_spin(u64 end_ns)
{
	while (ktime_get_mono_fast_ns() < end_ns) {
		WRITE_ONCE(deep_iters, deep_iters + 1);
		cpu_relax();
	}
}

/* The add after the call keeps it from becoming a tail call. */
static noinline unsigned int nmiprof_deep_descend(unsigned int n, u64 end_ns)
{
	if (!n) {
		nmiprof_deep_spin(end_ns);
		return 0;
	}
	return nmiprof_deep_descend(n - 1, end_ns) + READ_ONCE(depth);
}

static int nmiprof_deep_fn(void *unused)
{
	nmiprof_deep_descend(depth, ktime_get_mono_fast_ns() + secs * NSEC_PER_SEC);
	pr_info("nmiprof_deepstack: cpu %u spun %u s %u frames deep\n", cpu, secs, depth);
	complete(&deep_done);
	return 0;
}

static int __init nmiprof_deep_init(void)
{
	struct task_struct *t;

	if (secs < 1 || secs > 8 || depth < 1 || depth > 100 ||
	    cpu >= nr_cpu_ids || !cpu_online(cpu))
		return -EINVAL;
	t = kthread_create(nmiprof_deep_fn, NULL, "nmiprof_deep/%u", cpu);
	if (IS_ERR(t))
		return PTR_ERR(t);
	kthread_bind(t, cpu);
	wake_up_process(t);
	return 0;
}

static void __exit nmiprof_deep_exit(void)
{
	wait_for_completion(&deep_done);
}

module_init(nmiprof_deep_init);
module_exit(nmiprof_deep_exit);
MODULE_DESCRIPTION("nmiprof test: a busy CPU with a deep kernel stack");
MODULE_LICENSE("GPL");
