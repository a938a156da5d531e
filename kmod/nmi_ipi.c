// SPDX-License-Identifier: GPL-2.0
/*
 * Teardown side of nmi_ipi.h.
 */
#include <linux/delay.h>

#include "nmi_ipi.h"

/* How long a request already sent may take to be claimed. */
#define NP_NMI_IPI_DRAIN_MS	100

/*
 * Process context, senders stopped, before the handler is unregistered:
 * let a request already sent be served, or its NMI would be reported as
 * unknown.  A target that does not take NMIs (stuck in an NMI handler, or
 * offline) never claims; give up on it, bounded, and clear the word.
 */
void np_nmi_ipi_drain(atomic_t *req)
{
	unsigned int ms;

	for (ms = 0; ms < NP_NMI_IPI_DRAIN_MS && atomic_read(req); ms++)
		usleep_range(1000, 2000);
	atomic_set(req, 0);
}
