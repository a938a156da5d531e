// SPDX-License-Identifier: GPL-2.0
/*
 * NMI-safe polled UART writer for lockup reports.
 *
 * It does what serial8250_console_write() does: under the driver's port
 * lock, save IER and mask the UART's interrupts, poll LSR for THRE (and
 * CTS with console flow control) before each byte, wait for the
 * transmitter to drain, restore IER.  It only ever *tries* the port
 * lock, which the stuck CPU may hold.
 *
 * Each line is written under the port lock if that comes within
 * NP_UART_PORT_LOCK_MS: console records and tty output from other CPUs
 * then land between our lines instead of inside them (CI once got
 * "[C3]o nmik: iprof: CPU 3 recovered" from a shell writing while the
 * line went out).  A holder that does not let go is presumed stuck, and
 * the rest of the report goes out without the lock, interleaving if it
 * must.  Without the lock we touch no register the driver or its console
 * keeps state in: IER stays as the holder left it, since the console
 * restores the IER it read on entry and the driver trusts its cached
 * up->ier (restoring a value read while the holder had IER cleared
 * leaves the tty without transmit interrupts for good); a pending UART
 * interrupt just waits for the port lock, as it would anyway.  Bytes go
 * out only while LCR.DLAB is clear, so that none lands in the divisor
 * latch of a set_termios() in progress; that check and the write are
 * not atomic without the lock, a window of one register access.  LSR
 * error bits read here are not seen by the driver; acceptable for a
 * last-gasp report.  RS485 ports (em485), whose driver must turn the
 * line around, get no direct output.
 *
 * The registers are looked up in the driver's port for every line, and
 * when the driver unbinds from the port's device, output stops before
 * the driver unmaps them (np_uart_bus_notify()); it starts again when a
 * driver has bound to that device and set the port up anew.
 *
 * Every wait is bounded, so a dead or flow-controlled port costs at most
 * NP_UART_TX_TIMEOUT_US per byte instead of hanging an NMI handler.
 */
#define pr_fmt(fmt) "nmiprof: " fmt

#include <linux/atomic.h>
#include <linux/delay.h>
#include <linux/device.h>
#include <linux/io.h>
#include <linux/module.h>
#include <linux/notifier.h>
#include <linux/rcupdate.h>
#include <linux/serial_8250.h>
#include <linux/serial_reg.h>
#include <linux/smp.h>
#include <linux/timekeeping.h>

#include "compat.h"
#include "nmi_uart.h"

/* Not in include/linux: drivers/tty/serial/8250/8250.h, GPL export. */
struct uart_8250_port *serial8250_get_port(int line);

/* What serial8250 allows for one byte (wait_for_lsr()). */
#define NP_UART_TX_TIMEOUT_US	10000
/* A whole CPU's report at 115200 baud takes well under a second. */
#define NP_UART_LOCK_TIMEOUT_US	3000000
/* One console record of 1 KiB at 115200 baud: 90 ms. */
#define NP_UART_PORT_LOCK_MS	100

static unsigned long uart_io;
module_param(uart_io, ulong, 0444);
MODULE_PARM_DESC(uart_io,
		 "I/O port of a 16550 UART for lockup reports, e.g. 0x3f8 (default: the 8250 driver's port uart_line)");

/* uart_line's default: the line the kernel console is on. */
#define NP_UART_LINE_CONSOLE	-2

static int uart_line = NP_UART_LINE_CONSOLE;
module_param(uart_line, int, 0444);
MODULE_PARM_DESC(uart_line,
		 "8250 line (ttyS<n>) for lockup reports when uart_io is 0; -1: no UART output; -2 (default): the kernel console's ttyS line, none if it has none");

static struct {
	bool		present;	/* output on; see np_uart_bus_notify() */
	bool		port_lock;	/* try the driver's port lock */
	unsigned long	iobase;		/* uart_io= that no driver owns */
	/* the 8250 driver's port at that address, NULL if none */
	struct uart_8250_port *up;
	struct device	*dev;		/* up's device, referenced */
} np_uart;

/* Where one line's registers are, as the driver's port says now. */
struct np_uart_regs {
	unsigned long	iobase;
	void __iomem	*membase;
	unsigned char	iotype;		/* UPIO_PORT, UPIO_MEM or UPIO_MEM32 */
	unsigned char	regshift;
	bool		locked;		/* under the driver's port lock */
	bool		cts;		/* console flow control: wait for CTS */
};

/* CPU that owns the port for a whole report, -1 when free. */
static atomic_t np_uart_owner = ATOMIC_INIT(-1);

