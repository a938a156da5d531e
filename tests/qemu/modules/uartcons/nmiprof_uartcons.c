// SPDX-License-Identifier: GPL-2.0
/*
 * nmiprof_uartcons: the 8250 driver busy on ttyS0 while nmiprof reports.
 *
 *   insmod nmiprof_uartcons.ko [cpu=2] [termios=1]
 *
 * A kthread bound to @cpu waits for the next report to begin and then,
 * holding ttyS0's port lock with interrupts off, does what the driver
 * does.  A kprobe on nmiprof's np_uart_lock() tells it when, and holds
 * the reporting CPU there (up to 1 s) until it has the lock: under TCG
 * on a loaded host, a report takes a few ms and the kthread may take
 * longer to get going.  A kthread later than that finds the report gone
 * ahead and says so, without holding anything; it never printks with
 * the port lock held (the console would take it again).
 *
 *  - by default, a console flushing a backlog, as serial8250_console_write()
 *    does for each record: save IER, clear it, "transmit", restore the saved
 *    IER.  First one slow record, longer than nmiprof waits for the lock
 *    (100 ms; so its report goes out without it), then 300 ms of short
 *    ones.  The slow one ends just after nmiprof says it stops waiting (2 ms
 *    after a kprobe on vprintk() sees it say so), while the report's
 *    lines are being written.
 *    Just before, it queues tty output through the driver (uart_write()),
 *    so that a transmission is in progress, as with a shell writing: the
 *    driver then has UART_IER_THRI in its cached up->ier and waits for the
 *    THRE interrupt.  300 ms later it compares the UART's IER with up->ier.
 *
 *  - with @termios, a set_termios(): LCR.DLAB set until 20 ms after nmiprof
 *    stops waiting, then the divisor latch compared with what it was.
 *
 * With @loop_io, it only puts the UART at that I/O port, whose driver the
 * scenario has unbound, in loopback (MCR_LOOP): every byte anybody sends
 * there comes back in its receive FIFO.  Unload counts them.
 *
 * Unload compares IER with up->ier once more, and if they differ writes
 * up->ier back: the tty would stay hung, and with it the console output
 * that the scenario's results depend on.  The scenario reads the tty
 * first.
 */
#include <linux/completion.h>
#include <linux/delay.h>
#include <linux/io.h>
#include <linux/kprobes.h>
#include <linux/kthread.h>
#include <linux/module.h>
#include <linux/serial_8250.h>
#include <linux/serial_reg.h>
#include <linux/timekeeping.h>
#include <linux/tty.h>

/* Not in include/linux: drivers/tty/serial/8250/8250.h, GPL export. */
struct uart_8250_port *serial8250_get_port(int line);

static unsigned int cpu = 2;
module_param(cpu, uint, 0444);
MODULE_PARM_DESC(cpu, "CPU that keeps ttyS0 busy");

static bool termios;
module_param(termios, bool, 0444);
MODULE_PARM_DESC(termios, "Hold LCR.DLAB set instead of IER cleared");

static unsigned long loop_io;
module_param(loop_io, ulong, 0444);
MODULE_PARM_DESC(loop_io, "Only loop back the driverless UART at this I/O port");

#define SLOW_MAX_NS	(1500 * NSEC_PER_MSEC)
#define SLOW_EXTRA_NS	(2 * NSEC_PER_MSEC)
#define BACKLOG_NS	(300 * NSEC_PER_MSEC)
#define SHORT_RECORD_NS	(300 * NSEC_PER_USEC)
#define SHORT_GAP_US	150
#define DLAB_EXTRA_NS	(20 * NSEC_PER_MSEC)
#define REPORT_WAIT_NS	(60ULL * NSEC_PER_SEC)

static struct uart_8250_port *u8250;
enum { ARMED, REPORT_BEGUN, HOLDING, GAVE_UP, TOO_LATE };
static atomic_t state = ATOMIC_INIT(ARMED);
static DECLARE_COMPLETION(holder_done);

static void busy_until(u64 end)
{
	while (ktime_get_mono_fast_ns() < end)
		cpu_relax();
}

static int uartcons_kprobe(struct kprobe *p, struct pt_regs *regs)
{
	u64 end = ktime_get_mono_fast_ns() + NSEC_PER_SEC;

	/* On the holder's own CPU, waiting would only delay it. */
	if (smp_processor_id() == cpu ||
	    atomic_cmpxchg(&state, ARMED, REPORT_BEGUN) != ARMED)
		return 0;
	while (atomic_read(&state) == REPORT_BEGUN &&
	       ktime_get_mono_fast_ns() < end)
		cpu_relax();
	atomic_cmpxchg(&state, REPORT_BEGUN, TOO_LATE);
	return 0;
}

static struct kprobe kp = {
	.symbol_name	= "np_uart_lock",
	.pre_handler	= uartcons_kprobe,
};

