// SPDX-License-Identifier: GPL-2.0
/*
 * libperf backend: perf_event_open on every selected CPU (or one process)
 * through libperf, frequency-mode sampling with callchains.
 *
 * Two event lists: a side-band one (PERF_COUNT_SW_DUMMY carrying MMAP2,
 * COMM and FORK/EXIT records, also used by the kmod backend) and the
 * sampling one.  Every record carries a CLOCK_MONOTONIC timestamp
 * (sample_id_all), and drain() hands records of all rings of both lists
 * on merged in time order (ordered.h), as perf does: a child's FORK
 * read from one CPU's ring must come before its exec COMM and MMAP2s read
 * from another, and a sample must see exactly the mappings of its time.
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
#include "ordered.h"
#include "np_clock.h"
#include "np_unwind.h"

#define SAMPLE_TYPE	(PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | \
			 PERF_SAMPLE_CPU | PERF_SAMPLE_CALLCHAIN)
#define SAMPLE_PAGES	64	/* per CPU; 256 KiB holds ~1 s at 99 Hz x 127 frames */
/* With user stacks copied: bp, sp, ip (PERF_REG_X86_*) and the stack. */
#define UNWIND_TYPE	(PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER)
#define UNWIND_REGS	((1ULL << 6) | (1ULL << 7) | (1ULL << 8))
/*
 * Stack copies make samples ~8 KiB: the ring is sized for half a second
 * of them (a drain thread on a loaded machine can be that late), from
 * 64 pages up to 8 MiB, and halved down to SAMPLE_PAGES while the mmap
 * is refused (perf_event_mlock_kb limits unprivileged users).
 */
#define UNWIND_MAX_PAGES	2048
#define SIDEBAND_PAGES	32
/* side-band records end with sample_id {pid, tid}, {time} */
#define SIDEBAND_TYPE	(PERF_SAMPLE_TID | PERF_SAMPLE_TIME)
#define COMM_BUCKETS	4096
#define IN_FLIGHT_NS	1000000ull	/* stamp-to-commit margin of a record */

/* tid -> comm, because perf samples do not carry the comm. */
struct comm_entry {
	struct comm_entry *next;
	uint32_t tid;
	uint64_t time;		/* of the record that set it: older never overwrite */
	uint64_t exited;	/* time of its EXIT, 0 while alive */
	char comm[NMIPROF_COMM_LEN];
};

/* One libperf event list with its maps. */
struct evl {
	struct perf_evlist *evlist;
	struct perf_cpu_map *cpus;
	struct perf_thread_map *threads;
	int nr_cpus;
	int time_from_end;	/* u64s from a sample_id's end to its TIME */
	uint32_t stack_copy;	/* sample_stack_user of the samples, or 0 */
	uint64_t *scratch;	/* a sample with its stack copy cut to size */
};

/* Tags of queued records: which list, so which decoder. */
enum { SRC_SIDEBAND, SRC_SAMPLES };

struct np_perf_sideband {
	struct evl evl;
	struct comm_entry *comms[COMM_BUCKETS];	/* kept only when asked */
	unsigned int nr_comms, sweep_at;
	int track_comms;
	struct np_ordered oe;	/* records read, not yet handed on */
};

