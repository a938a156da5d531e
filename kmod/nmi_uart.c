// SPDX-License-Identifier: GPL-2.0
/*
 * NMI-safe polled UART writer for lockup reports.
 *
 * It does what serial8250_console_write() does, minus every lock: save
 * IER and mask the UART's interrupts, poll LSR for THRE before each byte,
 * wait for the transmitter to drain, restore IER.  Taking the port lock is
 * exactly what we must not do: the stuck CPU may hold it.  The price is
 * that our bytes can interleave with a console write that is in flight on
 * another CPU, and that LSR error bits read here are not seen by the
 * driver; both are acceptable for a last-gasp report.
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

#include "nmi_uart.h"

/* Not in include/linux: drivers/tty/serial/8250/8250.h, GPL export. */
struct uart_8250_port *serial8250_get_port(int line);

/* What serial8250 allows for one byte (wait_for_lsr()). */
#define NP_UART_TX_TIMEOUT_US	10000
/* A whole CPU's report at 115200 baud takes well under a second. */
#define NP_UART_LOCK_TIMEOUT_US	3000000

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
} np_uart;

/* CPU that owns the port for a whole report, -1 when free. */
static atomic_t np_uart_owner = ATOMIC_INIT(-1);

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

void np_uart_write(const char *s, size_t len)
{
	unsigned int ier;
	size_t i;

	if (!np_uart.present)
		return;

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
}

bool np_uart_lock(void)
{
	int cpu = smp_processor_id();
	unsigned int us;
	int old;

	for (us = 0; us < NP_UART_LOCK_TIMEOUT_US; us++) {
		/* Pairs with atomic_set_release() in np_uart_unlock(). */
		old = atomic_cmpxchg_acquire(&np_uart_owner, -1, cpu);
		if (old == -1)
			return true;
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
/* Borrow the address of a port the 8250 driver has set up. */
static void np_uart_from_8250(int line)
{
	struct uart_8250_port *(*get_port)(int line);
	struct uart_port *port;

	if (line >= CONFIG_SERIAL_8250_NR_UARTS) {
		pr_warn("uart_line=%d: no such 8250 line\n", line);
		return;
	}
	/* symbol_get: a kernel without the 8250 driver can still load us. */
	get_port = symbol_get(serial8250_get_port);
	if (!get_port) {
		pr_info("no 8250 driver; set uart_io= for lockup reports on a UART\n");
		return;
	}
	port = &get_port(line)->port;
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
		np_uart.present = true;
		pr_info("lockup reports go to ttyS%d directly\n", line);
	}
	symbol_put(serial8250_get_port);
}
#else
static void np_uart_from_8250(int line)
{
	pr_info("no 8250 driver; set uart_io= for lockup reports on a UART\n");
}
#endif

int np_uart_init(void)
{
	if (uart_io) {
		/* The driver may own the region: share it, as earlycon does. */
		np_uart.iobase = uart_io;
		np_uart.iotype = UPIO_PORT;
		np_uart.present = true;
		pr_info("lockup reports go to the UART at I/O port %#lx\n",
			uart_io);
	} else if (uart_line >= 0) {
		np_uart_from_8250(uart_line);
	}
	return 0;
}

void np_uart_exit(void)
{
	np_uart.present = false;
}
