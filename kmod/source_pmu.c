// SPDX-License-Identifier: GPL-2.0
/*
 * PMU source: one pinned CPU-cycles counter per CPU in frequency mode;
 * perf calls the overflow handler from its NMI handler with the
 * interrupted context's registers.  Like kernel/watchdog_perf.c, but with
 * perf adjusting the period to hit freq_hz.
 */
#include <linux/perf_event.h>
#include <linux/percpu.h>
#include <linux/err.h>
#include <linux/smp.h>
#include <linux/hardirq.h>

#include "dispatch.h"
#include "source.h"

static DEFINE_PER_CPU(struct perf_event *, np_pmu_event);

static void np_pmu_attr(struct perf_event_attr *attr, u32 freq_hz)
{
	*attr = (struct perf_event_attr) {
		.type		= PERF_TYPE_HARDWARE,
		.config		= PERF_COUNT_HW_CPU_CYCLES,
		.size		= sizeof(*attr),
		.pinned		= 1,
		.freq		= 1,
		.sample_freq	= freq_hz,
	};
}

static void np_pmu_overflow(struct perf_event *event,
			    struct perf_sample_data *data,
			    struct pt_regs *regs)
{
	np_on_nmi(regs, 0);
}

static struct perf_event *np_pmu_create(int cpu, u32 freq_hz)
{
	struct perf_event_attr attr;

	np_pmu_attr(&attr, freq_hz);
	return perf_event_create_kernel_counter(&attr, cpu, NULL,
						np_pmu_overflow, NULL);
}

/*
 * Is there a cycles counter to sample with?  Without a PMU (TCG, many
 * VMs) creation fails with -ENOENT; a counter taken by someone else
 * pinned fails too.  Probe on one online CPU and let it go again.
 */
int np_pmu_probe(u32 freq_hz)
{
	struct perf_event *ev = np_pmu_create(raw_smp_processor_id(), freq_hz);

	if (IS_ERR(ev))
		return PTR_ERR(ev);
	perf_event_release_kernel(ev);
	return 0;
}

int np_pmu_cpu_start(int cpu, u32 freq_hz)
{
	struct perf_event *ev = np_pmu_create(cpu, freq_hz);

	if (IS_ERR(ev))
		return PTR_ERR(ev);
	per_cpu(np_pmu_event, cpu) = ev;
	return 0;
}

/*
 * Removing the event from its CPU runs there with interrupts off, so no
 * overflow NMI of it is still in flight once this returns.
 */
void np_pmu_cpu_stop(int cpu)
{
	struct perf_event *ev = per_cpu(np_pmu_event, cpu);

	if (!ev)
		return;
	per_cpu(np_pmu_event, cpu) = NULL;
	perf_event_release_kernel(ev);
}
