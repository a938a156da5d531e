// SPDX-License-Identifier: GPL-2.0
/*
 * The userspace unwinder of the libperf backend: which object every
 * process maps where (the symbolizer's process maps, fed by the same
 * side-band events), one compiled table per object, and the walk over
 * the user stack copied with a sample (PERF_SAMPLE_STACK_USER).
 */
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "np_clock.h"
#include "np_unwind_impl.h"
#include "np_unwind_walk.h"
#include "symbolizer.h"
#include "np_symtab.h"

#define OBJ_BUCKETS	1024
/*
 * Compiling a table takes ~0.1-0.5 s per MiB of .eh_frame, in the thread
 * that drains the rings.  System-wide (paced), at most a fifth of the
 * time goes to it (a burst of up to 200 ms), or a start seeing every
 * binary at once would let the rings overflow and hold back the sets of
 * processes started meanwhile.  Objects over budget are walked with
 * frame pointers until their turn comes; cached tables cost no budget.
 * Only time outside compiles refills it, and a compile that overran
 * leaves it overdrawn.  A followed process's few objects compile at
 * once: a short command would otherwise lose its stacks to the budget.
 */
#define COMPILE_SHARE	5
#define COMPILE_BURST_NS	200000000ULL

/* An object's table, found by what identifies the file. */
struct obj_entry {
	struct obj_entry *next;
	dev_t dev;
	ino_t ino;
	int64_t mtime;
	off_t size;
	struct np_uw_obj *obj;		/* NULL: no usable CFI (not retried) */
	uint64_t retry_ns;		/* compile deferred: not before then */
};

struct np_unwinder {
	struct np_symbolizer *maps;
	struct obj_entry *objs[OBJ_BUCKETS];
	char cache_dir[4096], debug_root[4096];
	struct np_unwinder_stats st;
	int load_flags;			/* NP_UW_LOAD_KERNEL */
	int paced;			/* compiles under the budget */
	int64_t budget_ns;		/* compile time allowed, < 0: overdrawn */
	uint64_t budget_at;		/* ... as of then */
	/* the walk's context */
	uint32_t pid;
	const uint8_t *stack;
	uint64_t stack_lo;
};

static const char *const stop_names[NMIPROF_UW_STOP_NR] = {
	[NMIPROF_UW_STOP_END] = "end",
	[NMIPROF_UW_STOP_NO_TABLE] = "no table",
	[NMIPROF_UW_STOP_UNMAPPED] = "unmapped",
	[NMIPROF_UW_STOP_DEPTH] = "depth",
	[NMIPROF_UW_STOP_WINDOW] = "stack window",
	[NMIPROF_UW_STOP_BAD_ROW] = "bad row",
};

static const char *const mark_names[NMIPROF_UW_STOP_NR] = {
	[NMIPROF_UW_STOP_END] = "[unwind: end]",
	[NMIPROF_UW_STOP_NO_TABLE] = "[unwind: no table]",
	[NMIPROF_UW_STOP_UNMAPPED] = "[unwind: unmapped]",
	[NMIPROF_UW_STOP_DEPTH] = "[unwind: depth]",
	[NMIPROF_UW_STOP_WINDOW] = "[unwind: stack window]",
	[NMIPROF_UW_STOP_BAD_ROW] = "[unwind: bad row]",
};

const char *np_uw_stop_name(int reason)
{
	return reason >= 0 && reason < NMIPROF_UW_STOP_NR ? stop_names[reason] : "?";
}

const char *np_uw_mark_name(uint64_t frame)
{
	uint64_t r = frame - NMIPROF_UW_MARK_BASE;

	if (frame < NMIPROF_UW_MARK_BASE || r >= NMIPROF_UW_STOP_NR)
		return NULL;
	return mark_names[r];
}

