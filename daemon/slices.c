// SPDX-License-Identifier: GPL-2.0
/*
 * Time slices into the store (see slices.h).
 *
 * A slice that cannot be written (disk full, store directory gone) is
 * not dropped: the aggregate keeps growing and the write is retried at
 * the next boundary as one longer segment, so a transient failure costs
 * time resolution, not samples.  Past pending_size the oldest samples
 * are dropped (the aggregate is freed) and carried as lost in the next
 * segment: a long outage costs samples, never the machine's memory.  A
 * full disk first costs the oldest segments (np_store_make_room).
 */
#include <errno.h>
#include <inttypes.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agg.h"
#include "np_log.h"
#include "nmiprofd.h"
#include "slices.h"
#include "store.h"
#include "np_clock.h"


struct npd_slices {
	struct np_agg *agg;
	struct np_agg_opts ao;
	struct np_store *store;		/* NULL after a failed reopen */
	struct np_store_opts sopts;
	char dir[PATH_MAX];
	uint64_t slice_ns;
	uint64_t start_ns, end_ns;	/* CLOCK_REALTIME */
	uint64_t written;
	uint64_t pending_max;		/* bytes of aggregate while failing */
	struct npd_store_health h;	/* h.err: log a failure once */
};

static void npd_slices_warn(void *arg, const char *msg)
{
	np_warn("store: %s", msg);
}

/* End of the aligned slice that contains t. */
static uint64_t npd_slice_end(uint64_t t, uint64_t slice_ns)
{
	return (t / slice_ns + 1) * slice_ns;
}

static void npd_slices_store_opts(struct npd_slices *sl,
				  const struct npd_config *cfg)
{
	np_store_opts_init(&sl->sopts);
	snprintf(sl->dir, sizeof(sl->dir), "%s", cfg->store_dir);
	sl->sopts.dir = sl->dir;
	sl->sopts.max_bytes = cfg->retention_bytes;
	sl->sopts.max_age_ns = cfg->retention_age_s * NP_NSEC_PER_SEC;
	sl->sopts.warn = npd_slices_warn;
}

struct npd_slices *npd_slices_open(const struct npd_config *cfg,
				   np_symbolize_fn symbolize, void *arg,
				   char *err, size_t errlen)
{
	struct npd_slices *sl = calloc(1, sizeof(*sl));

	if (!sl) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	np_agg_opts_init(&sl->ao);
	sl->ao.symbolize = symbolize;
	sl->ao.symbolize_arg = arg;
	sl->ao.period_ns = NP_NSEC_PER_SEC / cfg->freq_hz;
	sl->agg = np_agg_new(&sl->ao);
	if (!sl->agg) {
		snprintf(err, errlen, "out of memory");
		free(sl);
		return NULL;
	}
	npd_slices_store_opts(sl, cfg);
	sl->store = np_store_open(&sl->sopts, err, errlen);
	if (!sl->store) {
		np_agg_free(sl->agg);
		free(sl);
		return NULL;
	}
	sl->slice_ns = (uint64_t)cfg->slice_s * NP_NSEC_PER_SEC;
	sl->pending_max = cfg->pending_bytes;
	sl->start_ns = np_real_ns();
	sl->end_ns = npd_slice_end(sl->start_ns, sl->slice_ns);
	return sl;
}

void npd_slices_close(struct npd_slices *sl)
{
	if (!sl)
		return;
	if (sl->store)
		np_store_close(sl->store);
	np_agg_free(sl->agg);
	free(sl);
}

int npd_slices_sample(struct npd_slices *sl, const struct np_ev_sample *s)
{
	return np_agg_sample(sl->agg, s);
}

void npd_slices_lost(struct npd_slices *sl, uint64_t lost)
{
	np_agg_lost(sl->agg, lost);
}

/*
 * Writes failing and the aggregate past pending_size: free it (a reset
 * keeps its capacity) and carry what it held as lost, so the segment
 * written once the store works again says how much is missing.
 */
static void npd_slices_drop_pending(struct npd_slices *sl)
{
	uint64_t samples = np_agg_samples(sl->agg);
	uint64_t gone = samples + np_agg_lost_count(sl->agg);
	struct np_agg *na;

	sl->ao.period_ns = np_agg_period_ns(sl->agg);
	na = np_agg_new(&sl->ao);
	if (!na) {
		np_agg_reset(sl->agg);
		na = sl->agg;
	} else {
		np_agg_free(sl->agg);
		sl->agg = na;
	}
	np_agg_lost(na, gone);
	malloc_trim(0);
	sl->h.dropped_samples += samples;
	sl->h.drops++;
	np_warn("store still failing: dropped %" PRIu64 " unwritten samples "
		"(over pending_size %" PRIu64 " bytes); %" PRIu64 " so far",
		samples, sl->pending_max, sl->h.dropped_samples);
}