struct perf_backend {
	struct np_backend base;
	struct np_perf_sideband *sb;
	struct evl evl;
	const char *source;
	int pid;
	unsigned int kdepth, udepth;
	struct np_unwinder *uw;	/* user stacks copied and unwound here */
	uint64_t samples, lost;
	int flush_all;		/* stopped or target gone: no record is in flight */
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

static void comm_set(struct np_perf_sideband *sb, uint32_t tid,
		     const char *comm, uint64_t time)
{
	struct comm_entry **pp = comm_slot(sb, tid);

	if (!*pp) {
		*pp = calloc(1, sizeof(**pp));
		if (!*pp)
			return;
		(*pp)->tid = tid;
		sb->nr_comms++;
	} else if ((*pp)->time > time) {
		return;		/* a newer record (an exec's COMM) already set it */
	}
	(*pp)->time = time;
	(*pp)->exited = 0;
	snprintf((*pp)->comm, sizeof((*pp)->comm), "%s", comm);
}

/*
 * Forget tasks that exited more than a second before now: a dying task
 * can still be sampled in the kernel after its EXIT record, so entries
 * are not dropped at once.  Run when the table doubled since the last
 * sweep, which keeps it bounded by the live tasks at amortised O(1).
 */
static void comm_sweep(struct np_perf_sideband *sb, uint64_t now)
{
	for (int i = 0; i < COMM_BUCKETS; i++) {
		struct comm_entry **pp = &sb->comms[i];

		while (*pp) {
			struct comm_entry *c = *pp;

			if (c->exited && c->exited + 1000000000ull < now) {
				*pp = c->next;
				free(c);
				sb->nr_comms--;
			} else {
				pp = &c->next;
			}
		}
	}
	sb->sweep_at = 2 * sb->nr_comms > COMM_BUCKETS ? 2 * sb->nr_comms
						       : COMM_BUCKETS;
}

static void comm_exit(struct np_perf_sideband *sb, uint32_t tid, uint64_t time)
{
	struct comm_entry *c = *comm_slot(sb, tid);

	if (c)
		c->exited = time;
	if (sb->nr_comms >= sb->sweep_at)
		comm_sweep(sb, time);
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
	f = tid ? fopen(path, "r") : NULL;
	if (f) {
		if (fgets(out, NMIPROF_COMM_LEN, f))
			out[strcspn(out, "\n")] = '\0';
		fclose(f);
	}
	if (!out[0] && !tid)
		snprintf(out, NMIPROF_COMM_LEN, "swapper");	/* as perf names it */
	else if (!out[0])
		snprintf(out, NMIPROF_COMM_LEN, ":%u", tid);
	comm_set(sb, tid, out, 0);
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
	free(e->scratch);
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

static int deliver_sideband(struct np_perf_sideband *sb, struct np_unwinder *uw,
			    union perf_event *pe, uint64_t time, np_event_fn fn,
			    void *arg)
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
			comm_set(sb, ev.comm.tid, ev.comm.comm, time);
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
			comm_set(sb, ev.task.tid, comm, time);
		} else if (sb->track_comms) {
			comm_exit(sb, ev.task.tid, time);
		}
		break;
	default:
		return 0;
	}
	if (uw)
		np_unwinder_event(uw, &ev);
	return fn(&ev, arg);
}

/*
 * The user stack of a sample from its REGS_USER and STACK_USER parts
 * (p..end): walked with the compiled tables into pb->uframes.  A walk
 * that did not reach the outermost frame ends with a marker frame
 * naming why (NMIPROF_UW_MARK), so that reports show the cut.
 */
static uint16_t unwind_user(struct perf_backend *pb, uint32_t pid,
			    const uint64_t *p, const uint64_t *end,
			    uint32_t *flags)
{
	struct np_uw_regs regs;
	uint64_t size, dyn;
	unsigned int nr = 0;
	const void *stack;
	int why;

	if (end - p < 1)
		return 0;
	if (*p++ == PERF_SAMPLE_REGS_ABI_NONE)	/* a kernel thread */
		return 0;
	if (end - p < 4)
		return 0;
	regs.bp = *p++;			/* in PERF_REG_X86_* order */
	regs.sp = *p++;
	regs.ip = *p++;
	size = *p++;
	if (size % 8 || size / 8 + 1 > (uint64_t)(end - p))
		return 0;		/* malformed: never read past the record */
	stack = p;
	dyn = size ? p[size / 8] : 0;
	if (dyn > size)
		dyn = size;
	why = np_unwinder_walk(pb->uw, pid, &regs, stack, dyn, pb->uframes,
			       pb->udepth, &nr);
	if (why == NMIPROF_UW_STOP_DEPTH)
		*flags |= NMIPROF_RF_USTACK_TRUNC;
	if (why != NMIPROF_UW_STOP_END && nr) {
		if (nr == pb->udepth)
			nr--;
		pb->uframes[nr++] = NMIPROF_UW_MARK(why);
	}
	return nr;
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
	/* IP, TID, TIME, CPU, CALLCHAIN (REGS_USER, STACK_USER) in bit order */
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
	p += nr;
	if (pb->uw && pb->udepth)
		nu = unwind_user(pb, s->pid, p, end, &s->flags);
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
 * The time of a record: a sample's own TIME (IP, TID, TIME is the layout
 * of SAMPLE_TYPE), any other record's sample_id trailer.  Returns -1 for
 * a record too short to hold it.
 */
