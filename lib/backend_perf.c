// SPDX-License-Identifier: GPL-2.0
/*
 * libperf backend: perf_event_open on every selected CPU (or one process)
 * through libperf, frequency-mode sampling with callchains.
 *
 * Two event lists: a side-band one (PERF_COUNT_SW_DUMMY carrying MMAP2,
 * COMM and FORK/EXIT records, also used by the kmod backend) and the
 * sampling one.  drain() empties side-band first so that the mappings a
 * sample refers to are known before the sample reaches the symbolizer.
 *
 * Written against the libperf API of the pinned 6.1 series
 * (cmake/Libperf.cmake).
 */
#include <dirent.h>
#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <linux/perf_event.h>
#include <perf/core.h>
#include <perf/cpumap.h>
#include <perf/threadmap.h>
#include <perf/evlist.h>
#include <perf/evsel.h>
#include <perf/mmap.h>
#include <perf/event.h>
#include "np_backend_impl.h"

#define SAMPLE_TYPE	(PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | \
			 PERF_SAMPLE_CPU | PERF_SAMPLE_CALLCHAIN)
#define SAMPLE_PAGES	64	/* per CPU; 256 KiB holds ~1 s at 99 Hz x 127 frames */
#define SIDEBAND_PAGES	32
#define COMM_BUCKETS	4096

/* tid -> comm, because perf samples do not carry the comm. */
struct comm_entry {
	struct comm_entry *next;
	uint32_t tid;
	char comm[NMIPROF_COMM_LEN];
};

/* One libperf event list with its maps. */
struct evl {
	struct perf_evlist *evlist;
	struct perf_cpu_map *cpus;
	struct perf_thread_map *threads;
	int nr_cpus;
};

struct np_perf_sideband {
	struct evl evl;
	struct comm_entry *comms[COMM_BUCKETS];	/* kept only when asked */
	int track_comms;
};

struct perf_backend {
	struct np_backend base;
	struct np_perf_sideband *sb;
	struct evl evl;
	const char *source;
	int pid;
	unsigned int kdepth, udepth;
	uint64_t samples, lost;
	uint64_t kframes[NMIPROF_MAX_FRAMES], uframes[NMIPROF_MAX_FRAMES];
};

static int quiet_print(enum libperf_print_level level, const char *fmt,
		       va_list ap)
{
	return 0;
}

/* ---- tid -> comm ------------------------------------------------- */

static struct comm_entry **comm_slot(struct np_perf_sideband *sb, uint32_t tid)
{
	struct comm_entry **pp = &sb->comms[tid % COMM_BUCKETS];

	while (*pp && (*pp)->tid != tid)
		pp = &(*pp)->next;
	return pp;
}

static void comm_set(struct np_perf_sideband *sb, uint32_t tid, const char *comm)
{
	struct comm_entry **pp = comm_slot(sb, tid);

	if (!*pp) {
		*pp = calloc(1, sizeof(**pp));
		if (!*pp)
			return;
		(*pp)->tid = tid;
	}
	snprintf((*pp)->comm, sizeof((*pp)->comm), "%s", comm);
}

static void comm_get(struct np_perf_sideband *sb, uint32_t pid, uint32_t tid,
		     char *out)
{
	struct comm_entry **pp = comm_slot(sb, tid);
	char path[64];
	FILE *f;

	if (*pp) {
		memcpy(out, (*pp)->comm, NMIPROF_COMM_LEN);
		return;
	}
	/* First sight of a task that existed before we started. */
	snprintf(path, sizeof(path), "/proc/%u/task/%u/comm", pid, tid);
	out[0] = '\0';
	f = fopen(path, "r");
	if (f) {
		if (fgets(out, NMIPROF_COMM_LEN, f))
			out[strcspn(out, "\n")] = '\0';
		fclose(f);
	}
	if (!out[0])
		snprintf(out, NMIPROF_COMM_LEN, ":%u", tid);
	comm_set(sb, tid, out);
}

/* ---- event lists ------------------------------------------------- */

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

