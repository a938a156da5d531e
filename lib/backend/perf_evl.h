/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Private to the libperf backend (backend_perf.c, perf_evl.c,
 * perf_sideband.c): libperf event lists and the drain that merges the
 * side-band with the samples in time order.
 */
#ifndef NP_PERF_EVL_H
#define NP_PERF_EVL_H

#include <stddef.h>
#include <stdint.h>
#include <linux/perf_event.h>
#include "np_backend_impl.h"

struct np_ordered;
struct np_unwinder;
union perf_event;

/* One libperf event list with its maps. */
struct np_perf_evl {
	struct perf_evlist *evlist;
	struct perf_cpu_map *cpus;
	struct perf_thread_map *threads;
	int nr_cpus;
	int time_from_end;	/* u64s from a sample_id's end to its TIME */
	uint32_t stack_copy;	/* sample_stack_user of the samples, or 0 */
	uint64_t *scratch;	/* a sample with its stack copy cut to size */
	int keep_enabled;	/* close without disabling first */
};

/* Tags of queued records: which list, so which decoder. */
enum { NP_PERF_SRC_SIDEBAND, NP_PERF_SRC_SAMPLES };

/*
 * Open attr on the selected CPUs and threads and mmap it.  Returns 0 or
 * -errno with err filled.  Refused kernel sampling at perf_event_paranoid
 * >= 2 is retried for user space only, as perf does; attr then says
 * exclude_kernel.
 */
int np_perf_evl_open(struct np_perf_evl *e, const struct np_backend_opts *o,
		     struct perf_event_attr *attr, int pages, const char *what,
		     char *err, size_t errlen);
/* /proc/sys/kernel/perf_event_paranoid (2 if unreadable). */
int np_perf_paranoid(void);
void np_perf_evl_close(struct np_perf_evl *e);
/* Every record of every ring into oe, tagged src (until oe is full). */
void np_perf_evl_read(struct np_perf_evl *e, struct np_ordered *oe, int src);

/* The sampling list a drain reads along with the side-band. */
struct np_perf_samples {
	struct np_perf_evl *evl;
	struct np_unwinder *uw;		/* fed the side-band too, or NULL */
	int (*deliver)(void *owner, union perf_event *pe, np_event_fn fn,
		       void *arg);
	void *owner;
};

int np_perf_sideband_drain_samples(struct np_perf_sideband *sb,
				   const struct np_perf_samples *smp,
				   int flush_all, np_event_fn fn, void *arg,
				   uint64_t *lost);
/* Keep tid -> comm from the side-band, for np_perf_sideband_comm(). */
void np_perf_sideband_track_comms(struct np_perf_sideband *sb);
/* The comm of tid as of the records drained so far (or from /proc). */
void np_perf_sideband_comm(struct np_perf_sideband *sb, uint32_t pid,
			   uint32_t tid, char *out);

#endif /* NP_PERF_EVL_H */
