// SPDX-License-Identifier: GPL-2.0
/*
 * Prints arch/x86/kernel/nmi.c's per-CPU counters, which no kernel
 * interface shows: normal (claims summed over NMI_LOCAL handlers),
 * unknown, external, and swallow (unclaimed back-to-back NMIs dropped
 * after an NMI that claimed more than one event).  They are static, so
 * the scenario passes their per-CPU offset from /proc/kallsyms.
 *
 *   insmod nmiprof_nmistats.ko stats=0x<offset of nmi_stats>
 *
 * Loading prints one line per online CPU and fails on purpose (-EAGAIN),
 * so it can be loaded again to read the counters again.
 */
#include <linux/module.h>
#include <linux/percpu.h>
#include <linux/cpumask.h>

/* The common head of struct nmi_stats on 6.1 and 6.12. */
struct np_nmi_stats {
	unsigned int normal;
	unsigned int unknown;
	unsigned int external;
	unsigned int swallow;
};

static unsigned long stats;
module_param(stats, ulong, 0400);

static int __init np_nmistats_init(void)
{
	struct np_nmi_stats __percpu *s = (void __percpu *)stats;
	int cpu;

	if (!stats)
		return -EINVAL;
	for_each_online_cpu(cpu) {
		struct np_nmi_stats *p = per_cpu_ptr(s, cpu);

		pr_info("nmistats cpu %d normal %u unknown %u external %u swallow %u\n",
			cpu, READ_ONCE(p->normal), READ_ONCE(p->unknown),
			READ_ONCE(p->external), READ_ONCE(p->swallow));
	}
	return -EAGAIN;
}
module_init(np_nmistats_init);

MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("nmiprof test: the NMI core's per-CPU counters");
