// SPDX-License-Identifier: GPL-2.0
/*
 * nmiprof_lockup: hard-lock one CPU for the watchdog scenarios.
 *
 *   insmod nmiprof_lockup.ko cpu=1 secs=25 [console=1] [touch=1] [nmi=1]
 *
 * A kthread bound to @cpu prints "spinning now", then spins in
 * nmiprof_lockup_spin() with interrupts off for @secs seconds.  With
 * @console it takes console_lock first, as a CPU stuck in a console
 * driver would, so the kernel's own printk output stays in the buffer
 * until the spin ends: the "console_lock held" line, printed with the
 * lock held, reaches the serial port only after release, which tells a
 * test what got out while the CPU was stuck.  With @touch it calls
 * touch_nmi_watchdog() every 100 ms, like code that knows it runs long,
 * and must then not be reported.  With @nmi it spins inside an NMI
 * handler instead (an NMI IPI to itself), so it cannot take the
 * watchdog's NMI either.  Load returns at once; unload waits for the
 * spin to end.
 */
#include <linux/completion.h>
#include <linux/console.h>
#include <linux/kthread.h>
#include <linux/module.h>
#include <linux/nmi.h>
#include <linux/timekeeping.h>
#include <asm/apic.h>
#include <asm/nmi.h>

static unsigned int cpu = 1;
module_param(cpu, uint, 0444);
MODULE_PARM_DESC(cpu, "CPU to lock up");

static unsigned int secs = 25;
module_param(secs, uint, 0444);
MODULE_PARM_DESC(secs, "Seconds with interrupts off (1..60)");

static bool console;
module_param(console, bool, 0444);
MODULE_PARM_DESC(console, "Hold console_lock while spinning");

static bool touch;
module_param(touch, bool, 0444);
MODULE_PARM_DESC(touch, "Call touch_nmi_watchdog() every 100 ms");

static bool nmi;
module_param(nmi, bool, 0444);
MODULE_PARM_DESC(nmi, "Spin in an NMI handler");

static DECLARE_COMPLETION(lockup_done);
static atomic_t nmi_armed;
static u64 spin_end_ns;

static noinline void nmiprof_lockup_spin(u64 end_ns)
{
	u64 now, next_touch = 0;

	while ((now = ktime_get_mono_fast_ns()) < end_ns) {
		if (touch && now >= next_touch) {
			touch_nmi_watchdog();
			next_touch = now + 100 * NSEC_PER_MSEC;
		}
		cpu_relax();
	}
}

static int nmiprof_lockup_nmi(unsigned int type, struct pt_regs *regs)
{
	if (smp_processor_id() != cpu || !atomic_xchg(&nmi_armed, 0))
		return NMI_DONE;
	nmiprof_lockup_spin(spin_end_ns);
	return NMI_HANDLED;
}

static void nmiprof_lockup_in_nmi(void)
{
	if (register_nmi_handler(NMI_LOCAL, nmiprof_lockup_nmi, 0,
				 "nmiprof_lockup")) {
		pr_err("nmiprof_lockup: no NMI handler\n");
		return;
	}
	spin_end_ns = ktime_get_mono_fast_ns() + secs * NSEC_PER_SEC;
	atomic_set(&nmi_armed, 1);
	/* To ourselves: the NMI comes in at once and spins. */
	apic->send_IPI(cpu, NMI_VECTOR);
	while (atomic_read(&nmi_armed))
		cpu_relax();
	unregister_nmi_handler(NMI_LOCAL, "nmiprof_lockup");
}

static int nmiprof_lockup_fn(void *unused)
{
	unsigned long flags;

	pr_info("nmiprof_lockup: spinning now on CPU %u for %u s%s%s%s\n",
		cpu, secs, console ? ", holding console_lock" : "",
		touch ? ", touching the NMI watchdog" : "",
		nmi ? ", in NMI" : "");
	if (console) {
		console_lock();
		pr_info("nmiprof_lockup: console_lock held\n");
	}
	if (nmi) {
		nmiprof_lockup_in_nmi();
	} else {
		local_irq_save(flags);
		nmiprof_lockup_spin(ktime_get_mono_fast_ns() +
				    secs * NSEC_PER_SEC);
		local_irq_restore(flags);
	}
	if (console)
		console_unlock();
	pr_info("nmiprof_lockup: done, CPU %u had interrupts off for %u s\n",
		cpu, secs);
	complete(&lockup_done);
	return 0;
}

static int __init nmiprof_lockup_init(void)
{
	struct task_struct *t;

	if (secs < 1 || secs > 60 || cpu >= nr_cpu_ids || !cpu_online(cpu))
		return -EINVAL;
	t = kthread_create(nmiprof_lockup_fn, NULL, "np_lockup/%u", cpu);
	if (IS_ERR(t))
		return PTR_ERR(t);
	kthread_bind(t, cpu);
	wake_up_process(t);
	return 0;
}

static void __exit nmiprof_lockup_exit(void)
{
	wait_for_completion(&lockup_done);
}

module_init(nmiprof_lockup_init);
module_exit(nmiprof_lockup_exit);

MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("nmiprof test: hard-lock a CPU");
