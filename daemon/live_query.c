// SPDX-License-Identifier: GPL-2.0
/*
 * The live view's queries (live.h): top and stacks over the last seconds
 * of the ring live.c keeps.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "live.h"
#include "live_impl.h"
#include "np_grow.h"
#include "np_idx.h"

/* ---- queries ------------------------------------------------------- */

/*
 * A result row: the fields of the key that matter are set, the others
 * zero.  key.stack is a stack id, or for top sort=sym the innermost
 * frame's id.
 */
struct npd_live_row {
	uint64_t count;
	struct npd_live_ent key;	/* key.count unused */
};

struct npd_live_rows {
	struct npd_live_row *v;
	uint32_t cap, nr;
	struct np_idx idx;	/* over v[] */
};

static int npd_rows_add(struct npd_live_rows *r, const struct npd_live_ent *key,
			uint64_t count)
{
	uint32_t h = npd_live_hash(key->stack, key->pid, key->cpu, key->comm);
	uint32_t pos = np_idx_first(&r->idx, h), i;
	struct npd_live_row *row;

	while ((i = np_idx_next(&r->idx, h, &pos)) != NP_IDX_NONE) {
		row = &r->v[i];
		if (row->key.stack == key->stack && row->key.pid == key->pid &&
		    row->key.cpu == key->cpu && row->key.comm == key->comm) {
			row->count += count;
			return 0;
		}
	}
	if (r->nr == NP_IDX_NONE - 1 ||
	    np_grow((void **)&r->v, &r->cap, r->nr + 1ULL, sizeof(*r->v)) ||
	    np_idx_insert(&r->idx, h, r->nr))
		return -ENOMEM;
	r->v[r->nr++] = (struct npd_live_row){ .count = count, .key = *key };
	return 0;
}

static void npd_rows_free(struct npd_live_rows *r)
{
	free(r->v);
	np_idx_free(&r->idx);
}

static int npd_row_cmp(const void *a, const void *b)
{
	const struct npd_live_row *x = a, *y = b;

	/* Most samples first; ties in a fixed order so views do not flicker. */
	if (x->count != y->count)
		return x->count < y->count ? 1 : -1;
	if (x->key.stack != y->key.stack)
		return x->key.stack < y->key.stack ? -1 : 1;
	if (x->key.pid != y->key.pid)
		return x->key.pid < y->key.pid ? -1 : 1;
	if (x->key.cpu != y->key.cpu)
		return x->key.cpu < y->key.cpu ? -1 : 1;
	if (x->key.comm != y->key.comm)
		return x->key.comm < y->key.comm ? -1 : 1;
	return 0;
}

static int npd_live_match(const struct npd_live *l, int64_t pid, int32_t cpu,
			  const char *comm, const struct npd_live_ent *e)
{
	if (pid >= 0 && e->pid != (uint64_t)pid)
		return 0;
	if (cpu >= 0 && e->cpu != (uint32_t)cpu)
		return 0;
	if (comm[0] && strncmp(np_stacktab_str_get(l->frames, e->comm), comm,
			       NMIPROF_COMM_LEN))
		return 0;
	return 1;
}

/*
 * Visit every counted entry of the seconds (now_sec - secs, now_sec]
 * that passes the filters, adding the window's totals to the counters.
 * Returns the number of seconds covered, or -ENOMEM from fn.
 */
typedef int (*npd_live_visit_fn)(const struct npd_live_ent *e, void *arg);

static int64_t npd_live_window(struct npd_live *l, uint64_t now_sec,
			       uint32_t secs, int64_t pid, int32_t cpu,
			       const char *comm, uint64_t *samples,
			       uint64_t *lost, uint64_t *matched,
			       npd_live_visit_fn fn, void *arg)
{
	uint64_t first = now_sec + 1 > secs ? now_sec + 1 - secs : 0;
	uint64_t oldest = UINT64_MAX;

	if (now_sec + 1 > l->nslots && first < now_sec + 1 - l->nslots)
		first = now_sec + 1 - l->nslots;
	for (uint32_t i = 0; i < l->nslots; i++) {
		const struct npd_live_slot *s = &l->slots[i];

		if (s->sec == UINT64_MAX || s->sec < first || s->sec > now_sec)
			continue;
		if (s->sec < oldest)
			oldest = s->sec;
		*samples += s->samples;
		*lost += s->lost;
		for (uint32_t j = 0; j < s->nr; j++) {
			const struct npd_live_ent *e = &s->tab[j];

			if (!npd_live_match(l, pid, cpu, comm, e))
				continue;
			*matched += e->count;
			if (fn(e, arg))
				return -ENOMEM;
		}
	}
	return oldest == UINT64_MAX ? 0 : (int64_t)(now_sec - oldest + 1);
}