struct np_unwinder *np_unwinder_new(const struct np_unwinder_opts *o,
				    char *err, size_t errlen)
{
	struct np_unwinder *u = calloc(1, sizeof(*u));

	if (!u) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	u->maps = np_symbolizer_new_maps(err, errlen);
	if (!u->maps) {
		free(u);
		return NULL;
	}
	snprintf(u->cache_dir, sizeof(u->cache_dir), "%s",
		 o && o->cache_dir ? o->cache_dir : NP_UW_CACHE_DIR);
	snprintf(u->debug_root, sizeof(u->debug_root), "%s",
		 o && o->debug_root ? o->debug_root : "/usr/lib/debug");
	u->load_flags = o && o->for_kernel ? NP_UW_LOAD_KERNEL : 0;
	u->paced = o && o->paced;
	u->budget_ns = COMPILE_BURST_NS;
	u->budget_at = np_mono_ns();
	return u;
}

void np_unwinder_event(struct np_unwinder *u, const struct np_event *ev)
{
	np_symbolizer_event(u->maps, ev);
}

static struct np_uw_obj *obj_of(struct np_unwinder *u, const struct np_map *m)
{
	const struct np_dso *d = m->dso;
	struct np_uw_obj *o = NULL;
	struct obj_entry **pp, *e;
	char err[256];
	int fd, deferred = 0;
	uint64_t t0;

	if (!d || !d->dev || !d->path)
		return NULL;
	pp = &u->objs[(d->ino ^ d->dev * 31) % OBJ_BUCKETS];
	for (e = *pp; e; e = e->next)
		if (e->dev == d->dev && e->ino == d->ino &&
		    e->mtime == d->mtime && e->size == d->size)
			break;
	if (e && (!e->retry_ns || np_mono_ns() < e->retry_ns))
		return e->obj;
	if (!e) {
		e = calloc(1, sizeof(*e));
		if (!e)
			return NULL;
		e->dev = d->dev;
		e->ino = d->ino;
		e->mtime = d->mtime;
		e->size = d->size;
		e->next = *pp;
		*pp = e;
	}
	e->retry_ns = 0;
	fd = open(d->path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		char alt[128];

		snprintf(alt, sizeof(alt), "/proc/%u/map_files/%" PRIx64 "-%" PRIx64,
			 u->pid, m->start, m->end);
		fd = open(alt, O_RDONLY | O_CLOEXEC);
	}
	t0 = np_mono_ns();
	if (u->budget_at < t0) {
		u->budget_ns += (int64_t)((t0 - u->budget_at) / COMPILE_SHARE);
		if (u->budget_ns > (int64_t)COMPILE_BURST_NS)
			u->budget_ns = COMPILE_BURST_NS;
		u->budget_at = t0;
	}
	if (fd >= 0) {
		o = np_uw_obj_load(fd, d->path, u->cache_dir, u->debug_root,
				   u->load_flags | (!u->paced || u->budget_ns > 0 ?
						    NP_UW_LOAD_COMPILE : 0),
				   &deferred, err, sizeof(err));
		close(fd);
	}
	if (!o && deferred) {
		/* asked again once the budget has refilled some */
		u->st.deferred++;
		e->retry_ns = t0 + COMPILE_BURST_NS / 4 * COMPILE_SHARE;
		return NULL;
	}
	if (o && !o->cached) {
		uint64_t now = np_mono_ns();

		/*
		 * Charged in full, and the compile's own time earns nothing:
		 * counted from t0, each compile paid for a fifth of itself,
		 * and a system-wide start compiled every object back to back.
		 */
		u->budget_ns -= (int64_t)(now - t0);
		u->budget_at = now;
	}
	e->obj = o;
	if (e->obj) {
		u->st.tables++;
		u->st.table_bytes += e->obj->bytes;
		if (e->obj->cached)
			u->st.cache_hits++;
		else
			u->st.compiled++;
	} else {
		u->st.objects_without++;
	}
	return e->obj;
}