/* The port lock's holder did not let go: write this report unlocked. */
static bool np_uart_port_stuck;

static unsigned int np_uart_in(const struct np_uart_regs *r, int offset)
{
	switch (r->iotype) {
	case UPIO_MEM:
		return readb(r->membase + (offset << r->regshift));
	case UPIO_MEM32:
		return readl(r->membase + (offset << r->regshift));
	default:
		return inb(r->iobase + offset);
	}
}

static void np_uart_out(const struct np_uart_regs *r, int offset,
			unsigned int value)
{
	switch (r->iotype) {
	case UPIO_MEM:
		writeb(value, r->membase + (offset << r->regshift));
		break;
	case UPIO_MEM32:
		writel(value, r->membase + (offset << r->regshift));
		break;
	default:
		outb(value, r->iobase + offset);
		break;
	}
}

/* Wait until (reg & mask) == want; false after NP_UART_TX_TIMEOUT_US. */
static bool np_uart_wait(const struct np_uart_regs *r, int reg,
			 unsigned int mask, unsigned int want)
{
	unsigned int us;

	for (us = 0; us < NP_UART_TX_TIMEOUT_US; us++) {
		if ((np_uart_in(r, reg) & mask) == want)
			return true;
		udelay(1);
	}
	return false;
}

static bool np_uart_putc(const struct np_uart_regs *r, char c)
{
	if (!np_uart_wait(r, UART_LSR, UART_LSR_THRE, UART_LSR_THRE))
		return false;
	if (r->cts && !np_uart_wait(r, UART_MSR, UART_MSR_CTS, UART_MSR_CTS))
		return false;
	/* THR and DLL share an address: a set_termios() may be under way. */
	if (!np_uart_wait(r, UART_LCR, UART_LCR_DLAB, 0))
		return false;
	np_uart_out(r, UART_TX, c);
	return true;
}

/* Where up's registers are now; false: the driver has no UART there. */
static bool np_uart_port_regs(struct uart_8250_port *up, struct np_uart_regs *r)
{
	struct uart_port *port = &up->port;

	r->iotype = READ_ONCE(port->iotype);
	r->iobase = READ_ONCE(port->iobase);
	r->membase = READ_ONCE(port->membase);
	r->regshift = READ_ONCE(port->regshift);
	r->cts = READ_ONCE(port->flags) & UPF_CONS_FLOW;
	if (READ_ONCE(port->type) == PORT_UNKNOWN || READ_ONCE(up->em485))
		return false;
	if (r->iotype == UPIO_PORT)
		return r->iobase;
	return (r->iotype == UPIO_MEM || r->iotype == UPIO_MEM32) && r->membase;
}

static bool np_uart_regs(struct np_uart_regs *r)
{
	*r = (struct np_uart_regs){};
	if (np_uart.up)
		return np_uart_port_regs(np_uart.up, r);
	r->iobase = np_uart.iobase;
	r->iotype = UPIO_PORT;
	return true;
}

/* Take the driver's port lock for one line; false: write without it. */
static bool np_uart_line_begin(void)
{
	u64 end = ktime_get_mono_fast_ns() + NP_UART_PORT_LOCK_MS * NSEC_PER_MSEC;

	if (!np_uart.up || !np_uart.port_lock || READ_ONCE(np_uart_port_stuck))
		return false;
	/* By the clock: 10^5 iterations of udelay(1) took 1.6 s under TCG. */
	do {
		if (np_uart_port_trylock(&np_uart.up->port))
			return true;
		udelay(1);
	} while (ktime_get_mono_fast_ns() < end);
	WRITE_ONCE(np_uart_port_stuck, true);
	/* Says why this report's lines may come out mixed with others'. */
	pr_warn("ttyS%d's port lock was not free for %d ms: this report goes out without it\n",
		np_uart.up->port.line, NP_UART_PORT_LOCK_MS);
	return false;
}

