// SPDX-License-Identifier: GPL-2.0
/*
 * libperf backend: perf_event_open on every selected CPU (or one process)
 * through libperf, frequency-mode sampling with callchains.
 *
 * Two event lists: the side-band (perf_sideband.c, also used by the kmod
 * backend) and the sampling one here.  Every record carries a
 * CLOCK_MONOTONIC timestamp (sample_id_all), and drain() hands records
 * of all rings of both lists on merged in time order through the
 * side-band's drain.
 *
 * Written against the libperf API of the pinned 6.1 series
 * (cmake/Libperf.cmake).
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <linux/perf_event.h>
#include <perf/evlist.h>
#include <perf/event.h>
#include "perf_evl.h"
#include "np_unwind_impl.h"
#include "np_unwind_walk.h"

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

struct perf_backend {
	struct np_backend base;
	struct np_perf_sideband *sb;
	struct np_perf_evl evl;
	struct np_perf_samples smp;	/* evl, as the side-band's drain reads it */
	const char *source;
	const char *note;	/* what was left out and why, or NULL */
	int pid;
	unsigned int kdepth, udepth;
	struct np_unwinder *uw;	/* user stacks copied and unwound here */
	uint64_t samples, lost;
	unsigned int pages;	/* data pages of each ring */
	int flush_all;		/* stopped or target gone: no record is in flight */
	uint64_t kframes[NMIPROF_MAX_FRAMES], uframes[NMIPROF_MAX_FRAMES];
};

/* ---- record translation ------------------------------------------ */

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
static int deliver_sample(void *owner, union perf_event *pe, np_event_fn fn,
			  void *arg)
{
	struct perf_backend *pb = owner;
	const uint64_t *p = (const uint64_t *)&pe->sample.array;
	const uint64_t *end = (const uint64_t *)((const char *)pe + pe->header.size);
	struct np_event ev;
	struct np_ev_sample *s = &ev.sample;
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
	np_perf_sideband_comm(pb->sb, s->pid, s->tid, s->comm);
	pb->samples++;
	return fn(&ev, arg);
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

	return np_perf_sideband_drain_samples(pb->sb, &pb->smp, pb->flush_all,
					      fn, arg, &pb->lost);
}

static int perf_stats(struct np_backend *b, struct np_backend_stats *st)
{
	struct perf_backend *pb = (struct perf_backend *)b;

	st->source = pb->source;
	st->note = pb->note;
	st->kernel_excluded = pb->note != NULL;
	st->samples = pb->samples;
	st->lost = pb->lost;
	st->nr_cpus = pb->evl.nr_cpus;
	st->ring_bytes = (uint64_t)pb->pages * (uint64_t)sysconf(_SC_PAGESIZE);
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

	np_perf_evl_close(&pb->evl);
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
	np_perf_sideband_track_comms(pb->sb);
	if (o->ustack_copy == NP_USTACK_COPY_AUTO) {
		oa = *o;
		oa.ustack_copy = o->pid >= 0 ? NP_USTACK_COPY_DEFAULT : 0;
		o = &oa;
	}
	if (o->user_stacks && o->ustack_copy) {
		struct np_unwinder_opts uo = {
			.cache_dir = o->unwind_cache, .paced = o->pid < 0,
		};

		if (!uo.cache_dir)
			uo.cache_dir = getenv("NMIPROF_UNWIND_CACHE");
		pb->uw = np_unwinder_new(&uo, err, errlen);
		if (!pb->uw) {
			np_perf_sideband_close(pb->sb);
			free(pb);
			return NULL;
		}
	}
	pages = o->mmap_pages ? o->mmap_pages :
		pb->uw ? unwind_pages(o) : SAMPLE_PAGES;
	/* A sample that cannot fit is dropped without even a LOST record. */
	if (pb->uw && (uint64_t)pages * (uint64_t)sysconf(_SC_PAGESIZE) <
		      o->ustack_copy + 2048ULL) {
		unsigned int need = 1;

		while ((uint64_t)need * (uint64_t)sysconf(_SC_PAGESIZE) <
		       o->ustack_copy + 2048ULL)
			need *= 2;
		errno = EINVAL;
		snprintf(err, errlen, "a ring of %u page(s) cannot hold one sample "
			 "with its %u-byte user stack copy: at least %u pages",
			 pages, o->ustack_copy, need);
		np_perf_sideband_close(pb->sb);
		np_unwinder_free(pb->uw);
		free(pb);
		return NULL;
	}
	/* A size asked for (-m) is that size or an error, as in perf. */
	for (;; pages /= 2) {
		/* cycles where a PMU exists (NMI-driven); VMs without: cpu-clock */
		sample_attr(&attr, o, 1, !!pb->uw, pages);
		pb->source = "cycles";
		ret = np_perf_evl_open(&pb->evl, o, &attr, pages, "cycles", err, errlen);
		if (ret == -ENOENT || ret == -EOPNOTSUPP || ret == -ENODEV ||
		    ret == -EINVAL) {
			sample_attr(&attr, o, 0, !!pb->uw, pages);
			pb->source = "cpu-clock";
			ret = np_perf_evl_open(&pb->evl, o, &attr, pages, "cpu-clock",
				       err, errlen);
		}
		if (ret == 0 || pages <= SAMPLE_PAGES || o->mmap_pages)
			break;
	}
	pb->pages = pages;
	if (ret < 0) {
		np_perf_sideband_close(pb->sb);
		np_unwinder_free(pb->uw);
		free(pb);
		return NULL;
	}
	if (attr.exclude_kernel)
		pb->note = "kernel frames left out: perf_event_paranoid is 2 or "
			   "more, which lets a user sample only user space "
			   "(run as root, with CAP_PERFMON, or lower it to 1)";
	/* sample_id of SAMPLE_TYPE: TID, TIME, CPU: one word after TIME */
	pb->evl.time_from_end = 1;
	if (pb->uw) {
		pb->evl.scratch = malloc(1 << 16);	/* a record's most */
		pb->evl.stack_copy = pb->evl.scratch ? o->ustack_copy : 0;
	}
	pb->smp = (struct np_perf_samples){ .evl = &pb->evl, .uw = pb->uw,
					    .deliver = deliver_sample, .owner = pb };
	if (errlen)
		err[0] = '\0';	/* the cycles attempt may have left a line */
	return &pb->base;
}
