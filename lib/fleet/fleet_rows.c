// SPDX-License-Identifier: GPL-2.0
/*
 * One stored slice as RowBinary rows for the fleet tables, and the
 * statements that insert and check them.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "np_fleet.h"
#include "store.h"
#include "np_grow.h"
#include "np_hash.h"
#include "np_idx.h"

#define NS_PER_SEC	((uint64_t)1000000000)

/* Bytes of a frame's strings as hashed (with the NUL); bid 0: none. */
static void frame_lens(const struct np_sym *f, uint32_t len[3])
{
	len[0] = (uint32_t)strlen(f->dso ? f->dso : "[unknown]") + 1;
	len[1] = (uint32_t)strlen(f->name ? f->name : "") + 1;
	len[2] = f->build_id && *f->build_id ?
		 (uint32_t)strlen(f->build_id) + 1 : 0;
}

/*
 * Same frame, same hash, on every host: what the row shows (kernel flag,
 * object, function, offset, build-id) and nothing local (addresses,
 * pids).  No build-id: the hash of the first schema's frames.
 */
static uint64_t frame_hash_len(const struct np_sym *f, const uint32_t len[3],
			       uint64_t h)
{
	uint64_t w[2] = { (uint64_t)!!f->kernel, f->offset };

	h = np_hash_bytes(f->dso ? f->dso : "[unknown]", len[0], h);
	h = np_hash_bytes(f->name ? f->name : "", len[1], h);
	h = np_hash_bytes(w, sizeof(w), h);
	if (len[2])
		h = np_hash_bytes(f->build_id, len[2], h);
	return h;
}

static uint64_t frame_hash(const struct np_sym *f, uint64_t h)
{
	uint32_t len[3];

	frame_lens(f, len);
	return frame_hash_len(f, len, h);
}

/*
 * A stack's hash covers its frames' contents, innermost first, so it
 * is the same on every host.  64 bits: a collision among 10^6 distinct
 * stacks has odds of 3e-8.
 */
uint64_t np_fleet_stack_hash(const struct np_sym *const *frames,
			     unsigned int nr)
{
	uint64_t h = np_hash_u64(nr);

	for (unsigned int i = 0; i < nr; i++)
		h = frame_hash(frames[i], h);
	return h;
}

uint64_t np_fleet_frame_hash(const struct np_sym *f)
{
	return frame_hash(f, 0);
}

/* Frame id's string lengths, measured once while the memo holds. */
static const uint32_t *fmemo_lens(struct np_fleet_rows *r, uint32_t id,
				  const struct np_sym *f)
{
	struct np_fleet_fmemo *m = &r->fmemo[id];

	if (!m->len[0])
		frame_lens(f, m->len);
	return m->len;
}

/* RowBinary String of len bytes. */
static void rb_str_len(struct np_buf *b, const char *s, size_t len)
{
	np_put_var(b, len);
	np_put_bytes(b, s, len);
}

struct rows_ctx {
	struct np_fleet_rows *r;
	const struct np_fleet_slice *s;
	size_t host_len;
	np_fleet_known_fn known;
	void *known_arg;
	int oom;
};

/*
 * 1 if stack or frame h needs no row: the server has it (known, then
 * *stamp is set to known_gen), or the batch has it already; else it is
 * added to the batch's new ids.
 */
static int sent(struct rows_ctx *c, uint64_t h, uint64_t *stamp)
{
	struct np_fleet_rows *r = c->r;
	uint32_t hk, pos, i;

	if (r->known_gen && *stamp == r->known_gen)
		return 1;
	if (c->known && c->known(c->known_arg, h)) {
		*stamp = r->known_gen;
		return 1;
	}
	hk = (uint32_t)np_hash_u64(h);
	pos = np_idx_first(&r->new_idx, hk);
	while ((i = np_idx_next(&r->new_idx, hk, &pos)) != NP_IDX_NONE)
		if (r->new_ids[i] == h)
			return 1;
	if (r->nr_new >= NP_IDX_NONE - 1 ||
	    np_grow((void **)&r->new_ids, &r->cap_new, r->nr_new + 1ULL,
		    sizeof(*r->new_ids)) ||
	    np_idx_insert(&r->new_idx, hk, (uint32_t)r->nr_new)) {
		c->oom = 1;
		return 1;
	}
	r->new_ids[r->nr_new++] = h;
	return 0;
}

