/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The current time slice: samples are aggregated (np_agg, symbolized at
 * ingest) until the slice's wall-clock end, then handed to the store as
 * one segment.  Slices are aligned to multiples of slice_seconds of
 * CLOCK_REALTIME (10:00:00-10:01:00 ...) so that stored segments line up
 * across restarts; the first and the last slice of a run are partial.
 */
#ifndef NPD_SLICES_H
#define NPD_SLICES_H

#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "np_event.h"
#include "agg.h"		/* np_symbolize_fn */
#include "symbolizer.h"

struct npd_slices;

/*
 * Opens (creates) the store: fails if another daemon holds it.  symbolize
 * (arg) names the frames of each distinct stack.
 */
struct npd_slices *npd_slices_open(const struct npd_config *cfg,
				   np_symbolize_fn symbolize, void *arg,
				   char *err, size_t errlen);
void npd_slices_close(struct npd_slices *sl);

/* 0, or -ENOMEM: the sample is counted as lost in the slice. */
int npd_slices_sample(struct npd_slices *sl, const struct np_ev_sample *s);
void npd_slices_lost(struct npd_slices *sl, uint64_t lost);
/* Write the slice out if now_ns (CLOCK_REALTIME) is past its end. */
void npd_slices_tick(struct npd_slices *sl, uint64_t now_ns);
/* Write the current, partial slice (shutdown).  0, or -1 (logged). */
int npd_slices_flush(struct npd_slices *sl, uint64_t now_ns);
/* New slice length (from the next slice on) and retention. */
void npd_slices_reconfigure(struct npd_slices *sl, const struct npd_config *cfg);

uint64_t npd_slices_written(const struct npd_slices *sl);

/* Why slices are not reaching the store, and what that cost. */
struct npd_store_health {
	int err;			/* errno of the last failed write, 0: ok */
	char what[256];			/* its message: path and reason */
	uint64_t since_ns;		/* CLOCK_REALTIME of the first failure */
	uint64_t pending_samples;	/* in memory, not yet written */
	uint64_t pending_bytes, pending_max;	/* aggregate heap, its cap */
	/* Since start: samples dropped over pending_max (drops times), and
	 * segments deleted to make room on a full disk. */
	uint64_t dropped_samples, drops;
	uint64_t pruned_segs, pruned_bytes;
};
void npd_slices_health(const struct npd_slices *sl, struct npd_store_health *h);
/* Heap bytes of the current slice's aggregate, and of the store writer. */
size_t npd_slices_mem(const struct npd_slices *sl);
size_t npd_slices_store_mem(const struct npd_slices *sl);
uint64_t npd_slices_store_bytes(const struct npd_slices *sl);

#endif /* NPD_SLICES_H */
