// SPDX-License-Identifier: GPL-2.0
/*
 * External source (opt-in): sample on NMIs that no other handler claimed,
 * e.g. a hypervisor's or BMC's NMI button, or QEMU's inject-nmi.
 *
 * NMI_UNKNOWN handlers run only after every NMI_LOCAL handler declined
 * the NMI, so we never take one that belongs to someone else.  Claiming
 * it (NMI_HANDLED) does suppress the kernel's "NMI received for unknown
 * reason" report and unknown_nmi_panic, which is why this is off unless
 * NMIPROF_CF_EXTERNAL or NMIPROF_SRC_EXTERNAL asks for it.
 */
#include <linux/nmi.h>
#include <asm/nmi.h>

#include "dispatch.h"
#include "source.h"

/*
 * Registered from load to unload and off between sessions: unregistering
 * waits for an RCU grace period, which a CPU stuck with interrupts off
 * holds off, and stopping must not wait for that CPU.
 */
static bool np_ext_on;

static int np_ext_nmi(unsigned int type, struct pt_regs *regs)
{
	if (!READ_ONCE(np_ext_on))
		return NMI_DONE;
	np_on_nmi(regs, NMIPROF_RF_EXTERNAL);
	return NMI_HANDLED;
}

int np_ext_init(void)
{
	return register_nmi_handler(NMI_UNKNOWN, np_ext_nmi, 0, "nmiprof_ext");
}

void np_ext_exit(void)
{
	unregister_nmi_handler(NMI_UNKNOWN, "nmiprof_ext");
}

void np_ext_start(void)
{
	WRITE_ONCE(np_ext_on, true);
}

/* An NMI already past the check is kept out by np_dispatch_stop(). */
void np_ext_stop(void)
{
	WRITE_ONCE(np_ext_on, false);
}
