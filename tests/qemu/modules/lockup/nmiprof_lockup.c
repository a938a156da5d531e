// SPDX-License-Identifier: GPL-2.0
/*
 * nmiprof_lockup: hard-lock one CPU for the watchdog scenarios.
 *
 *   insmod nmiprof_lockup.ko cpu=1 secs=25 [console=1] [touch=1] [nmi=1]
 *                            [irq=1] [portlock=1] [pulse_cpu=2]
 *                            [also_cpu=0] [all=1] [delay_ms=1000]
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
 * watchdog's NMI either.  With @irq it spins in a hard interrupt: the
 * callback of an hrtimer pinned to @cpu, run from the timer interrupt on
 * the IRQ stack, over the kthread it interrupted.
 *
 * The port lock of ttyS0, which nmiprof's UART writer tries for each
 * line: with @portlock the spinning CPU holds it, as a CPU stuck in the
 * 8250 driver would.  With @pulse_cpu that CPU holds it in pulses for as
 * long as the spin lasts: 20 ms held, with interrupts off, then 200 us
 * free, much less than a report takes.  It writes "portlock: held N" and
 * "portlock: released N" straight to the UART at either end, so that the
 * console shows which lines went out while somebody else held the lock.
 *
 * With @also_cpu that CPU spins too, at the same time and just as long,
 * with interrupts off and nothing else; with @all, every other online
 * CPU does (the machine is stuck: only an NMI from outside gets in).
 *
 * With @delay_ms the kthread sleeps that long first: insmod itself, after
 * our init returns, flushes TLBs on every CPU and waits for each, so
 * without it the insmod process spins on its CPU, preemption off, for as
 * long as the spin lasts, and nothing else runs there.
 *
 * Load returns at once; unload waits for the spins (and pulses) to end.
 */
#include <linux/completion.h>
#include <linux/delay.h>
#include <linux/console.h>
#include <linux/hrtimer.h>
#include <linux/kthread.h>
#include <linux/module.h>
#include <linux/nmi.h>
#include <linux/serial_8250.h>
#include <linux/serial_reg.h>
#include <linux/timekeeping.h>
#include <asm/apic.h>
#include <asm/nmi.h>

/* Not in include/linux: drivers/tty/serial/8250/8250.h, GPL export. */
struct uart_8250_port *serial8250_get_port(int line);

static unsigned int cpu = 1;
module_param(cpu, uint, 0444);
MODULE_PARM_DESC(cpu, "CPU to lock up");

static unsigned int secs = 25;
module_param(secs, uint, 0444);
MODULE_PARM_DESC(secs, "Seconds with interrupts off (1..60)");

static unsigned int delay_ms;
module_param(delay_ms, uint, 0444);
MODULE_PARM_DESC(delay_ms, "Sleep this long before the spin (at most 10000)");

static bool console;
module_param(console, bool, 0444);
MODULE_PARM_DESC(console, "Hold console_lock while spinning");

static bool touch;
module_param(touch, bool, 0444);
MODULE_PARM_DESC(touch, "Call touch_nmi_watchdog() every 100 ms");

static bool nmi;
module_param(nmi, bool, 0444);
MODULE_PARM_DESC(nmi, "Spin in an NMI handler");

static bool irq;
module_param(irq, bool, 0444);
MODULE_PARM_DESC(irq, "Spin in a hard interrupt (a pinned hrtimer's callback)");

static bool portlock;
module_param(portlock, bool, 0444);
MODULE_PARM_DESC(portlock, "Hold ttyS0's port lock while spinning");

static int pulse_cpu = -1;
module_param(pulse_cpu, int, 0444);
MODULE_PARM_DESC(pulse_cpu, "CPU that holds ttyS0's port lock in 20 ms pulses during the spin");

static int also_cpu = -1;
module_param(also_cpu, int, 0444);
MODULE_PARM_DESC(also_cpu, "A second CPU that spins as long, at the same time");

static bool all;
module_param(all, bool, 0444);
MODULE_PARM_DESC(all, "Every other online CPU spins as long, at the same time");

#define PULSE_HELD_NS	(20 * NSEC_PER_MSEC)
#define PULSE_GAP_US	200

