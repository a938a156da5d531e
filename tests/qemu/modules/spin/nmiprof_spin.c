// SPDX-License-Identifier: GPL-2.0
/*
 * nmiprof_spin: spin one CPU with interrupts disabled for a while, so a
 * test can check that NMI sampling still sees it (only an NMI can).
 *
 *   insmod nmiprof_spin.ko cpu=1 secs=3
 *
 * A kthread bound to @cpu spins in nmiprof_spin_loop() with interrupts
 * off for @secs seconds (at most 8: well below the hard-lockup and RCU
 * stall timeouts), then exits; load returns at once.  Unload waits for it.
 */
#include <linux/module.h>
#include <linux/kthread.h>
#include <linux/ktime.h>
#include <linux/delay.h>
#include <linux/completion.h>

static unsigned int cpu = 1;
module_param(cpu, uint, 0444);
MODULE_PARM_DESC(cpu, "CPU to spin on");

static unsigned int secs = 3;
module_param(secs, uint, 0444);
MODULE_PARM_DESC(secs, "Seconds to spin with interrupts off (1..8)");

static DECLARE_COMPLETION(spin_done);
static u64 spin_iters;

/* Most of the time in here, not in the clock read: check it rarely. */
static noinline void nmiprof_spin_loop(u64 end_ns)
{
	unsigned int i;

	while (ktime_get_mono_fast_ns() < end_ns) {
		for (i = 0; i < 10000; i++) {
			WRITE_ONCE(spin_iters, spin_iters + 1);
			cpu_relax();
		}
	}
}

static int nmiprof_spin_fn(void *unused)
{
	unsigned long flags;

	local_irq_save(flags);
	nmiprof_spin_loop(ktime_get_mono_fast_ns() + secs * NSEC_PER_SEC);
	local_irq_restore(flags);
	pr_info("nmiprof_spin: cpu %u spun %u s with irqs off (%llu iterations)\n",
		cpu, secs, spin_iters);
	complete(&spin_done);
	return 0;
}

static int __init nmiprof_spin_init(void)
{
	struct task_struct *t;

	if (secs < 1 || secs > 8 || cpu >= nr_cpu_ids || !cpu_online(cpu))
		return -EINVAL;
	t = kthread_create(nmiprof_spin_fn, NULL, "nmiprof_spin/%u", cpu);
	if (IS_ERR(t))
		return PTR_ERR(t);
	kthread_bind(t, cpu);
	wake_up_process(t);
	return 0;
}

static void __exit nmiprof_spin_exit(void)
{
	wait_for_completion(&spin_done);
}

module_init(nmiprof_spin_init);
module_exit(nmiprof_spin_exit);
MODULE_DESCRIPTION("nmiprof test: spin a CPU with interrupts off");
MODULE_LICENSE("GPL");
