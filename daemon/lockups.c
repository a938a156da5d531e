// SPDX-License-Identifier: GPL-2.0
/*
 * Lockup reports: stored the moment they are drained, never batched into
 * a slice, because the machine that reported a hard lockup may well be
 * about to die.  np_lockstore_write fsyncs the file and its directory
 * before returning.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>

#include "lockstore.h"
#include "nmiprofd.h"
#include "np_log.h"

int npd_lockup_store(struct nmiprofd *d, const struct np_lockup *l)
{
	struct np_sym *syms = NULL;
	char id[NP_LOCKUP_ID_LEN], err[256];
	int rc;

	/*
	 * Symbolize now: after a reboot the kernel's layout (KASLR, modules)
	 * is gone.  Without memory, store the raw addresses rather than
	 * nothing.
	 */
	if (l->nr_kframes && (syms = calloc(l->nr_kframes, sizeof(*syms)))) {
		for (unsigned int i = 0; i < l->nr_kframes; i++)
			np_symbolize(d->sym, l->pid, l->kframes[i], 1, &syms[i]);
	}
	rc = np_lockstore_write(d->cfg.store_dir, l, syms, 0, id, sizeof(id),
				err, sizeof(err));
	free(syms);
	if (rc < 0) {
		d->n.lockups_failed++;
		np_err("LOCKUP on CPU %u (pid %u %.16s, stuck %" PRIu64
		       " ms) could NOT be stored: %s", l->cpu, l->pid, l->comm,
		       l->stuck_ns / 1000000, err);
		return rc;
	}
	d->n.lockups++;
	np_warn("hard lockup on CPU %u: pid %u %.16s stuck for %" PRIu64
		" ms; stored as %s", l->cpu, l->pid, l->comm,
		l->stuck_ns / 1000000, id);
	return 0;
}
