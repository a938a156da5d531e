// SPDX-License-Identifier: GPL-2.0
/*
 * The perf side-band: a PERF_COUNT_SW_DUMMY event list carrying MMAP2,
 * COMM and FORK/EXIT records, as perf record uses.  The kmod backend
 * needs it to symbolize user frames; the libperf backend drains its
 * samples through it, so that side-band and samples come out merged in
 * time order (ordered.h), as perf does: a child's FORK read from one
 * CPU's ring must come before its exec COMM and MMAP2s read from
 * another, and a sample must see exactly the mappings of its time.
 *
 * Written against the libperf API of the pinned 6.1 series
 * (cmake/Libperf.cmake).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <linux/perf_event.h>
#include <perf/core.h>
#include <perf/evlist.h>
#include <perf/event.h>
#include "perf_evl.h"
#include "ordered.h"
#include "np_clock.h"
#include "np_unwind_impl.h"

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

struct np_perf_sideband {
	struct np_perf_evl evl;
	struct np_perf_evl *more;	/* CPUs added later, one list each time */
	int nr_more;
	int enabled, keep_enabled;
	struct perf_event_attr attr;	/* as opened */
	struct comm_entry *comms[COMM_BUCKETS];	/* kept only when asked */
	unsigned int nr_comms, sweep_at;
	int track_comms;
	struct np_ordered oe;	/* records read, not yet handed on */
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

void np_perf_sideband_comm(struct np_perf_sideband *sb, uint32_t pid, uint32_t tid,
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

void np_perf_sideband_track_comms(struct np_perf_sideband *sb)
{
	sb->track_comms = 1;
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
			np_perf_sideband_comm(sb, ev.task.ppid, ev.task.ptid, comm);
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

static int deliver_lost(uint32_t cpu, uint64_t lost, np_event_fn fn, void *arg)
{
	struct np_event ev;

	memset(&ev, 0, sizeof(ev));
	ev.type = NP_EV_LOST;
	ev.lost.cpu = cpu;
	ev.lost.lost = lost;
	return fn(&ev, arg);
}

struct oe_sink {
	struct np_perf_sideband *sb;
	const struct np_perf_samples *smp;	/* NULL: side-band only */
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
		return k->smp ? k->smp->deliver(k->smp->owner, pe, k->fn, k->arg) : 0;
	case PERF_RECORD_LOST:
		*k->lost += pe->lost.lost;
		return deliver_lost(e->cpu, pe->lost.lost, k->fn, k->arg);
	default:
		return deliver_sideband(k->sb, k->smp ? k->smp->uw : NULL, pe,
					e->time, k->fn, k->arg);
	}
}

/*
 * Read the rings of the side-band list (and of the sampling list) and
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
int np_perf_sideband_drain_samples(struct np_perf_sideband *sb,
				   const struct np_perf_samples *smp,
				   int flush_all, np_event_fn fn, void *arg,
				   uint64_t *lost)
{
	struct oe_sink k = { .sb = sb, .smp = smp, .fn = fn, .arg = arg, .lost = lost };
	uint64_t horizon = flush_all ? UINT64_MAX : np_mono_ns() - IN_FLIGHT_NS;

	np_perf_evl_read(&sb->evl, &sb->oe, NP_PERF_SRC_SIDEBAND);
	for (int i = 0; i < sb->nr_more; i++)
		np_perf_evl_read(&sb->more[i], &sb->oe, NP_PERF_SRC_SIDEBAND);
	if (smp)
		np_perf_evl_read(smp->evl, &sb->oe, NP_PERF_SRC_SAMPLES);
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
	ret = np_perf_evl_open(&sb->evl, o, &attr, SIDEBAND_PAGES, "side-band", err, errlen);
	if (ret == -EINVAL) {
		sideband_attr(&attr, 0);
		ret = np_perf_evl_open(&sb->evl, o, &attr, SIDEBAND_PAGES, "side-band",
			       err, errlen);
	}
	if (ret < 0) {
		free(sb);
		return NULL;
	}
	sb->evl.time_from_end = 0;	/* TIME is the last word of SIDEBAND_TYPE */
	sb->sweep_at = COMM_BUCKETS;
	sb->attr = attr;
	return sb;
}

int np_perf_sideband_add_cpus(struct np_perf_sideband *sb,
			      const struct np_backend_opts *o, char *err,
			      size_t errlen)
{
	struct np_perf_evl *more = realloc(sb->more, (sb->nr_more + 1) * sizeof(*more));
	struct perf_event_attr attr = sb->attr;
	struct np_perf_evl *e;
	int ret;

	if (!more) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	sb->more = more;
	e = &more[sb->nr_more];
	ret = np_perf_evl_open(e, o, &attr, SIDEBAND_PAGES, "side-band", err, errlen);
	if (ret < 0)
		return ret;
	e->time_from_end = 0;
	e->keep_enabled = sb->keep_enabled;
	if (sb->enabled)
		perf_evlist__enable(e->evlist);
	sb->nr_more++;
	return 0;
}

void np_perf_sideband_keep_enabled(struct np_perf_sideband *sb)
{
	sb->keep_enabled = 1;
	sb->evl.keep_enabled = 1;
	for (int i = 0; i < sb->nr_more; i++)
		sb->more[i].keep_enabled = 1;
}

int np_perf_sideband_enable(struct np_perf_sideband *sb, int on)
{
	/* each call is a cross call to every CPU: skip what is done */
	if (on == sb->enabled || (!on && sb->keep_enabled))
		return 0;
	sb->enabled = on;
	for (int i = -1; i < sb->nr_more; i++) {
		struct perf_evlist *l = i < 0 ? sb->evl.evlist : sb->more[i].evlist;

		if (on)
			perf_evlist__enable(l);
		else
			perf_evlist__disable(l);
	}
	return 0;
}

/*
 * Side-band alone (kmod backend): everything read is handed on, sorted,
 * so that it precedes the samples the caller drains next.
 */
int np_perf_sideband_drain(struct np_perf_sideband *sb, np_event_fn fn,
			   void *arg, uint64_t *lost)
{
	return np_perf_sideband_drain_samples(sb, NULL, 1, fn, arg, lost);
}

void np_perf_sideband_close(struct np_perf_sideband *sb)
{
	if (!sb)
		return;
	np_perf_evl_close(&sb->evl);
	for (int i = 0; i < sb->nr_more; i++)
		np_perf_evl_close(&sb->more[i]);
	free(sb->more);
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
