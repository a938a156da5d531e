/* SPDX-License-Identifier: GPL-2.0 */
/*
 * NMI-safe polled writer for a 16550-compatible UART.
 *
 * printk() from NMI only stores text; the console flush is deferred to an
 * irq_work on the local CPU, which a hard-locked CPU never runs, and a CPU
 * that is stuck holding console_lock or the port lock keeps everybody else
 * from flushing too.  The lockup report therefore also goes straight to
 * the serial port through this writer, which waits for no kernel lock:
 * it only tries the 8250 driver's port lock, a bounded time per line, to
 * keep other writers out of its lines.
 */
#ifndef _NMIPROF_NMI_UART_H
#define _NMIPROF_NMI_UART_H

#include <linux/types.h>

int np_uart_init(void);
void np_uart_exit(void);

/*
 * Serialise whole reports across CPUs.  np_uart_lock() waits a bounded
 * time and returns true when the caller must call np_uart_unlock(); it
 * returns false (and the caller writes anyway) when the lock is held by
 * this very CPU, i.e. we re-entered from NMI, or when its holder did not
 * let go in time and is presumed stuck.
 */
bool np_uart_lock(void);
void np_uart_unlock(void);

/*
 * Write len bytes, "\n" as "\r\n", under the port lock if it can be
 * had.  A no-op without a port.
 */
void np_uart_write(const char *s, size_t len);

#endif /* _NMIPROF_NMI_UART_H */
