// SPDX-License-Identifier: GPL-2.0
/*
 * Lockup reports: stored the moment they are drained, never batched into
 * a slice, because the machine that reported a hard lockup may well be
 * about to die.  np_lockstore_write fsyncs the file and its directory
 * before returning.
 *
 * A report that cannot be written (disk full, store unwritable) is not
 * dropped: it is logged in full at once (the journal may survive what the
 * store did not), kept in memory and written again every
 * NPD_LOCKUP_RETRY_NS until it lands, with the time it was first seen.
 *
 * nmiprof.ko (ABI 1.3 on) keeps each report in its lockup queue until we
 * acknowledge it, which we do once it is on disk: a report we could not
 * store, or did not get to before we stopped, is handed out again, to us
 * or to the next nmiprofd.  A report stored twice (we stopped between
 * the write and the acknowledgement) lands in the same file: its name
 * comes from the module's realtime stamp of the lockup.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lockstore.h"
#include "fleet.h"
#include "nmiprofd.h"
#include "np_log.h"
#include "store.h"
#include "np_clock.h"

#define NPD_LOCKUP_RETRY_NS	(5ULL * 1000000000ULL)
/* Beyond this many unwritten reports, memory matters more: log only. */
#define NPD_LOCKUP_MAX_PENDING	256

struct npd_lockup_pending {
	struct npd_lockup_pending *next;
	struct np_ev_lockup l;	/* l.kframes points to frames[] */
	uint64_t wall_ns;	/* when it happened, else when it was drained */
	uint64_t frames[];
};

/* Symbolize (now: KASLR and modules are gone after a reboot) and write. */
static int npd_lockup_write(struct nmiprofd *d, const struct np_ev_lockup *l,
			    uint64_t wall_ns, char *id, size_t idlen,
			    char *err, size_t errlen)
{
	struct np_sym *syms = NULL;
	int rc;

	/* Without memory for names, store the raw addresses, not nothing. */
	if (l->nr_kframes && (syms = calloc(l->nr_kframes, sizeof(*syms)))) {
		for (unsigned int i = 0; i < l->nr_kframes; i++)
			np_symbolize(d->sym, l->pid, l->kframes[i], 1, &syms[i]);
	}
	rc = np_lockstore_write(d->cfg.store_dir, l, syms, wall_ns, id, idlen,
				err, errlen);
	free(syms);
	return rc;
}

/* The whole report in the log, one line per frame. */
static void npd_lockup_log(struct nmiprofd *d, const struct np_ev_lockup *l)
{
	np_err("LOCKUP cpu %u pid %u tid %u comm %.16s stuck %" PRIu64
	       " ms flags %#x ip %#" PRIx64, l->cpu, l->pid, l->tid, l->comm,
	       l->stuck_ns / 1000000, l->flags, (uint64_t)l->regs.ip);
	for (unsigned int i = 0; i < l->nr_kframes; i++) {
		struct np_sym s;

		np_symbolize(d->sym, l->pid, l->kframes[i], 1, &s);
		np_err("LOCKUP cpu %u  #%u %#" PRIx64 " %s+%#" PRIx64, l->cpu, i,
		       l->kframes[i], s.name ? s.name : (s.dso ? s.dso : "?"),
		       s.offset);
	}
}

static void npd_lockup_keep(struct nmiprofd *d, const struct np_ev_lockup *l,
			    uint64_t wall_ns)
{
	struct npd_lockup_pending *p, **tail;

	if (d->lockups.nr_pending >= NPD_LOCKUP_MAX_PENDING) {
		np_err("LOCKUP on CPU %u: %u reports already wait for the store; this one is only in the log",
		       l->cpu, d->lockups.nr_pending);
		return;
	}
	p = malloc(sizeof(*p) + l->nr_kframes * sizeof(p->frames[0]));
	if (!p) {
		np_err("LOCKUP on CPU %u: no memory to keep it; it is only in the log",
		       l->cpu);
		return;
	}
	p->next = NULL;
	p->l = *l;
	p->wall_ns = wall_ns;
	if (l->nr_kframes)
		memcpy(p->frames, l->kframes, l->nr_kframes * sizeof(p->frames[0]));
	p->l.kframes = p->frames;
	/* Oldest first: retries keep the order they happened in. */
	for (tail = &d->lockups.pending; *tail; tail = &(*tail)->next)
		;
	*tail = p;
	d->lockups.nr_pending++;
}