/* The rows of a table, sorted, in one malloc'ed array (NULL if none). */
static int npd_rows_sorted(struct npd_live_rows *rows, struct npd_live_row **out)
{
	*out = NULL;
	if (!rows->nr)
		return 0;
	*out = malloc(rows->nr * sizeof(**out));
	if (!*out)
		return -ENOMEM;
	memcpy(*out, rows->v, rows->nr * sizeof(**out));
	qsort(*out, rows->nr, sizeof(**out), npd_row_cmp);
	return 0;
}

/* ---- top: one row per function, process or command ----------------- */

struct npd_top_ctx {
	struct npd_live *l;
	const struct np_ctl_top_query *q;
	struct npd_live_rows rows;
};

static int npd_top_visit(const struct npd_live_ent *e, void *arg)
{
	struct npd_top_ctx *c = arg;
	struct npd_live_ent key = { 0 };
	uint32_t parent;

	switch (c->q->sort) {
	case NP_CTL_SORT_SYM:
		/* the innermost frame: the stack's own node */
		if (np_stacktab_node(c->l->frames, e->stack, &parent, &key.stack))
			return 0;
		break;
	case NP_CTL_SORT_PID:
		key.pid = e->pid;
		/* pid reuse and exec: a pid row is (pid, comm) */
		key.comm = e->comm;
		break;
	case NP_CTL_SORT_COMM:
		key.comm = e->comm;
		break;
	}
	return npd_rows_add(&c->rows, &key, e->count);
}

static int npd_live_emit(struct npd_live *l, const struct np_ctl_top_query *q,
			 const struct npd_live_row *row, struct np_ctl_top_entry *e)
{
	memset(e, 0, sizeof(*e));
	e->samples = row->count;
	e->pid = -1;
	switch (q->sort) {
	case NP_CTL_SORT_SYM: {
		const struct np_sym *f = np_stacktab_frame_get(l->frames, row->key.stack);

		char unnamed[NP_SYM_UNNAMED_MAX];

		e->kernel = f->kernel;
		e->dso = strdup(f->dso ? f->dso : "[unknown]");
		if (!e->dso)
			return -ENOMEM;
		/* unnamed code named as everywhere: object+0xoffset */
		e->sym = strdup(f->name ? f->name :
				np_sym_unnamed(unnamed, sizeof(unnamed), f->dso,
					       f->offset));
		if (!e->sym)
			return -ENOMEM;
		break;
	}
	case NP_CTL_SORT_PID:
		e->pid = row->key.pid;
		/* a pid row also names its command */
		__attribute__((fallthrough));
	case NP_CTL_SORT_COMM:
		snprintf(e->comm, sizeof(e->comm), "%s",
			 np_stacktab_str_get(l->frames, row->key.comm));
		break;
	}
	return 0;
}

int npd_live_top(struct npd_live *l, uint64_t now_sec,
		 const struct np_ctl_top_query *q, struct np_ctl_top *t)
{
	struct npd_top_ctx c = { .l = l, .q = q };
	struct npd_live_row *v = NULL;
	int64_t secs;
	uint32_t nr;

	memset(t, 0, sizeof(*t));
	secs = npd_live_window(l, now_sec, q->secs, q->pid, q->cpu, q->comm,
			       &t->samples, &t->lost, &t->matched,
			       npd_top_visit, &c);
	if (secs < 0 || npd_rows_sorted(&c.rows, &v))
		goto nomem;
	t->secs = (uint32_t)secs;
	nr = c.rows.nr < q->n ? c.rows.nr : q->n;
	if (nr) {
		t->e = calloc(nr, sizeof(*t->e));
		if (!t->e)
			goto nomem;
	}
	for (uint32_t i = 0; i < nr; i++) {
		t->nr = i + 1;
		if (npd_live_emit(l, q, &v[i], &t->e[i]))
			goto nomem;
	}
	free(v);
	npd_rows_free(&c.rows);
	return 0;
nomem:
	free(v);
	npd_rows_free(&c.rows);
	np_ctl_top_free(t);
	return -ENOMEM;
}

/* ---- stacks: whole symbolized stacks per (pid, comm, cpu) ---------- */

static int npd_stacks_visit(const struct npd_live_ent *e, void *arg)
{
	struct npd_live_ent key = *e;

	key.count = 0;
	return npd_rows_add(arg, &key, e->count);
}

