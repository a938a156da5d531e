// SPDX-License-Identifier: GPL-2.0
/*
 * NMI-safe polled UART writer for lockup reports.
 *
 * It does what serial8250_console_write() does during an oops: save IER
 * and mask the UART's interrupts, poll LSR for THRE before each byte,
 * wait for the transmitter to drain, restore IER, and only ever *try* the
 * driver's port lock, which the stuck CPU may hold.
 *
 * When the 8250 driver owns our port, each line is written under its
 * port lock if that comes within NP_UART_PORT_LOCK_MS: console records
 * and tty output from other CPUs then land between our lines instead of
 * inside them (CI once got "[C3]o nmik: iprof: CPU 3 recovered" from a
 * shell writing while the line went out).  A holder that does not let go
 * is presumed stuck, and the rest of the report goes out without the
 * lock, interleaving if it must.  LSR error bits read here are not seen
 * by the driver; acceptable for a last-gasp report.
 *
 * Every wait is bounded, so a dead or flow-controlled port costs at most
 * NP_UART_TX_TIMEOUT_US per write instead of hanging an NMI handler.
 */
#define pr_fmt(fmt) "nmiprof: " fmt

#include <linux/atomic.h>
#include <linux/delay.h>
#include <linux/io.h>
#include <linux/module.h>
#include <linux/serial_8250.h>
#include <linux/serial_reg.h>
#include <linux/smp.h>

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

static int uart_line;
module_param(uart_line, int, 0444);
MODULE_PARM_DESC(uart_line,
		 "8250 line (ttyS<n>) for lockup reports when uart_io is 0; -1: no UART output");

static struct {
	unsigned long	iobase;
	void __iomem	*membase;
	unsigned char	iotype;		/* UPIO_PORT, UPIO_MEM or UPIO_MEM32 */
	unsigned char	regshift;
	bool		present;
	/* the 8250 driver's port at that address, NULL if none */
	struct uart_port *port;
} np_uart;

/* CPU that owns the port for a whole report, -1 when free. */
static atomic_t np_uart_owner = ATOMIC_INIT(-1);

/* The port lock's holder did not let go: write this report unlocked. */
static bool np_uart_port_stuck;

static unsigned int np_uart_in(int offset)
{
	switch (np_uart.iotype) {
	case UPIO_MEM:
		return readb(np_uart.membase + (offset << np_uart.regshift));
	case UPIO_MEM32:
		return readl(np_uart.membase + (offset << np_uart.regshift));
	default:
		return inb(np_uart.iobase + offset);
	}
}

static void np_uart_out(int offset, unsigned int value)
{
	switch (np_uart.iotype) {
	case UPIO_MEM:
		writeb(value, np_uart.membase + (offset << np_uart.regshift));
		break;
	case UPIO_MEM32:
		writel(value, np_uart.membase + (offset << np_uart.regshift));
		break;
	default:
		outb(value, np_uart.iobase + offset);
		break;
	}
}

static bool np_uart_wait(unsigned int bits)
{
	unsigned int us;

	for (us = 0; us < NP_UART_TX_TIMEOUT_US; us++) {
		if ((np_uart_in(UART_LSR) & bits) == bits)
			return true;
		udelay(1);
	}
	return false;
}

static bool np_uart_putc(char c)
{
	if (!np_uart_wait(UART_LSR_THRE))
		return false;
	np_uart_out(UART_TX, c);
	return true;
}

/* Take the driver's port lock for one line; false: write without it. */
static bool np_uart_line_begin(void)
{
	unsigned int us;

	if (!np_uart.port || READ_ONCE(np_uart_port_stuck))
		return false;
	for (us = 0; us < NP_UART_PORT_LOCK_MS * USEC_PER_MSEC; us++) {
		if (np_uart_port_trylock(np_uart.port))
			return true;
		udelay(1);
	}
	WRITE_ONCE(np_uart_port_stuck, true);
	/* Says why this report's lines may come out mixed with others'. */
	pr_warn("ttyS%d's port lock was not free for %d ms: this report goes out without it\n",
		np_uart.port->line, NP_UART_PORT_LOCK_MS);
	return false;
}

