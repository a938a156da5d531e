/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Every difference between the kernels nmiprof is built for (6.1 and
 * 6.12 today) lives here, so the mechanism files read as plain kernel
 * code for the newest API.
 */
#ifndef _NMIPROF_COMPAT_H
#define _NMIPROF_COMPAT_H

#include <linux/version.h>
#include <linux/mm.h>
#include <linux/sched.h>
#include <linux/serial_core.h>

/* 6.3 made vma->vm_flags read-only and added the vm_flags_*() helpers. */
#if LINUX_VERSION_CODE < KERNEL_VERSION(6, 3, 0)
static inline void np_vm_flags_clear(struct vm_area_struct *vma,
				     unsigned long flags)
{
	vma->vm_flags &= ~flags;
}
#else
static inline void np_vm_flags_clear(struct vm_area_struct *vma,
				     vm_flags_t flags)
{
	vm_flags_clear(vma, flags);
}
#endif

/*
 * Tasks that run in the kernel but whose pt_regs at the stack top are not
 * a user context we may walk: kernel threads, and since 6.4 the user
 * workers (io_uring, vhost) that have an mm but never return to user mode.
 */
#ifdef PF_USER_WORKER
#define NP_PF_NO_USER_STACK	(PF_KTHREAD | PF_USER_WORKER | PF_IO_WORKER)
#else
#define NP_PF_NO_USER_STACK	(PF_KTHREAD | PF_IO_WORKER)
#endif

/*
 * 6.6 wrapped the serial port lock in uart_port_lock() and friends, which
 * 6.12 uses to also take an nbcon console's ownership.  Before that (and
 * in 6.1 stable's backport of the wrappers) it is the bare spinlock.
 */
#if LINUX_VERSION_CODE < KERNEL_VERSION(6, 6, 0)
static inline bool np_uart_port_trylock(struct uart_port *port)
{
	return spin_trylock(&port->lock);
}

static inline void np_uart_port_unlock(struct uart_port *port)
{
	spin_unlock(&port->lock);
}
#else
static inline bool np_uart_port_trylock(struct uart_port *port)
{
	return uart_port_trylock(port);
}

static inline void np_uart_port_unlock(struct uart_port *port)
{
	uart_port_unlock(port);
}
#endif

#endif /* _NMIPROF_COMPAT_H */
