// SPDX-License-Identifier: GPL-2.0
/*
 * nmiprof_slowsample: every nmiprof sample takes @us microseconds longer.
 *
 *   insmod nmiprof_slowsample.ko [us=200]
 *
 * A kprobe on np_sample() busy-waits in NMI, inside the cost nmiprof
 * measures, as a handler copying a deep stack from slow memory would.
 * Under TCG the NMI IPIs arrive at a few thousand per second at most, so
 * the real handler never takes enough of a CPU to meet the IPI source's
 * cpu_time_max_percent; with this one it does.
 */
#include <linux/delay.h>
#include <linux/kprobes.h>
#include <linux/module.h>

static unsigned int us = 200;
module_param(us, uint, 0444);
MODULE_PARM_DESC(us, "Microseconds added to each sample");

static int slowsample(struct kprobe *p, struct pt_regs *regs)
{
	udelay(us);
	return 0;
}

static struct kprobe kp = {
	.symbol_name	= "np_sample",
	.pre_handler	= slowsample,
};

static int __init slowsample_init(void)
{
	int ret = register_kprobe(&kp);

	if (ret)
		pr_err("nmiprof_slowsample: no kprobe on np_sample: %d\n", ret);
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
MODULE_DESCRIPTION("nmiprof test: slow samples");