static void evl_close(struct evl *e)
{
	if (e->evlist) {
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
	memset(e, 0, sizeof(*e));
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

/*
 * Open attr on the selected CPUs and threads and mmap it.  Returns 0 or
 * -errno with err filled.
 */
static int evl_open(struct evl *e, const struct np_backend_opts *o,
		    struct perf_event_attr *attr, int pages, const char *what,
		    char *err, size_t errlen)
{
	struct perf_evsel *evsel;
	int ret;

	memset(e, 0, sizeof(*e));
	if (o->cpus) {
		/* libperf is lenient ("0-" is CPU 0): same rules as kmod */
		uint64_t mask[1024 / 64], online[1024 / 64];

		if (np_cpulist_parse(o->cpus, mask, 1024, err, errlen) < 0 ||
		    np_cpulist_online(online, 1024, err, errlen) < 0)
			return -EINVAL;
		for (unsigned int c = 0; c < 1024; c++) {
			if ((mask[c / 64] & ~online[c / 64]) & (1ULL << (c % 64))) {
				snprintf(err, errlen, "CPU %u (in '%s') is not online", c, o->cpus);
				return -EINVAL;
			}
		}
	}
	e->cpus = o->cpus ? perf_cpu_map__new(o->cpus) : perf_cpu_map__new(NULL);
	if (!e->cpus) {
		snprintf(err, errlen, "invalid CPU list '%s'", o->cpus ? o->cpus : "");
		return -EINVAL;
	}
	e->nr_cpus = perf_cpu_map__nr(e->cpus);
	e->threads = threads_of(o->pid, err, errlen);
	if (!e->threads) {
		evl_close(e);
		return -ESRCH;
	}
	e->evlist = perf_evlist__new();
	evsel = perf_evsel__new(attr);
	if (!e->evlist || !evsel) {
		if (evsel)
			perf_evsel__delete(evsel);
		evl_close(e);
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	perf_evlist__add(e->evlist, evsel);
	perf_evlist__set_maps(e->evlist, e->cpus, e->threads);
	ret = perf_evlist__open(e->evlist);
	if (ret < 0) {
		open_error(ret, what, err, errlen);
		/* not opened: no disable/munmap, only the references */
		perf_evlist__set_maps(e->evlist, NULL, NULL);
		perf_evlist__delete(e->evlist);
		e->evlist = NULL;
		evl_close(e);
		return ret;
	}
	ret = perf_evlist__mmap(e->evlist, pages);
	if (ret < 0) {
		snprintf(err, errlen, "mmap of perf ring (%s): %s; raise "
			 "/proc/sys/kernel/perf_event_mlock_kb", what, strerror(-ret));
		evl_close(e);
		return ret;
	}
	return 0;
}

/* ---- record translation ------------------------------------------ */

static int deliver_sideband(struct np_perf_sideband *sb, union perf_event *pe,
			    np_event_fn fn, void *arg)
{
	struct np_event ev;

	memset(&ev, 0, sizeof(ev));
	switch (pe->header.type) {
	case PERF_RECORD_MMAP2:
		ev.type = NP_EV_MMAP;
		ev.mmap.pid = pe->mmap2.pid;
		ev.mmap.tid = pe->mmap2.tid;
		ev.mmap.start = pe->mmap2.start;
		ev.mmap.len = pe->mmap2.len;
		ev.mmap.pgoff = pe->mmap2.pgoff;
		ev.mmap.prot = pe->mmap2.prot;
		ev.mmap.flags = pe->mmap2.flags;
		if (pe->header.misc & PERF_RECORD_MISC_MMAP_BUILD_ID) {
			ev.mmap.build_id_size = pe->mmap2.build_id_size > 20 ?
						20 : pe->mmap2.build_id_size;
			memcpy(ev.mmap.build_id, pe->mmap2.build_id,
			       ev.mmap.build_id_size);
		}
		ev.mmap.filename = pe->mmap2.filename;
		break;
	case PERF_RECORD_MMAP:
		ev.type = NP_EV_MMAP;
		ev.mmap.pid = pe->mmap.pid;
		ev.mmap.tid = pe->mmap.tid;
		ev.mmap.start = pe->mmap.start;
		ev.mmap.len = pe->mmap.len;
		ev.mmap.pgoff = pe->mmap.pgoff;
		ev.mmap.prot = 4;	/* PROT_EXEC: MMAP carries exec maps only */
		ev.mmap.filename = pe->mmap.filename;
		break;
	case PERF_RECORD_COMM:
		ev.type = NP_EV_COMM;
		ev.comm.pid = pe->comm.pid;
		ev.comm.tid = pe->comm.tid;
		ev.comm.exec = !!(pe->header.misc & PERF_RECORD_MISC_COMM_EXEC);
		snprintf(ev.comm.comm, sizeof(ev.comm.comm), "%.*s",
			 (int)sizeof(pe->comm.comm), pe->comm.comm);
		if (sb->track_comms)
			comm_set(sb, ev.comm.tid, ev.comm.comm);
		break;
	case PERF_RECORD_FORK:
	case PERF_RECORD_EXIT:
		ev.type = pe->header.type == PERF_RECORD_FORK ? NP_EV_FORK
							      : NP_EV_EXIT;
		ev.task.pid = pe->fork.pid;
		ev.task.ppid = pe->fork.ppid;
		ev.task.tid = pe->fork.tid;
		ev.task.ptid = pe->fork.ptid;
		ev.task.time_ns = pe->fork.time;
		if (sb->track_comms && ev.type == NP_EV_FORK) {
			char comm[NMIPROF_COMM_LEN];

			/* A new task starts with its parent's comm. */
			comm_get(sb, ev.task.ppid, ev.task.ptid, comm);
			comm_set(sb, ev.task.tid, comm);
		}
		break;
	default:
		return 0;
	}
	return fn(&ev, arg);
}

/*
 * Split a perf callchain at its context markers: kernel frames follow
 * PERF_CONTEXT_KERNEL, user frames PERF_CONTEXT_USER; guest or
 * hypervisor contexts are not ours and are skipped.
 */
static int deliver_sample(struct perf_backend *pb, union perf_event *pe,
			  np_event_fn fn, void *arg)
{
	const uint64_t *p = (const uint64_t *)&pe->sample.array;
	const uint64_t *end = (const uint64_t *)((const char *)pe + pe->header.size);
	struct np_event ev;
	struct np_sample *s = &ev.sample;
	uint64_t nr, ctx = 0;
	uint16_t nk = 0, nu = 0;

	memset(&ev, 0, sizeof(ev));
	ev.type = NP_EV_SAMPLE;
	/* IP, TID, TIME, CPU, CALLCHAIN in PERF_SAMPLE_* bit order */
	if (end - p < 5)
		return 0;
	s->ip = *p++;
	s->pid = (uint32_t)*p;
	s->tid = (uint32_t)(*p++ >> 32);
	s->time_ns = *p++;
	s->cpu = (uint32_t)*p++;
	nr = *p++;
	if (nr > (uint64_t)(end - p))
		return 0;	/* malformed: never read past the record */
	for (uint64_t i = 0; i < nr; i++) {
		uint64_t a = p[i];

		if (a >= (uint64_t)PERF_CONTEXT_MAX) {
			ctx = a;
			continue;
		}
		if (ctx == (uint64_t)PERF_CONTEXT_KERNEL) {
			if (nk < pb->kdepth)
				pb->kframes[nk++] = a;
			else
				s->flags |= NMIPROF_RF_KSTACK_TRUNC;
		} else if (ctx == (uint64_t)PERF_CONTEXT_USER) {
			if (nu < pb->udepth)
				pb->uframes[nu++] = a;
			else
				s->flags |= NMIPROF_RF_USTACK_TRUNC;
		}
	}
	if ((pe->header.misc & PERF_RECORD_MISC_CPUMODE_MASK) ==
	    PERF_RECORD_MISC_USER)
		s->flags |= NMIPROF_RF_USER_MODE;
	if (!nu)
		s->flags |= NMIPROF_RF_NO_USTACK;
	s->nr_kframes = nk;
	s->nr_uframes = nu;
	s->kframes = pb->kframes;
	s->uframes = pb->uframes;
	comm_get(pb->sb, s->pid, s->tid, s->comm);
	pb->samples++;
	return fn(&ev, arg);
}

static int deliver_lost(uint32_t cpu, uint64_t lost, np_event_fn fn, void *arg)
{
	struct np_event ev;

	memset(&ev, 0, sizeof(ev));
	ev.type = NP_EV_LOST;
	ev.lost.cpu = cpu;
	ev.lost.lost = lost;
	return fn(&ev, arg);
}

/*
 * Empty every ring of an event list.  Samples go to pb (NULL for the
 * side-band list); a callback returning non-zero stops the drain after
 * the current record is consumed.
 */
static int evl_drain(struct evl *e, struct np_perf_sideband *sb,
		     struct perf_backend *pb, np_event_fn fn, void *arg,
		     uint64_t *lost)
{
	struct perf_mmap *map;
	int idx = 0, n = 0, stop = 0;

	/* Rings come in CPU-map order: one per CPU (threads redirected). */
	perf_evlist__for_each_mmap(e->evlist, map, false) {
		uint32_t cpu = perf_cpu_map__cpu(e->cpus, idx++ % e->nr_cpus).cpu;
		union perf_event *pe;

		if (stop || perf_mmap__read_init(map) < 0)
			continue;
		while (!stop && (pe = perf_mmap__read_event(map)) != NULL) {
			int r = 0;

			switch (pe->header.type) {
			case PERF_RECORD_SAMPLE:
				if (pb)
					r = deliver_sample(pb, pe, fn, arg);
				break;
			case PERF_RECORD_LOST:
				*lost += pe->lost.lost;
				r = deliver_lost(cpu, pe->lost.lost, fn, arg);
				break;
			default:
				r = deliver_sideband(sb, pe, fn, arg);
				break;
			}
			perf_mmap__consume(map);
			n++;
			if (r)
				stop = 1;
		}
		perf_mmap__read_done(map);
	}
	return n;
}

/* ---- side-band --------------------------------------------------- */

static void sideband_attr(struct perf_event_attr *a, int build_id)
{
	memset(a, 0, sizeof(*a));
	a->size = sizeof(*a);
	a->type = PERF_TYPE_SOFTWARE;
	a->config = PERF_COUNT_SW_DUMMY;
	a->mmap = 1;
	a->mmap2 = 1;
	a->comm = 1;
	a->comm_exec = 1;
	a->task = 1;
	a->build_id = build_id;
	a->inherit = 1;
	a->disabled = 1;
	a->use_clockid = 1;
	a->clockid = CLOCK_MONOTONIC;
	a->watermark = 1;
	a->wakeup_watermark = SIDEBAND_PAGES * 4096 / 4;
}

struct np_perf_sideband *np_perf_sideband_open(const struct np_backend_opts *o,
					       char *err, size_t errlen)
{
	struct np_perf_sideband *sb = calloc(1, sizeof(*sb));
	struct perf_event_attr attr;
	int ret;

	if (!sb) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	libperf_init(quiet_print);
	/* MMAP2 build-ids since Linux 5.12; older kernels reject the bit. */
	sideband_attr(&attr, 1);
	ret = evl_open(&sb->evl, o, &attr, SIDEBAND_PAGES, "side-band", err, errlen);
	if (ret == -EINVAL) {
		sideband_attr(&attr, 0);
		ret = evl_open(&sb->evl, o, &attr, SIDEBAND_PAGES, "side-band",
			       err, errlen);
	}
	if (ret < 0) {
		free(sb);
		return NULL;
	}
	return sb;
}

int np_perf_sideband_enable(struct np_perf_sideband *sb, int on)
{
	if (on)
		perf_evlist__enable(sb->evl.evlist);
	else
		perf_evlist__disable(sb->evl.evlist);
	return 0;
}

int np_perf_sideband_drain(struct np_perf_sideband *sb, np_event_fn fn,
			   void *arg, uint64_t *lost)
{
	return evl_drain(&sb->evl, sb, NULL, fn, arg, lost);
}

void np_perf_sideband_close(struct np_perf_sideband *sb)
{
	if (!sb)
		return;
	evl_close(&sb->evl);
	for (int i = 0; i < COMM_BUCKETS; i++) {
		while (sb->comms[i]) {
			struct comm_entry *c = sb->comms[i];

			sb->comms[i] = c->next;
			free(c);
		}
	}
	free(sb);
}

/* ---- backend ops ------------------------------------------------- */

static void sample_attr(struct perf_event_attr *a, const struct np_backend_opts *o,
			int hw)
{
	memset(a, 0, sizeof(*a));
	a->size = sizeof(*a);
	a->type = hw ? PERF_TYPE_HARDWARE : PERF_TYPE_SOFTWARE;
	a->config = hw ? PERF_COUNT_HW_CPU_CYCLES : PERF_COUNT_SW_CPU_CLOCK;
	a->freq = 1;
	a->sample_freq = o->freq_hz;
	a->sample_type = SAMPLE_TYPE;
	a->exclude_callchain_user = !o->user_stacks;
	/* frames + one context marker per context, within perf's 127 */
	a->sample_max_stack = o->kstack_depth + (o->user_stacks ? o->ustack_depth : 0) + 2;
	if (a->sample_max_stack > 127)
		a->sample_max_stack = 127;
	a->inherit = 1;
	a->disabled = 1;
	a->use_clockid = 1;
	a->clockid = CLOCK_MONOTONIC;
	a->watermark = 1;
	a->wakeup_watermark = SAMPLE_PAGES * 4096 / 4;
}

static int perf_start(struct np_backend *b)
{
	struct perf_backend *pb = (struct perf_backend *)b;

	np_perf_sideband_enable(pb->sb, 1);
	perf_evlist__enable(pb->evl.evlist);
	return 0;
}

static int perf_stop(struct np_backend *b)
{
	struct perf_backend *pb = (struct perf_backend *)b;

	perf_evlist__disable(pb->evl.evlist);
	np_perf_sideband_enable(pb->sb, 0);
	return 0;
}

static int perf_poll(struct np_backend *b, int timeout_ms)
{
	struct perf_backend *pb = (struct perf_backend *)b;
	int ret = perf_evlist__poll(pb->evl.evlist, timeout_ms);

	if (ret < 0)
		return -errno;
	/*
	 * A followed process that exited hangs its events up: stop polling
	 * them (poll would return at once forever) and say it is gone.
	 */
	if (ret > 0 && pb->pid >= 0 &&
	    perf_evlist__filter_pollfd(pb->evl.evlist, POLLERR | POLLHUP) == 0)
		return -ESRCH;
	return ret;
}

static int perf_drain(struct np_backend *b, np_event_fn fn, void *arg)
{
	struct perf_backend *pb = (struct perf_backend *)b;
	int n = np_perf_sideband_drain(pb->sb, fn, arg, &pb->lost);

	return n + evl_drain(&pb->evl, pb->sb, pb, fn, arg, &pb->lost);
}

static int perf_stats(struct np_backend *b, struct np_backend_stats *st)
{
	struct perf_backend *pb = (struct perf_backend *)b;

	st->source = pb->source;
	st->samples = pb->samples;
	st->lost = pb->lost;
	st->nr_cpus = pb->evl.nr_cpus;
	return 0;
}

static void perf_close(struct np_backend *b)
{
	struct perf_backend *pb = (struct perf_backend *)b;

	evl_close(&pb->evl);
	np_perf_sideband_close(pb->sb);
	free(pb);
}

static const struct np_backend_ops perf_ops = {
	.name = "libperf",
	.start = perf_start,
	.stop = perf_stop,
	.poll = perf_poll,
	.drain = perf_drain,
	.stats = perf_stats,
	.close = perf_close,
};

struct np_backend *np_backend_perf_open(const struct np_backend_opts *o,
					char *err, size_t errlen)
{
	struct perf_backend *pb = calloc(1, sizeof(*pb));
	struct perf_event_attr attr;
	int ret;

	if (!pb) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	pb->base.ops = &perf_ops;
	pb->pid = o->pid;
	pb->kdepth = o->kstack_depth;
	pb->udepth = o->user_stacks ? o->ustack_depth : 0;
	pb->sb = np_perf_sideband_open(o, err, errlen);
	if (!pb->sb) {
		free(pb);
		return NULL;
	}
	pb->sb->track_comms = 1;
	/* cycles where a PMU exists (NMI-driven); VMs without one: cpu-clock */
	sample_attr(&attr, o, 1);
	pb->source = "cycles";
	ret = evl_open(&pb->evl, o, &attr, SAMPLE_PAGES, "cycles", err, errlen);
	if (ret == -ENOENT || ret == -EOPNOTSUPP || ret == -ENODEV ||
	    ret == -EINVAL) {
		sample_attr(&attr, o, 0);
		pb->source = "cpu-clock";
		ret = evl_open(&pb->evl, o, &attr, SAMPLE_PAGES, "cpu-clock",
			       err, errlen);
	}
	if (ret < 0) {
		np_perf_sideband_close(pb->sb);
		free(pb);
		return NULL;
	}
	if (errlen)
		err[0] = '\0';	/* the cycles attempt may have left a line */
	return &pb->base;
}