static int uw_find(void *ctx, __u64 ip, const struct nmiprof_uw_table **t,
		   __u64 *bias)
{
	struct np_unwinder *u = ctx;
	const struct np_map *m = np_symbolizer_map(u->maps, u->pid, ip);
	struct np_uw_obj *o;
	uint64_t off;

	if (!m)
		return NMIPROF_UW_STOP_UNMAPPED;
	o = obj_of(u, m);
	if (!o || o->head_only)
		return NMIPROF_UW_STOP_NO_TABLE;
	off = ip - m->start + m->pgoff;
	for (int i = 0; i < o->nr_segs; i++) {
		const struct np_uw_seg *s = &o->segs[i];

		if (off >= s->off && off - s->off < s->filesz) {
			*t = o->t;
			*bias = ip - (off - s->off + s->vaddr);
			return 0;
		}
	}
	return NMIPROF_UW_STOP_NO_TABLE;
}

static int uw_read(void *ctx, __u64 addr, __u64 *val)
{
	struct np_unwinder *u = ctx;

	memcpy(val, u->stack + (addr - u->stack_lo), 8);
	return 0;
}

static const struct np_uw_ops uw_ops = { .find = uw_find, .read = uw_read };

int np_unwinder_walk(struct np_unwinder *u, uint32_t pid,
		     const struct np_uw_regs *regs, const void *stack,
		     size_t stack_len, uint64_t *frames, unsigned int max,
		     unsigned int *nr)
{
	int why;

	u->pid = pid;
	u->stack = stack;
	u->stack_lo = regs->sp;
	/* __u64 is unsigned long long, uint64_t unsigned long: same bits */
	why = np_uw_walk(&uw_ops, u, regs, regs->sp, regs->sp + stack_len,
			 (__u64 *)frames, max, nr);
	u->st.walks++;
	u->st.stops[why]++;
	return why;
}

static int span_cmp(const void *a, const void *b)
{
	const struct np_uw_span *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

int np_unwinder_spans(struct np_unwinder *u, uint32_t pid,
		      struct np_uw_span *out, int max, int *deferred)
{
	size_t nr_maps;
	const struct np_map *maps = np_symbolizer_maps(u->maps, pid, &nr_maps);
	int n = 0;

	*deferred = 0;
	if (!maps)
		return -1;
	u->pid = pid;
	for (size_t i = 0; i < nr_maps && n < max; i++) {
		const struct np_map *m = &maps[i];
		uint64_t len = m->end - m->start, before = u->st.deferred;
		struct np_uw_obj *o = obj_of(u, m);
		int first = n;

		if (u->st.deferred != before)
			(*deferred)++;
		/* each executable segment the mapping shows, as uw_find() */
		for (int j = 0; o && j < o->nr_segs && n < max; j++) {
			const struct np_uw_seg *s = &o->segs[j];
			uint64_t a = s->off > m->pgoff ? s->off : m->pgoff;
			uint64_t b = s->off + s->filesz < m->pgoff + len ?
				     s->off + s->filesz : m->pgoff + len;

			if (a >= b)
				continue;
			out[n].start = m->start + (a - m->pgoff);
			out[n].end = m->start + (b - m->pgoff);
			out[n].bias = m->start - m->pgoff + s->off - s->vaddr;
			out[n++].obj = o;
		}
		if (n == first && n < max)
			out[n++] = (struct np_uw_span){ m->start, m->end, 0, NULL };
	}
	qsort(out, n, sizeof(*out), span_cmp);
	return n;
}

void np_unwinder_stats(const struct np_unwinder *u, struct np_unwinder_stats *st)
{
	*st = u->st;
}

void np_unwinder_free(struct np_unwinder *u)
{
	if (!u)
		return;
	for (int i = 0; i < OBJ_BUCKETS; i++) {
		while (u->objs[i]) {
			struct obj_entry *e = u->objs[i];

			u->objs[i] = e->next;
			np_uw_obj_free(e->obj);
			free(e);
		}
	}
	np_symbolizer_free(u->maps);
	free(u);
}