/* nmiprof's "port lock was not free for 100 ms": vprintk(fmt, args). */
static int uartcons_printk(struct kprobe *p, struct pt_regs *regs)
{
	const char *fmt = (const char *)regs->di;

	if (atomic_read(&state) == HOLDING &&
	    strstr(fmt, "port lock was not free"))
		atomic_set(&state, GAVE_UP);
	return 0;
}

static struct kprobe kp_printk = {
	.symbol_name	= "vprintk",
	.pre_handler	= uartcons_printk,
};

/* Called with the port lock held: the report waits for it from now on. */
static bool holding(void)
{
	return atomic_cmpxchg(&state, REPORT_BEGUN, HOLDING) == REPORT_BEGUN;
}

/*
 * Keep what we hold until nmiprof stops waiting for it (its 100 ms are
 * several times that under TCG), then @extra_ns into what it writes
 * without the lock; at most SLOW_MAX_NS.  False if the limit ended it.
 */
static bool hold_until_gave_up(u64 extra_ns)
{
	u64 end = ktime_get_mono_fast_ns() + SLOW_MAX_NS;

	while (atomic_read(&state) != GAVE_UP &&
	       ktime_get_mono_fast_ns() < end)
		cpu_relax();
	busy_until(ktime_get_mono_fast_ns() + extra_ns);
	return atomic_read(&state) == GAVE_UP;
}

static void hold_report(bool late, bool gave_up)
{
	if (late)
		pr_err("nmiprof_uartcons: the report went ahead before CPU %u held ttyS0's port lock\n",
		       cpu);
	else if (!gave_up)
		pr_err("nmiprof_uartcons: the slow hold ended at its limit, not when nmiprof stopped waiting\n");
}

/*
 * One console record, as serial8250_console_write() brackets it; @ns 0:
 * a slow one, see hold_until_gave_up(), false if it did not go as meant.
 */
static bool console_record(u64 ns)
{
	struct uart_port *port = &u8250->port;
	bool late = false, gave_up = true;
	unsigned long flags;
	unsigned int ier;

	spin_lock_irqsave(&port->lock, flags);
	ier = serial_port_in(port, UART_IER);
	serial_port_out(port, UART_IER, 0);
	if (ns)
		busy_until(ktime_get_mono_fast_ns() + ns);
	else if (holding())
		gave_up = hold_until_gave_up(SLOW_EXTRA_NS);
	else
		late = true;
	serial_port_out(port, UART_IER, ier);
	spin_unlock_irqrestore(&port->lock, flags);
	hold_report(late, gave_up);
	return !late && gave_up;
}

/*
 * Output queued through the driver, as a tty write queues it; how many
 * bytes, -1 if ttyS0 is not open.  No printk: the report is waiting.
 */
static int tty_traffic(void)
{
	struct tty_struct *tty = tty_port_tty_get(&u8250->port.state->port);
	char line[80];
	int i, len, n = 0;

	if (!tty)
		return -1;
	for (i = 0; i < 24; i++) {
		len = scnprintf(line, sizeof(line),
				"uartcons: tty output %02d, queued as the report began\r\n",
				i);
		n += tty->ops->write(tty, line, len);
	}
	tty_kref_put(tty);
	return n;
}

/* IER as the driver has it cached; if not, put it back when @repair. */
static bool ier_check(const char *when, bool repair)
{
	struct uart_port *port = &u8250->port;
	unsigned int hw, cached;
	unsigned long flags;

	spin_lock_irqsave(&port->lock, flags);
	hw = serial_port_in(port, UART_IER);
	cached = u8250->ier;
	if (hw != cached && repair)
		serial_port_out(port, UART_IER, cached);
	spin_unlock_irqrestore(&port->lock, flags);
	if (hw == cached)
		pr_info("nmiprof_uartcons: %s: ttyS0 IER %#x, as the driver has it\n",
			when, hw);
	else
		pr_err("nmiprof_uartcons: %s: ttyS0 IER %#x, the driver has %#x%s\n",
		       when, hw, cached, repair ? "; written back" : "");
	return hw == cached;
}

static void console_backlog(void)
{
	int n = 1, queued;
	bool ok;
	u64 end;

	queued = tty_traffic();
	ok = console_record(0);
	if (queued < 0)
		pr_err("nmiprof_uartcons: ttyS0 is not open\n");
	else
		pr_info("nmiprof_uartcons: %d bytes of tty output queued\n",
			queued);
	if (!ok)
		return;
	end = ktime_get_mono_fast_ns() + BACKLOG_NS;
	while (ktime_get_mono_fast_ns() < end) {
		console_record(SHORT_RECORD_NS);
		udelay(SHORT_GAP_US);
		n++;
	}
	pr_info("nmiprof_uartcons: %d console records on CPU %u\n", n, cpu);
	msleep(300);
	ier_check("after the report", false);
}