/* RowBinary: a stack's row and the rows of its frames not sent yet. */
static void stack_rows(struct rows_ctx *c, uint64_t h,
		       const struct np_sym *const *frames, unsigned int nr)
{
	struct np_buf *b = &c->r->stacks, *fb = &c->r->frames;
	uint32_t t = (uint32_t)(c->s->start_ns / NS_PER_SEC);

	np_ch_rb_u32(b, t);
	np_ch_rb_u64(b, h);
	np_put_var(b, nr);
	for (unsigned int i = 0; i < nr; i++) {
		const struct np_sym *f = frames[i];
		uint32_t id = c->r->walk_ids[i];
		struct np_fleet_fmemo *m = &c->r->fmemo[id];
		const uint32_t *len = fmemo_lens(c->r, id, f);
		uint64_t fh = m->hash ? m->hash :
			      (m->hash = frame_hash_len(f, len, 0));

		np_ch_rb_u64(b, fh);
		if (sent(c, fh, &m->known))
			continue;
		np_ch_rb_u32(fb, t);
		np_ch_rb_u64(fb, fh);
		np_ch_rb_u8(fb, f->kernel ? 1 : 0);
		rb_str_len(fb, f->dso ? f->dso : "[unknown]", len[0] - 1);
		rb_str_len(fb, f->name ? f->name : "", len[1] - 1);
		np_ch_rb_u64(fb, f->offset);
		if (c->r->build_ids)
			rb_str_len(fb, len[2] ? f->build_id : "",
				   len[2] ? len[2] - 1 : 0);
	}
}

/* Walk stack id into r->walk and its frame ids into r->walk_ids (one
 * pass: a parent costs a binary search at a branch); the number of
 * frames, or -1 (ENOMEM). */
static int walk(struct np_fleet_rows *r, const struct np_stacktab *st,
		uint32_t stack)
{
	unsigned int n = 0;
	uint32_t parent, frame;

	while (!np_stacktab_node(st, stack, &parent, &frame)) {
		if (n == r->cap_walk) {
			unsigned int c = n ? n * 2 : 64;
			const struct np_sym **w = realloc(r->walk, c * sizeof(*w));
			uint32_t *ids;

			if (!w)
				return -1;
			r->walk = w;
			ids = realloc(r->walk_ids, c * sizeof(*ids));
			if (!ids)
				return -1;
			r->walk_ids = ids;
			r->cap_walk = c;
		}
		r->walk_ids[n] = frame;
		r->walk[n++] = np_stacktab_frame_get(st, frame);
		stack = parent;
	}
	return (int)n;
}

/*
 * The content hash of stack id, remembered while a's stack table keeps
 * its ids and its build-ids: the same stacks come back slice after
 * slice, so a stack is walked and hashed once.  Bounded: forgotten
 * past NP_FLEET_MEMO_MAX.
 */
#define NP_FLEET_MEMO_MAX	(1U << 20)