static DECLARE_COMPLETION(lockup_done);
static DECLARE_COMPLETION(pulse_done);
static DECLARE_COMPLETION(also_done);
static atomic_t also_left = ATOMIC_INIT(1);	/* threads + the init's ref */
static struct uart_port *port0;
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

static struct hrtimer irq_timer;
static DECLARE_COMPLETION(irq_done);

static enum hrtimer_restart nmiprof_lockup_irq(struct hrtimer *t)
{
	nmiprof_lockup_spin(ktime_get_mono_fast_ns() + secs * NSEC_PER_SEC);
	complete(&irq_done);
	return HRTIMER_NORESTART;
}

/*
 * HARD: run from the timer interrupt itself, even on PREEMPT_RT.  The
 * kthread keeps the CPU meanwhile, so that the interrupted task is ours
 * and not the idle task.
 */
static void nmiprof_lockup_in_irq(void)
{
	hrtimer_init(&irq_timer, CLOCK_MONOTONIC, HRTIMER_MODE_REL_PINNED_HARD);
	irq_timer.function = nmiprof_lockup_irq;
	hrtimer_start(&irq_timer, ns_to_ktime(NSEC_PER_MSEC),
		      HRTIMER_MODE_REL_PINNED_HARD);
	while (!completion_done(&irq_done))
		cpu_relax();
}

static int nmiprof_lockup_fn(void *unused)
{
	unsigned long flags, port_flags = 0;

	msleep(delay_ms);
	pr_info("nmiprof_lockup: spinning now on CPU %u for %u s%s%s%s%s\n",
		cpu, secs, console ? ", holding console_lock" : "",
		portlock ? ", holding ttyS0's port lock" : "",
		touch ? ", touching the NMI watchdog" : "",
		nmi ? ", in NMI" : irq ? ", in hardirq" : "");
	if (console) {
		console_lock();
		pr_info("nmiprof_lockup: console_lock held\n");
	}
	if (portlock)
		spin_lock_irqsave(&port0->lock, port_flags);
	if (nmi) {
		nmiprof_lockup_in_nmi();
	} else if (irq) {
		nmiprof_lockup_in_irq();
	} else {
		local_irq_save(flags);
		nmiprof_lockup_spin(ktime_get_mono_fast_ns() +
				    secs * NSEC_PER_SEC);
		local_irq_restore(flags);
	}
	if (portlock)
		spin_unlock_irqrestore(&port0->lock, port_flags);
	if (console)
		console_unlock();
	pr_info("nmiprof_lockup: done, CPU %u had interrupts off for %u s\n",
		cpu, secs);
	complete(&lockup_done);
	return 0;
}

static void nmiprof_lockup_also_put(void)
{
	if (atomic_dec_and_test(&also_left))
		complete(&also_done);
}

static int nmiprof_lockup_also_fn(void *unused)
{
	unsigned long flags;

	pr_info("nmiprof_lockup: spinning now on CPU %d for %u s, too\n",
		smp_processor_id(), secs);
	local_irq_save(flags);
	nmiprof_lockup_spin(ktime_get_mono_fast_ns() + secs * NSEC_PER_SEC);
	local_irq_restore(flags);
	nmiprof_lockup_also_put();
	return 0;
}

/* A marker line straight to ttyS0, polled, as nmiprof's writer does. */
static void pulse_mark(const char *what, unsigned int n)
{
	char line[48];
	int i, len, us;

	len = scnprintf(line, sizeof(line), "portlock: %s %u\r\n", what, n);
	for (i = 0; i < len; i++) {
		for (us = 0; us < 10000; us++) {
			if (inb(port0->iobase + UART_LSR) & UART_LSR_THRE)
				break;
			udelay(1);
		}
		outb(line[i], port0->iobase + UART_TX);
	}
}

static int nmiprof_lockup_pulse_fn(void *unused)
{
	u64 end = ktime_get_mono_fast_ns() + (secs + 1) * NSEC_PER_SEC;
	unsigned long flags;
	unsigned int n = 0;
	u64 until;

	while (ktime_get_mono_fast_ns() < end) {
		spin_lock_irqsave(&port0->lock, flags);
		pulse_mark("held", n);
		until = ktime_get_mono_fast_ns() + PULSE_HELD_NS;
		while (ktime_get_mono_fast_ns() < until)
			cpu_relax();
		pulse_mark("released", n++);
		spin_unlock_irqrestore(&port0->lock, flags);
		udelay(PULSE_GAP_US);
		cond_resched();
	}
	pr_info("nmiprof_lockup: %u port lock pulses on CPU %d\n", n, pulse_cpu);
	complete(&pulse_done);
	return 0;
}

