// SPDX-License-Identifier: GPL-2.0
/*
 * One decoded event from the backend.  Order matters and is the
 * backend's: side-band (mmap, comm, fork, exit) arrives before the
 * samples it explains, so the symbolizer is fed first.
 */

#include "live.h"
#include "nmiprofd.h"
#include "slices.h"
#include "symcache.h"
#include "np_clock.h"


/* pid's address space changed: drop what the memos know of it. */
static void npd_forget(struct nmiprofd *d, uint32_t pid)
{
	npd_symcache_invalidate(d->symc, pid);
	npd_live_invalidate(d->live, pid);
}

static void npd_ingest_sample(struct nmiprofd *d, const struct np_ev_sample *s)
{
	d->n.samples++;
	/* Whole stacks, symbolized once per distinct stack, into the slice. */
	npd_slices_sample(d->slices, s);
	/* The stack again, per second, for live views. */
	npd_live_sample(d->live, s->time_ns / NP_NSEC_PER_SEC, s);
}

int npd_ingest(const struct np_event *ev, void *arg)
{
	struct nmiprofd *d = arg;

	switch (ev->type) {
	case NP_EV_SAMPLE:
		npd_ingest_sample(d, &ev->sample);
		break;
	case NP_EV_COMM:
		np_symbolizer_event(d->sym, ev);
		if (ev->comm.exec)	/* a rename keeps the addresses */
			npd_forget(d, ev->comm.pid);
		break;
	case NP_EV_MMAP:
		np_symbolizer_event(d->sym, ev);
		npd_forget(d, ev->mmap.pid);
		break;
	case NP_EV_EXIT:	/* the pid may be reused */
		np_symbolizer_event(d->sym, ev);
		npd_forget(d, ev->task.pid);
		break;
	case NP_EV_FORK:	/* a new pid: nothing of it is cached */
		np_symbolizer_event(d->sym, ev);
		break;
	case NP_EV_LOST:
		d->n.lost += ev->lost.lost;
		npd_slices_lost(d->slices, ev->lost.lost);
		npd_live_lost(d->live, np_mono_ns() / NP_NSEC_PER_SEC, ev->lost.lost);
		break;
	case NP_EV_LOCKUP:
		npd_lockup_store(d, &ev->lockup);
		break;
	}
	/* Never stop the drain: every event after this one matters too. */
	return 0;
}
