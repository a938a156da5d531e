// SPDX-License-Identifier: GPL-2.0
/*
 * libperf event lists of the libperf backend: one attr opened on the
 * selected CPUs and threads, mmapped, and its rings read into the
 * ordered queue with their time stamps (stack copies cut to what was
 * copied).
 *
 * Written against the libperf API of the pinned 6.1 series
 * (cmake/Libperf.cmake).
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/perf_event.h>
#include <perf/core.h>
#include <perf/cpumap.h>
#include <perf/threadmap.h>
#include <perf/evlist.h>
#include <perf/evsel.h>
#include <perf/mmap.h>
#include <perf/event.h>
#include "perf_evl.h"
#include "ordered.h"

static struct perf_thread_map *threads_of(int pid, char *err, size_t errlen)
{
	char path[64];
	pid_t tids[4096];
	int nr = 0;
	struct dirent *de;
	DIR *d;

	if (pid < 0)
		return perf_thread_map__new_dummy();
	snprintf(path, sizeof(path), "/proc/%d/task", pid);
	d = opendir(path);
	if (!d) {
		snprintf(err, errlen, "no process %d: %s", pid, strerror(errno));
		return NULL;
	}
	while ((de = readdir(d)) && nr < (int)(sizeof(tids) / sizeof(tids[0]))) {
		if (de->d_name[0] >= '0' && de->d_name[0] <= '9')
			tids[nr++] = atoi(de->d_name);
	}
	closedir(d);
	if (!nr) {
		snprintf(err, errlen, "process %d has no threads", pid);
		return NULL;
	}
	return perf_thread_map__new_array(nr, tids);
}

void np_perf_evl_close(struct np_perf_evl *e)
{
	if (e->evlist) {
		if (!e->keep_enabled)
			perf_evlist__disable(e->evlist);
		perf_evlist__munmap(e->evlist);
		perf_evlist__close(e->evlist);
		/* 6.1's delete drops neither the evsels' map references nor
		 * the evlist's thread map: NULL maps propagate the puts. */
		perf_evlist__set_maps(e->evlist, NULL, NULL);
		perf_evlist__delete(e->evlist);	/* deletes the evsels */
	}
	perf_cpu_map__put(e->cpus);
	perf_thread_map__put(e->threads);
	free(e->scratch);
	memset(e, 0, sizeof(*e));
}

int np_perf_paranoid(void)
{
	FILE *f = fopen("/proc/sys/kernel/perf_event_paranoid", "r");
	int v = 2;	/* unreadable: assume Debian's default */

	if (f) {
		if (fscanf(f, "%d", &v) != 1)
			v = 2;
		fclose(f);
	}
	return v;
}

static void open_error(int ret, const char *what, char *err, size_t errlen)
{
	int e = -ret;

	if (e == EACCES || e == EPERM)
		snprintf(err, errlen,
			 "perf_event_open (%s): %s; run as root or lower "
			 "/proc/sys/kernel/perf_event_paranoid (-1 for system-wide)",
			 what, strerror(e));
	else
		snprintf(err, errlen, "perf_event_open (%s): %s", what, strerror(e));
}

