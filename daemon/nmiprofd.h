/* SPDX-License-Identifier: GPL-2.0 */
/*
 * nmiprofd: the daemon's state, one instance owned by main() and passed
 * to every part explicitly.
 *
 *   main.c        command line, start-up, shutdown
 *   config.c      configuration file and overrides
 *   sampler.c     opening the backend from the configuration
 *   loop.c        the drain loop: poll, drain, serve clients, signals
 *   ingest.c      one decoded event: symbolizer, live ring, slice, lockups
 *   symcache.c    (pid, address) -> symbol memo for the hot path
 *   slices.c      the current time slice and its hand-over to the store
 *   lockups.c     lockup reports, stored the moment they arrive
 *   live.c        per-second ring of the live view
 *   live_query.c  its top and stacks queries
 *   commands.c    control socket commands (status, top, stacks)
 *   ctl_server.c  control socket transport
 *   reload.c      SIGHUP: applying a new configuration
 *   fleet.c       shipping stored slices to ClickHouse (its own thread)
 *   signals.c     signalfd
 */
#ifndef NMIPROFD_H
#define NMIPROFD_H

#include <stdint.h>

#include "config.h"
#include "np_backend.h"
#include "symbolizer.h"

struct npd_live;
struct npd_slices;
struct npd_symcache;
struct npd_ctl_server;
struct npd_fleet;

struct npd_lockup_pending;

/* Lockup reports the store refused, retried until written (lockups.c). */
struct npd_lockups {
	struct npd_lockup_pending *pending;	/* oldest first */
	unsigned int nr_pending;
	uint64_t next_retry_ns;			/* CLOCK_MONOTONIC */
};

struct npd_counters {
	uint64_t samples;	/* ingested */
	uint64_t lost;		/* NP_EV_LOST totals, all backends opened */
	uint64_t lockups;	/* stored */
	uint64_t backend_lost_base;	/* lost of backends closed by reloads */
};

struct nmiprofd {
	struct npd_config cfg;
	const char *config_path;
	int config_must_exist;		/* given with --config */
	struct npd_overrides ov;

	struct np_backend *backend;
	struct np_symbolizer *sym;
	struct npd_symcache *symc;	/* memo in front of sym */
	struct npd_live *live;
	struct npd_slices *slices;
	struct npd_ctl_server *ctl;
	struct npd_fleet *fleet;
	uint64_t fleet_seen;		/* slices written when last kicked */
	int sigfd;

	uint64_t start_mono_ns;
	struct npd_counters n;
	struct npd_lockups lockups;
};

/* sampler.c */
struct np_backend *npd_sampler_open(const struct npd_config *cfg,
				    char *err, size_t errlen);
/* Stop the running backend, ingest what it still holds, close it. */
void npd_sampler_retire(struct nmiprofd *d);

/* ingest.c: np_event_fn for np_backend_drain; arg is the nmiprofd. */
int npd_ingest(const struct np_event *ev, void *arg);

/*
 * lockups.c: store one lockup now (fsync'd).  0, or -errno: it was logged
 * in full and is kept for npd_lockups_retry.
 */
int npd_lockup_store(struct nmiprofd *d, const struct np_ev_lockup *l);
/* Write the kept reports again (every few seconds, or now if force). */
void npd_lockups_retry(struct nmiprofd *d, int force);
void npd_lockups_release(struct nmiprofd *d);

/* commands.c: the control socket's request handler (npd_ctl_handler). */
struct np_ctl_line;
struct np_buf;
void npd_command(const struct np_ctl_line *req, struct np_buf *reply,
		 void *arg);

/* reload.c: re-read the configuration and apply what may change. */
void npd_reload(struct nmiprofd *d);

/* loop.c: run until SIGTERM/SIGINT or a fatal backend error.  0 or -1. */
int npd_loop(struct nmiprofd *d);

#endif /* NMIPROFD_H */