static struct np_fleet_memo *memo_get(struct np_fleet_rows *r,
				      const struct np_stacktab *st,
				      uint32_t stack, int *walked)
{
	uint32_t hk = (uint32_t)np_hash_u64(stack);
	uint32_t pos = np_idx_first(&r->memo_idx, hk), i;
	uint64_t h;
	int n;

	while ((i = np_idx_next(&r->memo_idx, hk, &pos)) != NP_IDX_NONE)
		if (r->memo[i].stack == stack) {
			*walked = -1;
			return &r->memo[i];
		}
	n = walk(r, st, stack);
	if (n < 0)
		return NULL;
	*walked = n;
	if (r->nr_memo >= NP_FLEET_MEMO_MAX) {
		r->nr_memo = 0;
		np_idx_clear(&r->memo_idx);
	}
	if (np_grow((void **)&r->memo, &r->cap_memo, r->nr_memo + 1ULL,
		    sizeof(*r->memo)) ||
	    np_idx_insert(&r->memo_idx, hk, r->nr_memo))
		return NULL;
	h = np_hash_u64((uint64_t)n);	/* np_fleet_stack_hash's */
	for (int j = 0; j < n; j++)
		h = frame_hash_len(r->walk[j],
				   fmemo_lens(r, r->walk_ids[j], r->walk[j]), h);
	r->memo[r->nr_memo] = (struct np_fleet_memo){ .stack = stack, .hash = h };
	return &r->memo[r->nr_memo++];
}

static int rows_entry(struct rows_ctx *c, const struct np_stacktab *st,
		      const struct np_agg_entry *e)
{
	struct np_fleet_rows *r = c->r;
	struct np_buf *b = &r->samples;
	const char *comm = np_stacktab_str_get(st, e->comm);
	struct np_fleet_memo *m;
	uint64_t h;
	int n;

	m = memo_get(r, st, e->stack, &n);
	if (!m)
		return -ENOMEM;
	h = m->hash;
	if (!sent(c, h, &m->known)) {
		if (n < 0 && (n = walk(r, st, e->stack)) < 0)
			return -ENOMEM;
		stack_rows(c, h, r->walk, (unsigned int)n);
	}
	np_ch_rb_u32(b, (uint32_t)(c->s->start_ns / NS_PER_SEC));
	rb_str_len(b, c->s->host, c->host_len);
	np_ch_rb_u64(b, c->s->batch);
	np_ch_rb_u32(b, e->pid);
	np_ch_rb_u32(b, e->cpu);
	np_ch_rb_str(b, comm ? comm : "");
	np_ch_rb_u64(b, h);
	np_ch_rb_u64(b, e->count);
	r->nr_samples_rows++;
	return c->oom ? -ENOMEM : 0;
}

static void slice_row(struct np_fleet_rows *r, const struct np_fleet_slice *s)
{
	struct np_buf *b = &r->slice;
	const char *p = s->labels ? s->labels : "";
	uint64_t n = 0;

	np_ch_rb_str(b, s->host);
	np_ch_rb_u64(b, s->start_ns);
	np_ch_rb_u64(b, s->end_ns);
	np_ch_rb_u64(b, s->batch);
	np_ch_rb_u64(b, s->samples);
	np_ch_rb_u64(b, s->lost);
	for (const char *q = p; *q; n++) {
		q += strcspn(q, ",");
		if (*q == ',')
			q++;
	}
	np_put_var(b, n);
	while (*p) {
		size_t len = strcspn(p, ",");

		np_put_var(b, len);
		np_put_bytes(b, p, len);
		p += len;
		if (*p == ',')
			p++;
	}
}

void np_fleet_rows_reset(struct np_fleet_rows *r)
{
	r->samples.len = r->stacks.len = r->frames.len = r->slice.len = 0;
	r->samples.oom = r->stacks.oom = r->frames.oom = r->slice.oom = 0;
	r->nr_new = 0;
	np_idx_clear(&r->new_idx);
	r->nr_samples_rows = 0;
}