/* A kthread bound to CPU on, not woken yet. */
static struct task_struct *nmiprof_lockup_thread(int (*fn)(void *),
						 const char *name, int on)
{
	struct task_struct *t = kthread_create(fn, NULL, "%s/%d", name, on);

	if (!IS_ERR(t))
		kthread_bind(t, on);
	return t;
}

static bool nmiprof_lockup_other_cpu(int other)
{
	return other >= 0 && other != cpu && other < nr_cpu_ids &&
	       cpu_online(other);
}

static DEFINE_PER_CPU(struct task_struct *, also_task);

/* The CPUs that spin besides @cpu: @also_cpu, or with @all every other. */
static void nmiprof_lockup_also_cpus(struct cpumask *m)
{
	unsigned int c;

	cpumask_clear(m);
	if (also_cpu >= 0)
		cpumask_set_cpu(also_cpu, m);
	if (all)
		for_each_online_cpu(c)
			if (c != cpu && c != pulse_cpu)
				cpumask_set_cpu(c, m);
}

static void nmiprof_lockup_stop_also(const struct cpumask *m)
{
	unsigned int c;

	/* Never woken: kthread_stop() ends them before fn runs. */
	for_each_cpu(c, m)
		if (per_cpu(also_task, c))
			kthread_stop(per_cpu(also_task, c));
}

static int __init nmiprof_lockup_init(void)
{
	struct task_struct *t, *pulse = NULL;
	static struct cpumask also;
	unsigned int c;

	if (secs < 1 || secs > 60 || delay_ms > 10000 || cpu >= nr_cpu_ids ||
	    !cpu_online(cpu))
		return -EINVAL;
	if ((pulse_cpu != -1 && !nmiprof_lockup_other_cpu(pulse_cpu)) ||
	    (also_cpu != -1 && !nmiprof_lockup_other_cpu(also_cpu)) ||
	    (also_cpu != -1 && also_cpu == pulse_cpu))
		return -EINVAL;
	if (portlock || pulse_cpu >= 0) {
		port0 = &serial8250_get_port(0)->port;
		if (port0->type == PORT_UNKNOWN || port0->iotype != UPIO_PORT)
			return -ENODEV;
	}
	/* All threads exist before any runs: a failure stops the rest. */
	if (pulse_cpu >= 0) {
		pulse = nmiprof_lockup_thread(nmiprof_lockup_pulse_fn,
					      "np_pulse", pulse_cpu);
		if (IS_ERR(pulse))
			return PTR_ERR(pulse);
	}
	nmiprof_lockup_also_cpus(&also);
	for_each_cpu(c, &also) {
		t = nmiprof_lockup_thread(nmiprof_lockup_also_fn,
					  "np_lockup", c);
		if (IS_ERR(t))
			goto fail;
		per_cpu(also_task, c) = t;
	}
	t = nmiprof_lockup_thread(nmiprof_lockup_fn, "np_lockup", cpu);
	if (IS_ERR(t))
		goto fail;
	if (pulse)
		wake_up_process(pulse);
	else
		complete(&pulse_done);
	for_each_cpu(c, &also) {
		atomic_inc(&also_left);
		wake_up_process(per_cpu(also_task, c));
	}
	nmiprof_lockup_also_put();
	wake_up_process(t);
	return 0;
fail:
	if (pulse)
		kthread_stop(pulse);
	nmiprof_lockup_stop_also(&also);
	return PTR_ERR(t);
}

static void __exit nmiprof_lockup_exit(void)
{
	wait_for_completion(&lockup_done);
	wait_for_completion(&pulse_done);
	wait_for_completion(&also_done);
}

module_init(nmiprof_lockup_init);
module_exit(nmiprof_lockup_exit);

MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("nmiprof test: hard-lock a CPU");