/* Stored: the module may drop its copy. */
static void npd_lockup_ack(struct nmiprofd *d, const struct np_ev_lockup *l)
{
	int rc;

	if (!l->qid || !d->backend)
		return;		/* not queued, or acknowledged by the next drain */
	rc = np_backend_ack_lockup(d->backend, l->qid);
	if (rc < 0 && rc != -ENOENT)
		np_warn("lockup %" PRIu64 " on CPU %u stored, but the module still queues it: %s",
			l->qid, l->cpu, strerror(-rc));
}

/* Is this queued report one we keep already?  The module hands it out
 * again on every drain until it is acknowledged. */
static int npd_lockup_kept(const struct nmiprofd *d,
			   const struct np_ev_lockup *l)
{
	const struct npd_lockup_pending *p;

	for (p = d->lockups.pending; l->qid && p; p = p->next)
		if (p->l.qid == l->qid)
			return 1;
	return 0;
}

int npd_lockup_store(struct nmiprofd *d, const struct np_ev_lockup *l)
{
	uint64_t wall_ns = l->real_ns ? l->real_ns : np_real_ns();
	char id[NP_LOCKUP_ID_LEN], err[256];
	int rc;

	if (npd_lockup_kept(d, l))
		return 0;
	rc = npd_lockup_write(d, l, wall_ns, id, sizeof(id), err, sizeof(err));
	if (rc < 0) {
		np_err("LOCKUP on CPU %u could NOT be stored: %s; keeping it, retrying every %llu s",
		       l->cpu, err, NPD_LOCKUP_RETRY_NS / 1000000000ULL);
		npd_lockup_log(d, l);
		npd_lockup_keep(d, l, wall_ns);
		return rc;
	}
	npd_lockup_ack(d, l);
	d->n.lockups++;
	if (d->fleet)
		npd_fleet_kick(d->fleet);
	np_warn("hard lockup on CPU %u: pid %u %.16s stuck for %" PRIu64
		" ms; stored as %s", l->cpu, l->pid, l->comm,
		l->stuck_ns / 1000000, id);
	return 0;
}

void npd_lockups_retry(struct nmiprofd *d, int force)
{
	uint64_t now = np_mono_ns();
	char id[NP_LOCKUP_ID_LEN], err[256];

	if (!d->lockups.pending || (!force && now < d->lockups.next_retry_ns))
		return;
	d->lockups.next_retry_ns = now + NPD_LOCKUP_RETRY_NS;
	while (d->lockups.pending) {
		struct npd_lockup_pending *p = d->lockups.pending;

		if (npd_lockup_write(d, &p->l, p->wall_ns, id, sizeof(id),
				     err, sizeof(err)) < 0) {
			np_dbg("lockup retry: %s", err);
			return;	/* the store still fails: keep the order */
		}
		np_warn("hard lockup on CPU %u (pid %u %.16s) stored late as %s",
			p->l.cpu, p->l.pid, p->l.comm, id);
		npd_lockup_ack(d, &p->l);
		d->lockups.pending = p->next;
		d->lockups.nr_pending--;
		d->n.lockups++;
		if (d->fleet)
			npd_fleet_kick(d->fleet);
		free(p);
	}
}

void npd_lockups_release(struct nmiprofd *d)
{
	if (d->lockups.nr_pending)
		np_err("%u lockup report(s) could never be stored; they are in the log above",
		       d->lockups.nr_pending);
	while (d->lockups.pending) {
		struct npd_lockup_pending *p = d->lockups.pending;

		d->lockups.pending = p->next;
		free(p);
	}
	d->lockups.nr_pending = 0;
}