static void slow_termios(void)
{
	struct uart_port *port = &u8250->port;
	unsigned int lcr, dl, dl_after;
	bool late, gave_up = false;
	unsigned long flags;

	spin_lock_irqsave(&port->lock, flags);
	late = !holding();
	lcr = serial_port_in(port, UART_LCR);
	serial_port_out(port, UART_LCR, lcr | UART_LCR_DLAB);
	dl = serial_port_in(port, UART_DLL) |
	     serial_port_in(port, UART_DLM) << 8;
	if (!late)
		gave_up = hold_until_gave_up(DLAB_EXTRA_NS);
	dl_after = serial_port_in(port, UART_DLL) |
		   serial_port_in(port, UART_DLM) << 8;
	if (dl_after != dl) {
		serial_port_out(port, UART_DLL, dl & 0xff);
		serial_port_out(port, UART_DLM, dl >> 8);
	}
	serial_port_out(port, UART_LCR, lcr);
	spin_unlock_irqrestore(&port->lock, flags);
	hold_report(late, gave_up);
	if (late)
		return;
	if (dl_after != dl)
		pr_err("nmiprof_uartcons: ttyS0's divisor latch went from %#x to %#x while LCR.DLAB was set\n",
		       dl, dl_after);
	else
		pr_info("nmiprof_uartcons: ttyS0's divisor latch stayed %#x with LCR.DLAB set\n",
			dl);
}

static int uartcons_fn(void *unused)
{
	u64 deadline = ktime_get_mono_fast_ns() + REPORT_WAIT_NS;

	while (atomic_read(&state) == ARMED) {
		if (ktime_get_mono_fast_ns() > deadline) {
			pr_err("nmiprof_uartcons: no report began\n");
			goto out;
		}
		cond_resched();
		cpu_relax();
	}
	if (termios)
		slow_termios();
	else
		console_backlog();
	pr_info("nmiprof_uartcons: a report began, ttyS0 was busy on CPU %u\n",
		cpu);
out:
	complete(&holder_done);
	return 0;
}

static unsigned int loop_mcr;

/* Count (and drain) what came back at loop_io; out of loopback again. */
static void loop_count(void)
{
	unsigned int n = 0;

	while ((inb(loop_io + UART_LSR) & UART_LSR_DR) && n < 65536) {
		inb(loop_io + UART_RX);
		n++;
	}
	outb(loop_mcr, loop_io + UART_MCR);
	if (n)
		pr_err("nmiprof_uartcons: %u bytes were sent to the UART at %#lx after its driver unbound\n",
		       n, loop_io);
	else
		pr_info("nmiprof_uartcons: nothing was sent to the UART at %#lx after its driver unbound\n",
			loop_io);
}

static int __init uartcons_init(void)
{
	struct task_struct *t;
	int ret;

	if (loop_io) {
		loop_mcr = inb(loop_io + UART_MCR);
		outb(loop_mcr | UART_MCR_LOOP, loop_io + UART_MCR);
		while (inb(loop_io + UART_LSR) & UART_LSR_DR)
			inb(loop_io + UART_RX);
		complete(&holder_done);
		return 0;
	}
	if (cpu >= nr_cpu_ids || !cpu_online(cpu))
		return -EINVAL;
	u8250 = serial8250_get_port(0);
	if (u8250->port.type == PORT_UNKNOWN || !u8250->port.state)
		return -ENODEV;
	ret = register_kprobe(&kp_printk);
	if (ret) {
		pr_err("nmiprof_uartcons: no kprobe on vprintk: %d\n", ret);
		return ret;
	}
	ret = register_kprobe(&kp);
	if (ret) {
		pr_err("nmiprof_uartcons: no kprobe on np_uart_lock: %d\n", ret);
		unregister_kprobe(&kp_printk);
		return ret;
	}
	t = kthread_create(uartcons_fn, NULL, "np_uartcons/%u", cpu);
	if (IS_ERR(t)) {
		unregister_kprobe(&kp);
		unregister_kprobe(&kp_printk);
		return PTR_ERR(t);
	}
	kthread_bind(t, cpu);
	wake_up_process(t);
	return 0;
}

static void __exit uartcons_exit(void)
{
	if (loop_io) {
		loop_count();
		return;
	}
	wait_for_completion(&holder_done);
	unregister_kprobe(&kp);
	unregister_kprobe(&kp_printk);
	pr_info("nmiprof_uartcons: kprobes missed: %lu on np_uart_lock, %lu on vprintk\n",
		kp.nmissed, kp_printk.nmissed);
	if (!termios)
		ier_check("at unload", true);
}

module_init(uartcons_init);
module_exit(uartcons_exit);

MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("nmiprof test: ttyS0's driver busy while nmiprof reports");
