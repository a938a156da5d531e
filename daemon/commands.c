// SPDX-License-Identifier: GPL-2.0
/*
 * Control socket commands (the protocol is in lib/include/np_ctl.h).  Each runs
 * inside the drain loop, so each must be quick: status reads counters,
 * top and stacks walk at most live_seconds small tables.
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "ctl_server.h"
#include "fleet.h"
#include "live.h"
#include "nmiprofd.h"
#include "np_ctl.h"
#include "slices.h"
#include "np_clock.h"


/* VmRSS of this process, in bytes (0 when /proc says nothing). */
static uint64_t npd_rss_bytes(void)
{
	FILE *f = fopen("/proc/self/status", "r");
	unsigned long long kb = 0;
	char line[128];

	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "VmRSS: %llu kB", &kb) == 1)
			break;
	if (f)
		fclose(f);
	return (uint64_t)kb * 1024;
}

static void npd_cmd_status(struct nmiprofd *d, struct np_buf *reply)
{
	struct np_backend_stats bs;
	struct npd_store_health h;
	struct np_ctl_status st;
	const char *warn = np_symbolizer_warning(d->sym);
	uint64_t lost;

	memset(&st, 0, sizeof(st));
	memset(&bs, 0, sizeof(bs));
	bs.nested_nmi_safe = -1;
	if (d->backend)
		np_backend_stats(d->backend, &bs);
	snprintf(st.version, sizeof(st.version), "%s", NMIPROF_VERSION);
	st.proto = NP_CTL_PROTO_VERSION;
	st.pid = getpid();
	st.uptime_s = (np_mono_ns() - d->start_mono_ns) / NP_NSEC_PER_SEC;
	snprintf(st.backend, sizeof(st.backend), "%s", bs.backend ? bs.backend : "none");
	snprintf(st.source, sizeof(st.source), "%s", bs.source ? bs.source : "");
	st.nr_cpus = bs.nr_cpus;
	st.freq_hz = d->cfg.freq_hz;
	st.samples = d->n.samples;
	/*
	 * The drained NP_EV_LOST records, or the backend's own count if it
	 * knows of more (records it had no room to report).
	 */
	lost = d->n.backend_lost_base + bs.lost;
	st.lost = lost > d->n.lost ? lost : d->n.lost;
	st.lockups = d->n.lockups;
	st.nested_nmi_safe = bs.nested_nmi_safe;
	st.cost_min_ns = bs.cost_min_ns;
	st.cost_avg_ns = bs.cost_avg_ns;
	st.cost_max_ns = bs.cost_max_ns;
	snprintf(st.store_dir, sizeof(st.store_dir), "%s", d->cfg.store_dir);
	st.store_bytes = npd_slices_store_bytes(d->slices);
	st.slice_s = d->cfg.slice_s;
	st.slices = npd_slices_written(d->slices);
	st.live_s = npd_live_seconds(d->live);
	st.clients = npd_ctl_server_clients(d->ctl);
	st.rss_bytes = npd_rss_bytes();
	st.mem_live = npd_live_mem(d->live);
	st.mem_slice = npd_slices_mem(d->slices);
	st.mem_store = npd_slices_store_mem(d->slices);
	st.mem_symbols = np_symbolizer_mem(d->sym);
	npd_slices_health(d->slices, &h);
	st.store_errno = h.err;
	snprintf(st.store_error, sizeof(st.store_error), "%s", h.what);
	st.store_since_ns = h.since_ns;
	st.store_pending = h.pending_samples;
	st.store_pending_bytes = h.pending_bytes;
	st.store_pending_max = h.pending_max;
	st.store_dropped = h.dropped_samples;
	st.store_pruned_segs = h.pruned_segs;
	st.store_pruned_bytes = h.pruned_bytes;
	if (d->fleet)
		npd_fleet_status(d->fleet, &st);
	if (d->lockups.nr_pending)
		snprintf(st.warning, sizeof(st.warning),
			 "%u lockup report(s) not stored yet (store failing, retrying): see the log",
			 d->lockups.nr_pending);
	else if (warn)
		snprintf(st.warning, sizeof(st.warning), "%s", warn);
	np_ctl_format_status_reply(reply, &st);
}

static void npd_cmd_top(struct nmiprofd *d, const struct np_ctl_line *req,
			struct np_buf *reply)
{
	struct np_ctl_top_query q;
	struct np_ctl_top t;
	char err[160];

	if (np_ctl_parse_top_request(req, &q, err, sizeof(err))) {
		np_ctl_put_error(reply, "top: %s", err);
		return;
	}
	if (npd_live_top(d->live, np_mono_ns() / NP_NSEC_PER_SEC, &q, &t)) {
		np_ctl_put_error(reply, "top: out of memory");
		return;
	}
	np_ctl_format_top_reply(reply, &t);
	np_ctl_top_free(&t);
}

static void npd_cmd_stacks(struct nmiprofd *d, const struct np_ctl_line *req,
			   struct np_buf *reply)
{
	struct np_ctl_stacks_query q;
	struct np_ctl_stacks t;
	char err[160];

	if (np_ctl_parse_stacks_request(req, &q, err, sizeof(err))) {
		np_ctl_put_error(reply, "stacks: %s", err);
		return;
	}
	if (npd_live_stacks(d->live, np_mono_ns() / NP_NSEC_PER_SEC, &q, &t)) {
		np_ctl_put_error(reply, "stacks: out of memory");
		return;
	}
	np_ctl_format_stacks_reply(reply, &t);
	np_ctl_stacks_free(&t);
}

void npd_command(const struct np_ctl_line *req, struct np_buf *reply,
		 void *arg)
{
	struct nmiprofd *d = arg;
	const char *cmd = req->words[1];

	if (req->nwords != 2)
		np_ctl_put_error(reply, "expected one command word, got %u",
				 req->nwords - 1);
	else if (!strcmp(cmd, "status"))
		npd_cmd_status(d, reply);
	else if (!strcmp(cmd, "top"))
		npd_cmd_top(d, req, reply);
	else if (!strcmp(cmd, "stacks"))
		npd_cmd_stacks(d, req, reply);
	else
		np_ctl_put_error(reply, "unknown command '%.32s' (status, top, stacks)", cmd);
}
