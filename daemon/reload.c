// SPDX-License-Identifier: GPL-2.0
/*
 * SIGHUP: re-read the configuration file (command-line flags still win)
 * and apply it.
 *
 *   log_level                         at once
 *   slice_seconds                     from the next slice
 *   retention_size, retention_age     at once (the store is reopened and pruned)
 *   backend, frequency, *_stack_depth,
 *   user_stacks, unwind_budget        the backend is reopened; on failure
 *                                     the previous settings are restored
 *   clickhouse_*, host_label, labels  from the exporter's next pass
 *   store_dir, socket, live_seconds   only on restart (a warning says so)
 *
 * A file that does not parse changes nothing.
 */
#include <string.h>

#include "fleet.h"
#include "nmiprofd.h"
#include "np_log.h"
#include "slices.h"

/* Keep a restart-only setting, saying so if the file changed it. */
#define NPD_KEEP(d, nc, field, key) do {					\
	if (memcmp(&(d)->cfg.field, &(nc).field, sizeof((nc).field))) {	\
		np_warn("reload: %s changes only on restart; keeping the running value", key); \
		memcpy(&(nc).field, &(d)->cfg.field, sizeof((nc).field));	\
	}									\
} while (0)

/* 0: running with nc's settings; -1: with old's (or none, retried later). */
static int npd_reload_backend(struct nmiprofd *d, const struct npd_config *old,
			      const struct npd_config *nc)
{
	char err[256];

	npd_sampler_retire(d);
	d->backend = npd_sampler_open(nc, err, sizeof(err));
	if (d->backend)
		return 0;
	np_err("reload: cannot open the backend with the new settings: %s; back to the previous ones",
	       err);
	d->backend = npd_sampler_open(old, err, sizeof(err));
	if (!d->backend)
		np_err("reload: the previous backend settings fail too: %s (retrying)",
		       err);
	return -1;
}

void npd_reload(struct nmiprofd *d)
{
	struct npd_config nc, old = d->cfg;
	char err[512];

	if (npd_config_load(&nc, d->config_path, d->config_must_exist, &d->ov,
			    err, sizeof(err))) {
		np_err("reload: %s; keeping the running configuration", err);
		return;
	}
	NPD_KEEP(d, nc, store_dir, "store_dir");
	NPD_KEEP(d, nc, socket_path, "socket");
	NPD_KEEP(d, nc, live_s, "live_seconds");

	if (nc.log_level != old.log_level) {
		np_log_set_level(nc.log_level);
		np_info("log level %s", np_log_level_name(nc.log_level));
	}
	npd_slices_reconfigure(d->slices, &nc);
	npd_fleet_configure(d->fleet, &nc);
	if (npd_config_backend_changed(&old, &nc) &&
	    npd_reload_backend(d, &old, &nc)) {
		/* Running (or retrying) with the old settings: report those. */
		nc.backend = old.backend;
		nc.freq_hz = old.freq_hz;
		nc.kstack_depth = old.kstack_depth;
		nc.ustack_depth = old.ustack_depth;
		nc.user_stacks = old.user_stacks;
		nc.unwind_budget = old.unwind_budget;
	}
	d->cfg = nc;
	np_info("configuration reloaded");
}
