// SPDX-License-Identifier: GPL-2.0
/*
 * The drain loop.  One thread does everything, in this order, forever:
 *
 *   wait for backend data (at most NPD_POLL_MS), drain every event
 *   answer control clients that are ready (never blocking)
 *   act on signals (reload, stop)
 *   close the time slice when its end has passed
 *
 * One thread means no locks between ingest, live views and the store;
 * the price is that a reply waits for the current drain, and a slice
 * write (one compressed segment, fsync'd) delays the drain by its
 * duration, which the backends' rings absorb.
 */
#include <errno.h>
#include <string.h>

#include "ctl_server.h"
#include "fleet.h"
#include "nmiprofd.h"
#include "np_log.h"
#include "signals.h"
#include "slices.h"
#include "store.h"
#include "np_clock.h"

#define NPD_POLL_MS		100
#define NPD_RETRY_NS		(10ULL * 1000000000ULL)

/* Drop a backend that fails, to reopen it later (module reloaded ...). */
static void npd_backend_failed(struct nmiprofd *d, const char *what, int rc)
{
	np_err("%s backend: %s failed: %s; reopening in %llu s",
	       np_backend_name(d->backend), what, strerror(-rc),
	       NPD_RETRY_NS / 1000000000ULL);
	npd_sampler_retire(d);
}

static void npd_backend_retry(struct nmiprofd *d, uint64_t *next_try)
{
	uint64_t now = np_mono_ns();
	char err[256];

	if (now < *next_try)
		return;
	*next_try = now + NPD_RETRY_NS;
	d->backend = npd_sampler_open(&d->cfg, err, sizeof(err));
	if (!d->backend)
		np_err("cannot reopen the backend: %s", err);
}

int npd_loop(struct nmiprofd *d)
{
	uint64_t next_try = 0;

	for (;;) {
		unsigned int sig;
		int rc;

		if (d->backend) {
			rc = np_backend_poll(d->backend, NPD_POLL_MS);
			if (rc < 0 && rc != -EINTR) {
				npd_backend_failed(d, "poll", rc);
				next_try = np_mono_ns() + NPD_RETRY_NS;
			}
		}
		if (d->backend) {
			rc = np_backend_drain(d->backend, npd_ingest, d);
			if (rc < 0 && rc != -EINTR && rc != -EAGAIN) {
				npd_backend_failed(d, "drain", rc);
				next_try = np_mono_ns() + NPD_RETRY_NS;
			}
		} else {
			npd_backend_retry(d, &next_try);
		}
		/* Without a backend to wait on, wait on the clients instead. */
		npd_ctl_server_service(d->ctl, d->backend ? 0 : NPD_POLL_MS);

		sig = npd_signals_read(d->sigfd);
		if (sig & NPD_SIG_STOP)
			return 0;
		if (sig & NPD_SIG_RELOAD)
			npd_reload(d);
		npd_slices_tick(d->slices, np_real_ns());
		npd_lockups_retry(d, 0);
		if (npd_slices_written(d->slices) != d->fleet_seen) {
			d->fleet_seen = npd_slices_written(d->slices);
			npd_fleet_kick(d->fleet);
		}
	}
}