/* Write [start, end) and start the next slice at end. */
static int npd_slices_write(struct npd_slices *sl, uint64_t end_ns)
{
	char err[256];
	uint64_t t0, freed;
	int ret;

	if (np_agg_samples(sl->agg) == 0 && np_agg_lost_count(sl->agg) == 0)
		goto next;	/* nothing happened: no empty segment */
	if (!sl->store) {
		errno = 0;
		sl->store = np_store_open(&sl->sopts, err, sizeof(err));
		if (!sl->store) {
			ret = errno ? -errno : -EIO;
			goto fail;
		}
		np_info("store %s reopened", sl->dir);
	}
	t0 = np_mono_ns();
	/* A full disk: the oldest segments give way to the newest slice. */
	while (((ret = np_store_write(sl->store, sl->agg, sl->start_ns, end_ns,
				      err, sizeof(err))) == -ENOSPC ||
		ret == -EDQUOT) && (freed = np_store_make_room(sl->store))) {
		sl->h.pruned_segs++;
		sl->h.pruned_bytes += freed;
	}
	if (ret < 0)
		goto fail;
	/* The drain waited this long: the rings must absorb it. */
	np_dbg("slice %" PRIu64 "..%" PRIu64 ": %" PRIu64 " samples, %"
	       PRIu64 " lost, written in %" PRIu64 " ms",
	       sl->start_ns / NP_NSEC_PER_SEC, end_ns / NP_NSEC_PER_SEC,
	       np_agg_samples(sl->agg), np_agg_lost_count(sl->agg),
	       (np_mono_ns() - t0) / 1000000);
	if (sl->h.err)
		np_info("store writes work again: the pending slices were written as one");
	sl->h.err = 0;
	sl->h.what[0] = 0;
	sl->written++;
	np_agg_reset(sl->agg);
next:
	sl->start_ns = end_ns;
	return 0;
fail:
	if (!sl->h.err) {
		np_err("cannot write a slice to %s: %s (keeping it in memory, up to pending_size, retrying at the next slice)",
		       sl->dir, err);
		sl->h.since_ns = np_real_ns();
	}
	sl->h.err = -ret;
	snprintf(sl->h.what, sizeof(sl->h.what), "%s", err);
	return -1;
}

void npd_slices_tick(struct npd_slices *sl, uint64_t now_ns)
{
	if (sl->h.err && np_agg_mem(sl->agg) > sl->pending_max)
		npd_slices_drop_pending(sl);
	if (now_ns < sl->end_ns) {
		/* The clock went back by more than a slice: realign. */
		if (sl->end_ns - now_ns > sl->slice_ns)
			sl->end_ns = npd_slice_end(now_ns, sl->slice_ns);
		return;
	}
	npd_slices_write(sl, sl->end_ns);
	/* After a suspend or a clock jump forward, skip the empty slices. */
	sl->end_ns = npd_slice_end(now_ns, sl->slice_ns);
}

int npd_slices_flush(struct npd_slices *sl, uint64_t now_ns)
{
	if (now_ns <= sl->start_ns)
		now_ns = sl->start_ns + 1;
	return npd_slices_write(sl, now_ns);
}

void npd_slices_reconfigure(struct npd_slices *sl, const struct npd_config *cfg)
{
	uint64_t slice_ns = (uint64_t)cfg->slice_s * NP_NSEC_PER_SEC;
	char err[256];

	/* A new frequency counts from here: the slice in memory is labelled
	 * with it (a reload is rare; the alternative is a forced flush). */
	np_agg_set_period_ns(sl->agg, NP_NSEC_PER_SEC / cfg->freq_hz);
	sl->pending_max = cfg->pending_bytes;
	if (slice_ns != sl->slice_ns) {
		np_info("slice length %" PRIu64 " s -> %u s from the next slice",
			sl->slice_ns / NP_NSEC_PER_SEC, cfg->slice_s);
		sl->slice_ns = slice_ns;
	}
	if (cfg->retention_bytes == sl->sopts.max_bytes &&
	    cfg->retention_age_s * NP_NSEC_PER_SEC == sl->sopts.max_age_ns)
		return;
	/*
	 * The store takes its limits at open: reopen it.  The current
	 * slice stays in memory meanwhile; if the reopen fails, the next
	 * write retries it.
	 */
	if (sl->store)
		np_store_close(sl->store);
	npd_slices_store_opts(sl, cfg);
	sl->store = np_store_open(&sl->sopts, err, sizeof(err));
	if (!sl->store) {
		np_err("cannot reopen the store %s with the new retention: %s",
		       sl->dir, err);
		return;
	}
	np_info("retention: %" PRIu64 " bytes, %" PRIu64 " s (0: unlimited)",
		cfg->retention_bytes, cfg->retention_age_s);
	np_store_prune(sl->store, 0);
}

uint64_t npd_slices_written(const struct npd_slices *sl)
{
	return sl->written;
}

uint64_t npd_slices_store_bytes(const struct npd_slices *sl)
{
	return sl->store ? np_store_bytes(sl->store) : 0;
}

size_t npd_slices_mem(const struct npd_slices *sl)
{
	return np_agg_mem(sl->agg);
}

size_t npd_slices_store_mem(const struct npd_slices *sl)
{
	return sl->store ? np_store_mem(sl->store) : 0;
}

void npd_slices_health(const struct npd_slices *sl, struct npd_store_health *h)
{
	*h = sl->h;
	h->pending_samples = np_agg_samples(sl->agg);
	h->pending_bytes = np_agg_mem(sl->agg);
	h->pending_max = sl->pending_max;
}