void np_uart_write(const char *s, size_t len)
{
	unsigned long flags;
	unsigned int ier;
	bool locked;
	size_t i;

	if (!np_uart.present)
		return;

	/*
	 * The driver's irq handler takes the port lock: never hold it with
	 * interrupts on (we run in NMI or hardirq anyway).
	 */
	local_irq_save(flags);
	locked = np_uart_line_begin();
	ier = np_uart_in(UART_IER);
	np_uart_out(UART_IER, 0);
	for (i = 0; i < len; i++) {
		if (s[i] == '\n' && !np_uart_putc('\r'))
			break;
		if (!np_uart_putc(s[i]))
			break;
	}
	/* Drain before giving the driver its interrupts back. */
	np_uart_wait(UART_LSR_TEMT | UART_LSR_THRE);
	np_uart_out(UART_IER, ier);
	if (locked)
		np_uart_port_unlock(np_uart.port);
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

#ifdef CONFIG_SERIAL_8250
/*
 * The driver's serial8250_get_port(), through a reference on its module
 * held for as long as np_uart.port may point into its ports.  symbol_get:
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
	np_uart.port = NULL;
	if (np_8250_get_port)
		symbol_put(serial8250_get_port);
	np_8250_get_port = NULL;
}

/* Write to the port the 8250 driver has set up as ttyS<line>. */
static void np_uart_from_8250(int line)
{
	struct uart_port *port;

	if (line >= CONFIG_SERIAL_8250_NR_UARTS) {
		pr_warn("uart_line=%d: no such 8250 line\n", line);
		return;
	}
	if (!np_uart_8250_get()) {
		pr_info("no 8250 driver; set uart_io= for lockup reports on a UART\n");
		return;
	}
	port = &np_8250_get_port(line)->port;
	if (port->type == PORT_UNKNOWN || (!port->iobase && !port->membase)) {
		pr_info("ttyS%d is not a UART; no direct UART output\n", line);
	} else if (port->iotype != UPIO_PORT && port->iotype != UPIO_MEM &&
		   port->iotype != UPIO_MEM32) {
		pr_info("ttyS%d: unsupported iotype %u; no direct UART output\n",
			line, port->iotype);
	} else {
		np_uart.iobase = port->iobase;
		np_uart.membase = port->membase;
		np_uart.iotype = port->iotype;
		np_uart.regshift = port->regshift;
		np_uart.port = port;
		np_uart.present = true;
		pr_info("lockup reports go to ttyS%d directly\n", line);
	}
}

/* uart_io= given: the driver's port at that address, if any, for its lock. */
static void np_uart_find_8250(unsigned long iobase)
{
	struct uart_port *port;
	int line;

	if (!np_uart_8250_get())
		return;
	for (line = 0; line < CONFIG_SERIAL_8250_NR_UARTS; line++) {
		port = &np_8250_get_port(line)->port;
		if (port->type != PORT_UNKNOWN && port->iotype == UPIO_PORT &&
		    port->iobase == iobase) {
			np_uart.port = port;
			return;
		}
	}
}
#else
static void np_uart_from_8250(int line)
{
	pr_info("no 8250 driver; set uart_io= for lockup reports on a UART\n");
}

static void np_uart_find_8250(unsigned long iobase)
{
}

static void np_uart_8250_put(void)
{
}
#endif

int np_uart_init(void)
{
	/* On PREEMPT_RT the port lock sleeps: never take it from NMI. */
	bool port_lock = !IS_ENABLED(CONFIG_PREEMPT_RT);

	if (uart_io) {
		/* The driver may own the region: share it, as earlycon does. */
		np_uart.iobase = uart_io;
		np_uart.iotype = UPIO_PORT;
		np_uart.present = true;
		if (port_lock)
			np_uart_find_8250(uart_io);
		if (np_uart.port)
			pr_info("lockup reports go to the UART at I/O port %#lx, ttyS%d of the 8250 driver\n",
				uart_io, np_uart.port->line);
		else
			pr_info("lockup reports go to the UART at I/O port %#lx\n",
				uart_io);
	} else if (uart_line >= 0) {
		np_uart_from_8250(uart_line);
	}
	if (!port_lock)
		np_uart.port = NULL;
	return 0;
}

void np_uart_exit(void)
{
	np_uart.present = false;
	np_uart_8250_put();
}