void np_uart_write(const char *s, size_t len)
{
	struct np_uart_regs r;
	unsigned long flags;
	unsigned int ier = 0;
	bool own_ier;
	size_t i;

	/*
	 * Interrupts stay off from the check of present to the last
	 * register access: np_uart_bus_notify()'s synchronize_rcu() waits
	 * for that.  The driver's irq handler takes the port lock: never
	 * hold it with interrupts on (we run in NMI or hardirq anyway).
	 */
	local_irq_save(flags);
	/* Pairs with smp_store_release() in np_uart_bus_notify(). */
	if (!smp_load_acquire(&np_uart.present) || !np_uart_regs(&r))
		goto out;
	r.locked = np_uart_line_begin();
	/* IER is ours only under the port lock, or with no driver at all. */
	own_ier = r.locked || !np_uart.up;
	if (own_ier) {
		if (!np_uart_wait(&r, UART_LCR, UART_LCR_DLAB, 0))
			goto unlock;
		ier = np_uart_in(&r, UART_IER);
		np_uart_out(&r, UART_IER, 0);
	}
	for (i = 0; i < len; i++) {
		if (s[i] == '\n' && !np_uart_putc(&r, '\r'))
			break;
		if (!np_uart_putc(&r, s[i]))
			break;
	}
	/* Drain before giving the driver its interrupts back. */
	np_uart_wait(&r, UART_LSR, UART_LSR_TEMT | UART_LSR_THRE,
		     UART_LSR_TEMT | UART_LSR_THRE);
	if (own_ier)
		np_uart_out(&r, UART_IER, ier);
unlock:
	if (r.locked)
		np_uart_port_unlock(&np_uart.up->port);
out:
	local_irq_restore(flags);
}

bool np_uart_lock(void)
{
	int cpu = smp_processor_id();
	unsigned int us;
	int old;

	for (us = 0; us < NP_UART_LOCK_TIMEOUT_US; us++) {
		/* Pairs with atomic_set_release() in np_uart_unlock(). */
		old = atomic_cmpxchg_acquire(&np_uart_owner, -1, cpu);
		if (old == -1) {
			/* A new report tries the port lock afresh. */
			WRITE_ONCE(np_uart_port_stuck, false);
			return true;
		}
		if (old == cpu)
			return false;	/* re-entered: never wait on ourselves */
		udelay(1);
	}
	return false;			/* the holder is stuck: write anyway */
}

void np_uart_unlock(void)
{
	/* Our port writes are done before the next owner's begin. */
	atomic_set_release(&np_uart_owner, -1);
}

/*
 * The driver unbinding from the port's device is about to release the
 * port (and iounmap an MMIO one): stop writing to it, and wait for the
 * writers that saw it on, which run with interrupts off.  Once a driver
 * is bound to the device again, its probe has registered the port anew
 * (the 8250 driver keeps its ports in one array, so up stays valid):
 * write to it again if it is still one we can.  Binding and unbinding a
 * device are serialised by its device lock.
 */
static int np_uart_bus_notify(struct notifier_block *nb, unsigned long action,
			      void *data)
{
	struct np_uart_regs r;
	bool on = READ_ONCE(np_uart.present);

	if (data != np_uart.dev)
		return NOTIFY_DONE;
	if (action == BUS_NOTIFY_UNBIND_DRIVER && on) {
		WRITE_ONCE(np_uart.present, false);
		synchronize_rcu();
		pr_info("ttyS%d's driver unbinds: no more direct UART output\n",
			np_uart.up->port.line);
		return NOTIFY_OK;
	}
	if (action == BUS_NOTIFY_BOUND_DRIVER && !on) {
		if (np_uart.up->port.type == PORT_UNKNOWN ||
		    np_uart.up->port.dev != np_uart.dev ||
		    !np_uart_port_regs(np_uart.up, &r))
			return NOTIFY_DONE;
		/* Pairs with smp_load_acquire() in np_uart_write(). */
		smp_store_release(&np_uart.present, true);
		pr_info("ttyS%d's driver is bound again: direct UART output again\n",
			np_uart.up->port.line);
		return NOTIFY_OK;
	}
	return NOTIFY_DONE;
}

static struct notifier_block np_uart_bus_nb = {
	.notifier_call = np_uart_bus_notify,
};

/* Output to the driver's port up while a driver is bound to it. */
static void np_uart_use_port(struct uart_8250_port *up)
{
	struct device *dev = up->port.dev;

	if (dev && dev->bus) {
		if (bus_register_notifier(dev->bus, &np_uart_bus_nb)) {
			pr_warn("ttyS%d: cannot watch its driver; no direct UART output\n",
				up->port.line);
			return;
		}
		np_uart.dev = get_device(dev);
	}
	np_uart.up = up;
	np_uart.present = true;
}

static void np_uart_put_port(void)
{
	if (np_uart.dev) {
		bus_unregister_notifier(np_uart.dev->bus, &np_uart_bus_nb);
		put_device(np_uart.dev);
		np_uart.dev = NULL;
	}
	np_uart.up = NULL;
}

