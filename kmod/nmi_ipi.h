/* SPDX-License-Identifier: GPL-2.0 */
/*
 * NMI IPIs that their target can tell from everybody else's NMIs.
 *
 * An NMI carries no payload.  The sender puts a non-zero request in a
 * word the target owns before it writes the ICR; the target's NMI_LOCAL
 * handler claims an NMI only when it finds a request there, and clears
 * the word when it is done serving it.  A sender that finds the word set
 * sends nothing.  So at most one of our NMIs per word is in flight, none
 * is sent while the target serves the last one, and each request is
 * claimed by exactly one NMI.  Nothing is claimed on a guess: an NMI
 * without a request goes on to the reason port (SERR, IOCHK) and to
 * NMI_UNKNOWN (unknown_nmi_panic), as without us.
 *
 * Sending nothing while the target serves matters at high rates: the CPU
 * latches one NMI while it handles one, and another user's NMI arriving
 * then would merge with ours waiting in the latch, and be lost.
 *
 * Handlers return how many requests they claimed: when one NMI carried
 * several users' requests, the NMI core's back-to-back logic then
 * expects, and swallows, the empty NMI that may follow.  Another user's
 * NMI that arrives between a request and its NMI carries the request
 * off; ours then arrives without one and is reported as unknown in its
 * place, so the count of unknown NMIs stays right (and the reason port's
 * bits stay latched until the kernel reads them).
 */
#ifndef _NMIPROF_NMI_IPI_H
#define _NMIPROF_NMI_IPI_H

#include <linux/atomic.h>
#include <asm/apic.h>
#include <asm/irq_vectors.h>

/*
 * Ask @cpu for an NMI with request @val (non-zero) in its word @req.
 * False if the last request is not served yet: nothing is sent.
 */
static inline bool np_nmi_ipi_send(atomic_t *req, unsigned int cpu, int val)
{
	if (atomic_cmpxchg(req, 0, val))
		return false;
	/*
	 * The request must be visible before the NMI arrives.  No smp_*()
	 * barrier can promise that: it orders memory accesses, and an IPI
	 * is none (an x2APIC ICR write is a WRMSR, which MFENCE does not
	 * order).  apic->send_IPI() does: weak_wrmsr_fence() before the
	 * x2APIC write, an uncached store after ours for xAPIC, a hypercall
	 * for PV IPIs; smp_call_function() and
	 * nmi_trigger_cpumask_backtrace() rely on the same.  Pairs with the
	 * atomic_read() in np_nmi_ipi_claim(), which runs after the NMI.
	 */
	apic->send_IPI(cpu, NMI_VECTOR);
	return true;
}

/*
 * NMI context, on the target: the request in @req, 0 if none.  A request
 * claimed must be closed with np_nmi_ipi_done() once served.
 */
static inline int np_nmi_ipi_claim(atomic_t *req)
{
	return atomic_read(req);
}

/* NMI context, on the target: the request is served; take the next. */
static inline void np_nmi_ipi_done(atomic_t *req)
{
	/* Pairs with atomic_cmpxchg() in np_nmi_ipi_send(). */
	atomic_set_release(req, 0);
}

#endif /* _NMIPROF_NMI_IPI_H */