int np_perf_evl_open(struct np_perf_evl *e, const struct np_backend_opts *o,
		    struct perf_event_attr *attr, int pages, const char *what,
		    char *err, size_t errlen)
{
	struct perf_evsel *evsel;
	int ret;

	memset(e, 0, sizeof(*e));
	/* libperf is lenient ("0-" is CPU 0): same rules as kmod */
	ret = np_backend_check_target(o, err, errlen);
	if (ret)
		return ret;
	e->cpus = o->cpus ? perf_cpu_map__new(o->cpus) : perf_cpu_map__new(NULL);
	if (!e->cpus) {
		snprintf(err, errlen, "invalid CPU list '%s'", o->cpus ? o->cpus : "");
		return -EINVAL;
	}
	e->nr_cpus = perf_cpu_map__nr(e->cpus);
	e->threads = threads_of(o->pid, err, errlen);
	if (!e->threads) {
		np_perf_evl_close(e);
		return -ESRCH;
	}
	e->evlist = perf_evlist__new();
	evsel = perf_evsel__new(attr);
	if (!e->evlist || !evsel) {
		if (evsel)
			perf_evsel__delete(evsel);
		np_perf_evl_close(e);
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	perf_evlist__add(e->evlist, evsel);
	perf_evlist__set_maps(e->evlist, e->cpus, e->threads);
	ret = perf_evlist__open(e->evlist);
	if ((ret == -EACCES || ret == -EPERM) && !attr->exclude_kernel &&
	    np_perf_paranoid() >= 2) {
		/* What perf does for a user at paranoid 2: user space only. */
		struct perf_event_attr *a = perf_evsel__attr(evsel);

		a->exclude_kernel = a->exclude_hv = 1;
		a->exclude_callchain_kernel = 1;
		ret = perf_evlist__open(e->evlist);
		if (ret == 0) {
			attr->exclude_kernel = attr->exclude_hv = 1;
			attr->exclude_callchain_kernel = 1;
		}
	}
	if (ret < 0) {
		open_error(ret, what, err, errlen);
		/* not opened: no disable/munmap, only the references */
		perf_evlist__set_maps(e->evlist, NULL, NULL);
		perf_evlist__delete(e->evlist);
		e->evlist = NULL;
		np_perf_evl_close(e);
		return ret;
	}
	ret = perf_evlist__mmap(e->evlist, pages);
	if (ret < 0) {
		snprintf(err, errlen, "mmap of perf ring (%s): %s; raise "
			 "/proc/sys/kernel/perf_event_mlock_kb", what, strerror(-ret));
		np_perf_evl_close(e);
		return ret;
	}
	return 0;
}


/*
 * The time of a record: a sample's own TIME (IP, TID, TIME is the layout
 * of SAMPLE_TYPE), any other record's sample_id trailer.  Returns -1 for
 * a record too short to hold it.
 */
static int record_time(const struct np_perf_evl *e, const union perf_event *pe,
		       uint64_t *time)
{
	const uint64_t *end = (const uint64_t *)((const char *)pe + pe->header.size);
	size_t words = (pe->header.size - sizeof(pe->header)) / sizeof(uint64_t);

	if (pe->header.type == PERF_RECORD_SAMPLE) {
		if (words < 3)
			return -1;
		*time = pe->sample.array[2];
		return 0;
	}
	if (words < (size_t)e->time_from_end + 1)
		return -1;
	*time = end[-1 - e->time_from_end];
	return 0;
}

/*
 * A sample ends with its user stack copy, {size, data[size], dyn_size}:
 * perf always copies size bytes but only the first dyn_size are stack.
 * Queue the record without the rest (~3/4 of a sample's 8 KiB where
 * stacks are shallow), so that the queue holds what the rings did.
 */
static const void *cut_stack(struct np_perf_evl *e, const union perf_event *pe)
{
	const uint8_t *r = (const void *)pe;
	uint64_t size = e->stack_copy, dyn, keep;
	size_t hsize = pe->header.size;

	if (!e->stack_copy || hsize < size + 16 + sizeof(pe->header) ||
	    *(const uint64_t *)(r + hsize - 16 - size) != size)
		return pe;	/* no stack (a kernel thread): as it is */
	dyn = *(const uint64_t *)(r + hsize - 8);
	keep = dyn < size ? (dyn + 7) & ~7ULL : size;
	if (keep == size)
		return pe;
	memcpy(e->scratch, r, hsize - 8 - size);
	*(uint64_t *)((uint8_t *)e->scratch + hsize - 16 - size) = keep;
	memcpy((uint8_t *)e->scratch + hsize - 8 - size, r + hsize - 8 - size, keep);
	*(uint64_t *)((uint8_t *)e->scratch + hsize - 8 - size + keep) = dyn;
	((struct perf_event_header *)e->scratch)->size = hsize - size + keep;
	return e->scratch;
}

/*
 * Copy every record of every ring of an event list into the ordered
 * queue (until it holds NP_ORDERED_MAX_BYTES: the rest waits in the rings).
 * Records nobody decodes (THROTTLE...) are consumed here.
 */
void np_perf_evl_read(struct np_perf_evl *e, struct np_ordered *oe, int src)
{
	struct perf_mmap *map;
	int idx = 0;

	/* Rings come in CPU-map order: one per CPU (threads redirected). */
	perf_evlist__for_each_mmap(e->evlist, map, false) {
		uint32_t cpu = perf_cpu_map__cpu(e->cpus, idx++ % e->nr_cpus).cpu;
		union perf_event *pe;

		if (np_ordered_full(oe) || perf_mmap__read_init(map) < 0)
			continue;
		while (!np_ordered_full(oe) &&
		       (pe = perf_mmap__read_event(map)) != NULL) {
			uint64_t time;

			switch (pe->header.type) {
			case PERF_RECORD_SAMPLE:
			case PERF_RECORD_LOST:
			case PERF_RECORD_MMAP:
			case PERF_RECORD_MMAP2:
			case PERF_RECORD_COMM:
			case PERF_RECORD_FORK:
			case PERF_RECORD_EXIT:
				if (record_time(e, pe, &time) == 0) {
					const union perf_event *q = cut_stack(e, pe);

					np_ordered_push(oe, time, cpu, src, q,
							q->header.size);
				}
				break;
			default:
				break;
			}
			perf_mmap__consume(map);
		}
		perf_mmap__read_done(map);
	}
}