/*
 * Whether the stack with leaf node has kernel frames, user frames.  A
 * stack's kernel frames come before its user frames, innermost first, so
 * the walk stops at the first user frame.
 */
static void npd_stack_kinds(struct npd_live *l, uint32_t node,
			    int *kernel, int *user)
{
	uint32_t depth = np_stacktab_depth(l->frames, node), parent, f;

	*kernel = *user = 0;
	while (depth-- && !np_stacktab_node(l->frames, node, &parent, &f)) {
		if (!np_stacktab_frame_get(l->frames, f)->kernel) {
			*user = 1;
			return;
		}
		*kernel = 1;
		node = parent;
	}
}

/* Wire index of frame id f, numbering frames in order of first use. */
static int npd_stacks_frame(struct npd_live *l, struct np_ctl_stacks *t,
			    uint32_t *map, uint32_t f, uint32_t *out)
{
	const struct np_sym *sym;
	struct np_ctl_frame *fr;

	if (map[f] != UINT32_MAX) {
		*out = map[f];
		return 0;
	}
	sym = np_stacktab_frame_get(l->frames, f);
	fr = &t->f[t->nr_frames];
	fr->kernel = sym->kernel;
	fr->dso = strdup(sym->dso ? sym->dso : "[unknown]");
	if (!fr->dso || (sym->name && !(fr->sym = strdup(sym->name))))
		return -ENOMEM;
	fr->offset = sym->name ? 0 : sym->offset;
	*out = map[f] = t->nr_frames++;
	return 0;
}

int npd_live_stacks(struct npd_live *l, uint64_t now_sec,
		    const struct np_ctl_stacks_query *q, struct np_ctl_stacks *t)
{
	struct npd_live_rows rows = { 0 };
	struct npd_live_row *v = NULL;
	uint32_t *map = NULL, nframes = np_stacktab_nr_frames(l->frames);
	size_t nfr = 0;
	int64_t secs;
	uint32_t nr;

	memset(t, 0, sizeof(*t));
	secs = npd_live_window(l, now_sec, q->secs, q->pid, q->cpu, q->comm,
			       &t->samples, &t->lost, &t->matched,
			       npd_stacks_visit, &rows);
	if (secs < 0 || npd_rows_sorted(&rows, &v))
		goto nomem;
	t->secs = (uint32_t)secs;
	nr = rows.nr < q->n ? rows.nr : q->n;
	/* What the bound leaves out is still counted, as one remainder. */
	t->other_stacks = rows.nr - nr;
	t->other_kinds = 1;
	for (uint32_t i = nr; i < rows.nr; i++) {
		int kernel, user;

		npd_stack_kinds(l, v[i].key.stack, &kernel, &user);
		t->other += v[i].count;
		t->other_kernel += kernel ? v[i].count : 0;
		t->other_user += user ? v[i].count : 0;
	}
	for (uint32_t i = 0; i < nr; i++)
		nfr += np_stacktab_depth(l->frames, v[i].key.stack);
	if (nr) {
		t->s = calloc(nr, sizeof(*t->s));
		t->f = calloc(nfr < nframes ? nfr : nframes, sizeof(*t->f));
		map = malloc((size_t)nframes * sizeof(*map));
		if (!t->s || !t->f || !map)
			goto nomem;
		memset(map, 0xff, (size_t)nframes * sizeof(*map));
	}
	for (uint32_t i = 0; i < nr; i++) {
		struct np_ctl_stack *st = &t->s[i];
		uint32_t node = v[i].key.stack, parent, f, depth;

		t->nr = i + 1;
		st->samples = v[i].count;
		st->pid = v[i].key.pid;
		st->cpu = (int32_t)v[i].key.cpu;
		snprintf(st->comm, sizeof(st->comm), "%s",
			 np_stacktab_str_get(l->frames, v[i].key.comm));
		depth = np_stacktab_depth(l->frames, node);
		st->frames = calloc(depth ? depth : 1, sizeof(*st->frames));
		if (!st->frames)
			goto nomem;
		/* The node chain from a stack's id is innermost first. */
		while (st->nr < depth && !np_stacktab_node(l->frames, node, &parent, &f)) {
			if (npd_stacks_frame(l, t, map, f, &st->frames[st->nr]))
				goto nomem;
			st->nr++;
			node = parent;
		}
	}
	free(map);
	free(v);
	npd_rows_free(&rows);
	return 0;
nomem:
	free(map);
	free(v);
	npd_rows_free(&rows);
	np_ctl_stacks_free(t);
	return -ENOMEM;
}