int np_fleet_rows_build(struct np_fleet_rows *r, const struct np_agg *a,
			const struct np_fleet_slice *s,
			np_fleet_known_fn known, void *known_arg)
{
	struct rows_ctx c = { .r = r, .s = s, .host_len = strlen(s->host),
			      .known = known, .known_arg = known_arg };
	const struct np_stacktab *st = np_agg_stacktab(a);
	const struct np_agg_entry *ents;
	uint32_t nr;
	int ret = 0;

	ents = np_agg_entries(a, &nr);
	if (r->memo_gen != np_stacktab_gen(st) ||
	    r->memo_bids != np_stacktab_build_id_changes(st)) {
		r->memo_gen = np_stacktab_gen(st);
		r->memo_bids = np_stacktab_build_id_changes(st);
		r->nr_memo = 0;
		np_idx_clear(&r->memo_idx);
		if (r->fmemo)
			memset(r->fmemo, 0, r->cap_fmemo * sizeof(*r->fmemo));
	}
	if (np_stacktab_nr_frames(st) > r->cap_fmemo) {
		uint32_t old = r->cap_fmemo;

		if (np_grow((void **)&r->fmemo, &r->cap_fmemo,
			    np_stacktab_nr_frames(st), sizeof(*r->fmemo)))
			return -ENOMEM;
		memset(r->fmemo + old, 0, (r->cap_fmemo - old) * sizeof(*r->fmemo));
	}
	for (uint32_t i = 0; i < nr && !ret; i++)
		if (ents[i].count)
			ret = rows_entry(&c, st, &ents[i]);
	slice_row(r, s);
	if (ret || c.oom || r->samples.oom || r->stacks.oom ||
	    r->frames.oom || r->slice.oom)
		return -ENOMEM;
	return 0;
}

void np_fleet_rows_free(struct np_fleet_rows *r)
{
	np_buf_free(&r->samples);
	np_buf_free(&r->stacks);
	np_buf_free(&r->frames);
	np_buf_free(&r->slice);
	free(r->new_ids);
	np_idx_free(&r->new_idx);
	free(r->memo);
	np_idx_free(&r->memo_idx);
	free(r->fmemo);
	free(r->walk);
	free(r->walk_ids);
	memset(r, 0, sizeof(*r));
}

static int fleet_insert_one(struct np_ch *c, const char *table,
			    const char *cols, const struct np_buf *b,
			    char *err, size_t errlen)
{
	char sql[512];

	if (!b->len)
		return 0;
	snprintf(sql, sizeof(sql), "INSERT INTO %s.%s (%s) FORMAT RowBinary",
		 np_ch_database(c), table, cols);
	return np_ch_exec(c, sql, b->p, b->len, NULL, err, errlen);
}

int np_fleet_insert(struct np_ch *c, const struct np_fleet_rows *r,
		    char *err, size_t errlen)
{
	/* Frames, stacks, samples, the slice's row (the commit) last. */
	if (fleet_insert_one(c, "frames", r->build_ids ?
			     "time, frame, kernel, dso, func, off, build_id" :
			     "time, frame, kernel, dso, func, off",
			     &r->frames, err, errlen) ||
	    fleet_insert_one(c, "stack_frames", "time, stack, frames",
			     &r->stacks, err, errlen) ||
	    fleet_insert_one(c, "samples", "time, host, batch, pid, cpu, comm, stack, count",
			     &r->samples, err, errlen) ||
	    fleet_insert_one(c, "slices", "host, start, end, batch, samples, lost, labels",
			     &r->slice, err, errlen))
		return -1;
	return 0;
}

int np_fleet_committed(struct np_ch *c, const char *host, uint64_t start_ns,
		       char *err, size_t errlen)
{
	struct np_buf sql = { 0 }, out = { 0 };
	int ret;

	np_ch_buf_printf(&sql, "SELECT count() FROM %s.slices WHERE host = ",
			 np_ch_database(c));
	np_ch_buf_sql_str(&sql, host);
	np_ch_buf_printf(&sql, " AND start = %" PRIu64 " FORMAT TabSeparated",
			 start_ns);
	if (sql.oom) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	ret = np_ch_exec(c, np_buf_str(&sql), NULL, 0, &out, err, errlen);
	if (!ret)
		ret = out.p && strtoull(np_buf_str(&out), NULL, 10) > 0;
	np_buf_free(&sql);
	np_buf_free(&out);
	return ret;
}
