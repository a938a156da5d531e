// SPDX-License-Identifier: GPL-2.0
/*
 * The backend from the configuration.  "auto" (np_backend_open) takes
 * nmiprof.ko when /dev/nmiprof exists, else libperf; an explicit choice
 * that fails is an error, not a silent fallback.
 */
#include <stdio.h>

#include "nmiprofd.h"
#include "np_log.h"

struct np_backend *npd_sampler_open(const struct npd_config *cfg,
				    char *err, size_t errlen)
{
	struct np_backend_opts o;
	struct np_backend_stats st;
	struct np_backend *b;

	np_backend_opts_init(&o);
	o.kind = cfg->backend;
	o.freq_hz = cfg->freq_hz;
	o.kstack_depth = cfg->kstack_depth;
	o.ustack_depth = cfg->ustack_depth;
	o.user_stacks = cfg->user_stacks;
	o.unwind_budget = cfg->unwind_budget;
	b = np_backend_open(&o, err, errlen);
	if (!b)
		return NULL;
	if (np_backend_start(b)) {
		snprintf(err, errlen, "%s backend: cannot start sampling",
			 np_backend_name(b));
		np_backend_close(b);
		return NULL;
	}
	if (np_backend_stats(b, &st) == 0)
		np_info("sampling with %s (%s) at %u Hz on %u CPUs, stacks %u/%u frames%s",
			st.backend, st.source ? st.source : "?", cfg->freq_hz,
			st.nr_cpus, cfg->kstack_depth, cfg->ustack_depth,
			cfg->user_stacks ? "" : " (no user stacks)");
	return b;
}

void npd_sampler_retire(struct nmiprofd *d)
{
	struct np_backend_stats st;

	if (!d->backend)
		return;
	np_backend_stop(d->backend);
	/* Samples already in the rings belong to the current slice. */
	np_backend_drain(d->backend, npd_ingest, d);
	if (np_backend_stats(d->backend, &st) == 0)
		d->n.backend_lost_base += st.lost;
	np_backend_close(d->backend);
	d->backend = NULL;
}