#ifdef CONFIG_SERIAL_8250
/*
 * The driver's serial8250_get_port(), through a reference on its module
 * held for as long as np_uart.up may point into its ports.  symbol_get:
 * a kernel without the 8250 driver can still load us.
 */
static struct uart_8250_port *(*np_8250_get_port)(int line);

static bool np_uart_8250_get(void)
{
	if (!np_8250_get_port)
		np_8250_get_port = symbol_get(serial8250_get_port);
	return np_8250_get_port;
}

static void np_uart_8250_put(void)
{
	if (np_8250_get_port)
		symbol_put(serial8250_get_port);
	np_8250_get_port = NULL;
}

/* Write to the port the 8250 driver has set up as ttyS<line>. */
static void np_uart_from_8250(int line)
{
	struct uart_8250_port *up;
	struct np_uart_regs r;

	if (line >= CONFIG_SERIAL_8250_NR_UARTS) {
		pr_warn("uart_line=%d: no such 8250 line\n", line);
		return;
	}
	if (!np_uart_8250_get()) {
		pr_info("no 8250 driver; set uart_io= for lockup reports on a UART\n");
		return;
	}
	up = np_8250_get_port(line);
	if (!np_uart_port_regs(up, &r)) {
		pr_info("ttyS%d is not a UART nmiprof can write to (iotype %u%s); no direct UART output\n",
			line, up->port.iotype, up->em485 ? ", RS485" : "");
		return;
	}
	np_uart_use_port(up);
	if (np_uart.present)
		pr_info("lockup reports go to ttyS%d directly\n", line);
}

/*
 * The ttyS line of the kernel console, -1 if it is on none: a report
 * belongs where the operator reads the kernel's messages, and a port
 * that is no console may be a modem or a device nobody expects bytes on.
 * uart_console(): the 8250 console's index is a line only once the
 * console was set up on it (console=ttyS<n>), -1 before.
 */
static int np_uart_console_line(void)
{
	struct uart_8250_port *up;
	int line;

	if (!np_uart_8250_get())
		return -1;
	for (line = 0; line < CONFIG_SERIAL_8250_NR_UARTS; line++) {
		up = np_8250_get_port(line);
		if (up->port.type != PORT_UNKNOWN && uart_console(&up->port))
			return line;
	}
	return -1;
}

/* uart_io= given: the driver's port at that address, if any. */
static struct uart_8250_port *np_uart_find_8250(unsigned long iobase)
{
	struct uart_8250_port *up;
	int line;

	if (!np_uart_8250_get())
		return NULL;
	for (line = 0; line < CONFIG_SERIAL_8250_NR_UARTS; line++) {
		up = np_8250_get_port(line);
		if (up->port.type != PORT_UNKNOWN &&
		    up->port.iotype == UPIO_PORT && up->port.iobase == iobase)
			return up;
	}
	return NULL;
}
#else
static int np_uart_console_line(void)
{
	return -1;
}

static void np_uart_from_8250(int line)
{
	pr_info("no 8250 driver; set uart_io= for lockup reports on a UART\n");
}

static struct uart_8250_port *np_uart_find_8250(unsigned long iobase)
{
	return NULL;
}

static void np_uart_8250_put(void)
{
}
#endif

int np_uart_init(void)
{
	struct uart_8250_port *up;
	int line;

	/* On PREEMPT_RT the port lock sleeps: never take it from NMI. */
	np_uart.port_lock = !IS_ENABLED(CONFIG_PREEMPT_RT);
	if (uart_io) {
		/* The driver may own the region: share it, as earlycon does. */
		up = np_uart_find_8250(uart_io);
		if (up) {
			np_uart_use_port(up);
			if (np_uart.present)
				pr_info("lockup reports go to the UART at I/O port %#lx, ttyS%d of the 8250 driver\n",
					uart_io, up->port.line);
		} else {
			np_uart.iobase = uart_io;
			np_uart.present = true;
			pr_info("lockup reports go to the UART at I/O port %#lx\n",
				uart_io);
		}
	} else if (uart_line == NP_UART_LINE_CONSOLE) {
		line = np_uart_console_line();
		if (line >= 0)
			np_uart_from_8250(line);
		else
			pr_info("the console is on no 8250 port: no direct UART output (uart_line=, uart_io= choose one)\n");
	} else if (uart_line >= 0) {
		np_uart_from_8250(uart_line);
	}
	return 0;
}

void np_uart_exit(void)
{
	np_uart.present = false;
	np_uart_put_port();
	np_uart_8250_put();
}