static int record_time(const struct evl *e, const union perf_event *pe,
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
static const void *cut_stack(struct evl *e, const union perf_event *pe)
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
static void evl_read(struct evl *e, struct np_perf_sideband *sb, int src)
{
	struct perf_mmap *map;
	int idx = 0;

	/* Rings come in CPU-map order: one per CPU (threads redirected). */
	perf_evlist__for_each_mmap(e->evlist, map, false) {
		uint32_t cpu = perf_cpu_map__cpu(e->cpus, idx++ % e->nr_cpus).cpu;
		union perf_event *pe;

		if (np_ordered_full(&sb->oe) || perf_mmap__read_init(map) < 0)
			continue;
		while (!np_ordered_full(&sb->oe) &&
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

					np_ordered_push(&sb->oe, time, cpu, src, q,
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

struct oe_sink {
	struct np_perf_sideband *sb;
	struct perf_backend *pb;	/* NULL: side-band only */
	np_event_fn fn;
	void *arg;
	uint64_t *lost;
};

static int deliver_queued(const struct np_ordered_entry *e, void *arg)
{
	struct oe_sink *k = arg;
	union perf_event *pe = e->rec;

	switch (pe->header.type) {
	case PERF_RECORD_SAMPLE:
		return k->pb ? deliver_sample(k->pb, pe, k->fn, k->arg) : 0;
	case PERF_RECORD_LOST:
		*k->lost += pe->lost.lost;
		return deliver_lost(e->cpu, pe->lost.lost, k->fn, k->arg);
	default:
		return deliver_sideband(k->sb, k->pb ? k->pb->uw : NULL, pe,
					e->time, k->fn, k->arg);
	}
}

/*
 * Read the rings of the side-band list (and of pb's sampling list) and
 * hand on, in time order, what is safe to hand on.
 *
 * The horizon is the time just before the first ring is read.  A record
 * is committed to its ring before the task that wrote it goes on (MMAP2
 * before mmap() returns, FORK before the child first runs, a sample
 * before the NMI returns), so any record caused by an earlier one is
 * stamped after that one's commit: a record stamped before the horizon
 * has all its causes committed before the horizon, hence already read,
 * from whichever ring.  Records stamped later wait for the next drain.
 * The horizon is set back by IN_FLIGHT_NS so that unrelated records,
 * stamped before it but committed (from NMI or with preemption off)
 * just after a ring was read, rarely come out of order either.
 * With flush_all (nothing is being written any more), everything goes.
 */
static int drain_ordered(struct np_perf_sideband *sb, struct perf_backend *pb,
			 int flush_all, np_event_fn fn, void *arg, uint64_t *lost)
{
	struct oe_sink k = { .sb = sb, .pb = pb, .fn = fn, .arg = arg, .lost = lost };
	uint64_t horizon = flush_all ? UINT64_MAX : np_mono_ns() - IN_FLIGHT_NS;

	evl_read(&sb->evl, sb, SRC_SIDEBAND);
	if (pb)
		evl_read(&pb->evl, sb, SRC_SAMPLES);
	return np_ordered_flush(&sb->oe, horizon, deliver_queued, &k);
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
	a->sample_id_all = 1;
	a->sample_type = SIDEBAND_TYPE;
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
	sb->evl.time_from_end = 0;	/* TIME is the last word of SIDEBAND_TYPE */
	sb->sweep_at = COMM_BUCKETS;
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

/*
 * Side-band alone (kmod backend): everything read is handed on, sorted,
 * so that it precedes the samples the caller drains next.
 */
int np_perf_sideband_drain(struct np_perf_sideband *sb, np_event_fn fn,
			   void *arg, uint64_t *lost)
{
	return drain_ordered(sb, NULL, 1, fn, arg, lost);
}

void np_perf_sideband_close(struct np_perf_sideband *sb)
{
	if (!sb)
		return;
	evl_close(&sb->evl);
	np_ordered_free(&sb->oe);
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

static unsigned int unwind_pages(const struct np_backend_opts *o)
{
	uint64_t bytes = (uint64_t)o->freq_hz * (o->ustack_copy + 256) / 2;
	unsigned int pages = SAMPLE_PAGES;

	while (pages < UNWIND_MAX_PAGES && (uint64_t)pages * 4096 < bytes)
		pages *= 2;
	return pages;
}

static void sample_attr(struct perf_event_attr *a, const struct np_backend_opts *o,
			int hw, int unwind, unsigned int pages)
{
	memset(a, 0, sizeof(*a));
	a->size = sizeof(*a);
	a->type = hw ? PERF_TYPE_HARDWARE : PERF_TYPE_SOFTWARE;
	a->config = hw ? PERF_COUNT_HW_CPU_CYCLES : PERF_COUNT_SW_CPU_CLOCK;
	a->freq = 1;
	a->sample_freq = o->freq_hz;
	a->sample_type = SAMPLE_TYPE;
	a->exclude_callchain_user = !o->user_stacks || unwind;
	if (unwind) {
		a->sample_type |= UNWIND_TYPE;
		a->sample_regs_user = UNWIND_REGS;
		a->sample_stack_user = o->ustack_copy;
	}
	a->sample_id_all = 1;	/* LOST records get a time too */
	/* frames + one context marker per context, within perf's 127 */
	a->sample_max_stack = o->kstack_depth +
			      (o->user_stacks && !unwind ? o->ustack_depth : 0) + 2;
	if (a->sample_max_stack > 127)
		a->sample_max_stack = 127;
	a->inherit = 1;
	a->disabled = 1;
	a->use_clockid = 1;
	a->clockid = CLOCK_MONOTONIC;
	a->watermark = 1;
	a->wakeup_watermark = pages * 4096 / 4;
}

static int perf_start(struct np_backend *b)
{
	struct perf_backend *pb = (struct perf_backend *)b;

	pb->flush_all = 0;
	np_perf_sideband_enable(pb->sb, 1);
	perf_evlist__enable(pb->evl.evlist);
	return 0;
}

static int perf_stop(struct np_backend *b)
{
	struct perf_backend *pb = (struct perf_backend *)b;

	perf_evlist__disable(pb->evl.evlist);
	np_perf_sideband_enable(pb->sb, 0);
	pb->flush_all = 1;	/* the next drain empties the queue */
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
	    perf_evlist__filter_pollfd(pb->evl.evlist, POLLERR | POLLHUP) == 0) {
		pb->flush_all = 1;	/* nothing more will be written */
		return -ESRCH;
	}
	return ret;
}

static int perf_drain(struct np_backend *b, np_event_fn fn, void *arg)
{
	struct perf_backend *pb = (struct perf_backend *)b;

	return drain_ordered(pb->sb, pb, pb->flush_all, fn, arg, &pb->lost);
}

static int perf_stats(struct np_backend *b, struct np_backend_stats *st)
{
	struct perf_backend *pb = (struct perf_backend *)b;

	st->source = pb->source;
	st->samples = pb->samples;
	st->lost = pb->lost;
	st->nr_cpus = pb->evl.nr_cpus;
	if (pb->uw) {
		struct np_unwinder_stats us;

		np_unwinder_stats(pb->uw, &us);
		st->unwind_walks = us.walks;
		memcpy(st->unwind_stops, us.stops, sizeof(st->unwind_stops));
		st->unwind_tables = us.tables;
		st->unwind_table_bytes = us.table_bytes;
	}
	return 0;
}

static void perf_close(struct np_backend *b)
{
	struct perf_backend *pb = (struct perf_backend *)b;

	evl_close(&pb->evl);
	np_perf_sideband_close(pb->sb);
	np_unwinder_free(pb->uw);
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
	struct np_backend_opts oa;
	struct perf_event_attr attr;
	unsigned int pages;
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
	if (o->ustack_copy == NP_USTACK_COPY_AUTO) {
		oa = *o;
		oa.ustack_copy = o->pid >= 0 ? NP_USTACK_COPY_DEFAULT : 0;
		o = &oa;
	}
	if (o->user_stacks && o->ustack_copy) {
		struct np_unwinder_opts uo = { .cache_dir = o->unwind_cache };

		if (!uo.cache_dir)
			uo.cache_dir = getenv("NMIPROF_UNWIND_CACHE");
		pb->uw = np_unwinder_new(&uo, err, errlen);
		if (!pb->uw) {
			np_perf_sideband_close(pb->sb);
			free(pb);
			return NULL;
		}
	}
	for (pages = pb->uw ? unwind_pages(o) : SAMPLE_PAGES;; pages /= 2) {
		/* cycles where a PMU exists (NMI-driven); VMs without: cpu-clock */
		sample_attr(&attr, o, 1, !!pb->uw, pages);
		pb->source = "cycles";
		ret = evl_open(&pb->evl, o, &attr, pages, "cycles", err, errlen);
		if (ret == -ENOENT || ret == -EOPNOTSUPP || ret == -ENODEV ||
		    ret == -EINVAL) {
			sample_attr(&attr, o, 0, !!pb->uw, pages);
			pb->source = "cpu-clock";
			ret = evl_open(&pb->evl, o, &attr, pages, "cpu-clock",
				       err, errlen);
		}
		if (ret == 0 || pages <= SAMPLE_PAGES)
			break;
	}
	if (ret < 0) {
		np_perf_sideband_close(pb->sb);
		np_unwinder_free(pb->uw);
		free(pb);
		return NULL;
	}
	/* sample_id of SAMPLE_TYPE: TID, TIME, CPU: one word after TIME */
	pb->evl.time_from_end = 1;
	if (pb->uw) {
		pb->evl.scratch = malloc(1 << 16);	/* a record's most */
		pb->evl.stack_copy = pb->evl.scratch ? o->ustack_copy : 0;
	}
	if (errlen)
		err[0] = '\0';	/* the cycles attempt may have left a line */
	return &pb->base;
}
