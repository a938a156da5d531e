// SPDX-License-Identifier: GPL-2.0
/*
 * nmiprof_slowsample: an nmiprof function takes @us microseconds longer.
 *
 *   insmod nmiprof_slowsample.ko [us=200] [func=np_sample] [cpu=-1]
 *
 * A kprobe on @func busy-waits, on every CPU or on @cpu only.  On
 * np_sample() (the default) it waits in NMI, inside the cost nmiprof
 * measures, as a handler copying a deep stack from slow memory would.
 * Under TCG the NMI IPIs arrive at a few thousand per second at most, so
 * the real handler never takes enough of a CPU to meet the IPI source's
 * cpu_time_max_percent; with this one it does.  On np_report_backtrace()
 * a CPU prints its backtrace as late as one queued behind other CPUs'
 * reports on a slow port would.
 */
#include <linux/delay.h>
#include <linux/kprobes.h>
#include <linux/module.h>

static unsigned int us = 200;
module_param(us, uint, 0444);
MODULE_PARM_DESC(us, "Microseconds added to each call (at most 10 s)");

static char *func = "np_sample";
module_param(func, charp, 0444);
MODULE_PARM_DESC(func, "nmiprof function to slow down (default np_sample)");

static int cpu = -1;
module_param(cpu, int, 0444);
MODULE_PARM_DESC(cpu, "Only on this CPU (default -1: every CPU)");

static int slowsample(struct kprobe *p, struct pt_regs *regs)
{
	unsigned int left;

	if (cpu >= 0 && smp_processor_id() != cpu)
		return 0;
	/* udelay() takes at most a few ms. */
	for (left = us; left > 10000; left -= 10000)
		udelay(10000);
	udelay(left);
	return 0;
}

static struct kprobe kp = {
	.pre_handler	= slowsample,
};

static int __init slowsample_init(void)
{
	int ret;

	if (us > 10 * USEC_PER_SEC)
		return -EINVAL;
	kp.symbol_name = func;
	ret = register_kprobe(&kp);
	if (ret)
		pr_err("nmiprof_slowsample: no kprobe on %s: %d\n", func, ret);
	return ret;
}

static void __exit slowsample_exit(void)
{
	unregister_kprobe(&kp);
	pr_info("nmiprof_slowsample: kprobe missed %lu\n", kp.nmissed);
}

module_init(slowsample_init);
module_exit(slowsample_exit);

MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("nmiprof test: slow an nmiprof function down");
