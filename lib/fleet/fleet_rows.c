// SPDX-License-Identifier: GPL-2.0
/*
 * One stored slice as TabSeparated rows for the fleet tables, and the
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

/*
 * Same stack, same hash, on every host: the hash covers what the row
 * shows (kernel flag, object, function, offset of each frame, innermost
 * first) and nothing local (ids, addresses, pids).  64 bits: a collision
 * among 10^6 distinct stacks has odds of 3e-8.
 */
uint64_t np_fleet_stack_hash(const struct np_sym *const *frames,
			     unsigned int nr)
{
	uint64_t h = np_hash_u64(nr);

	for (unsigned int i = 0; i < nr; i++) {
		const struct np_sym *f = frames[i];
		const char *dso = f->dso ? f->dso : "[unknown]";
		const char *name = f->name ? f->name : "";
		uint64_t w[2] = { (uint64_t)!!f->kernel, f->offset };

		h = np_hash_bytes(dso, strlen(dso) + 1, h);
		h = np_hash_bytes(name, strlen(name) + 1, h);
		h = np_hash_bytes(w, sizeof(w), h);
	}
	return h;
}

/* Stack ids of the slice already hashed. */
struct seen_stack {
	uint64_t hash;
	uint32_t id;
};

struct rows_ctx {
	struct np_fleet_rows *r;
	const struct np_fleet_slice *s;
	np_fleet_known_fn known;
	void *known_arg;
	struct seen_stack *seen;
	uint32_t nr_seen, cap_seen;
	struct np_idx idx;		/* over seen[], by id */
	int oom;
};

static void add_new(struct np_fleet_rows *r, uint64_t h, int *oom)
{
	if (r->nr_new == r->cap_new) {
		size_t nc = r->cap_new ? r->cap_new * 2 : 256;
		uint64_t *n = realloc(r->new_stacks, nc * sizeof(*n));

		if (!n) {
			*oom = 1;
			return;
		}
		r->new_stacks = n;
		r->cap_new = nc;
	}
	r->new_stacks[r->nr_new++] = h;
}

static void stack_row(struct rows_ctx *c, uint64_t h,
		      const struct np_prof_sample *ps)
{
	struct np_buf *b = &c->r->stacks;

	np_ch_buf_printf(b, "%" PRIu64 "\t%" PRIu64 "\t[",
			 c->s->start_ns / NS_PER_SEC, h);
	for (unsigned int i = 0; i < ps->nr_frames; i++)
		np_ch_buf_printf(b, "%s%d", i ? "," : "",
				 ps->frames[i]->kernel ? 1 : 0);
	np_ch_buf_str(b, "]\t[");
	for (unsigned int i = 0; i < ps->nr_frames; i++) {
		if (i)
			np_buf_puts(b, ",", 1);
		np_ch_buf_sql_str(b, ps->frames[i]->dso ? ps->frames[i]->dso :
				  "[unknown]");
	}
	np_ch_buf_str(b, "]\t[");
	for (unsigned int i = 0; i < ps->nr_frames; i++) {
		if (i)
			np_buf_puts(b, ",", 1);
		np_ch_buf_sql_str(b, ps->frames[i]->name ? ps->frames[i]->name : "");
	}
	np_ch_buf_str(b, "]\t[");
	for (unsigned int i = 0; i < ps->nr_frames; i++)
		np_ch_buf_printf(b, "%s%" PRIu64, i ? "," : "",
				 ps->frames[i]->offset);
	np_ch_buf_str(b, "]\n");
}

static int rows_sample(const struct np_prof_sample *ps, void *arg)
{
	struct rows_ctx *c = arg;
	struct np_fleet_rows *r = c->r;
	uint32_t hk = (uint32_t)np_hash_u64(ps->stack);
	uint32_t pos = np_idx_first(&c->idx, hk), i;
	uint64_t h;

	while ((i = np_idx_next(&c->idx, hk, &pos)) != NP_IDX_NONE &&
	       c->seen[i].id != ps->stack)
		;
	if (i == NP_IDX_NONE) {
		if (c->nr_seen == NP_IDX_NONE - 1 ||
		    np_grow((void **)&c->seen, &c->cap_seen, c->nr_seen + 1ULL,
			    sizeof(*c->seen)) ||
		    np_idx_insert(&c->idx, hk, c->nr_seen)) {
			c->oom = 1;
			return -ENOMEM;
		}
		i = c->nr_seen++;
		h = np_fleet_stack_hash(ps->frames, ps->nr_frames);
		c->seen[i].id = ps->stack;
		c->seen[i].hash = h;
		if (!c->known || !c->known(c->known_arg, h)) {
			stack_row(c, h, ps);
			add_new(r, h, &c->oom);
		}
	}
	h = c->seen[i].hash;
	np_ch_buf_printf(&r->samples, "%" PRIu64 "\t", c->s->start_ns / NS_PER_SEC);
	np_ch_buf_tsv(&r->samples, c->s->host);
	np_ch_buf_printf(&r->samples, "\t%" PRIu64 "\t%u\t%u\t", c->s->batch,
			 ps->pid, ps->cpu);
	np_ch_buf_tsv(&r->samples, ps->comm ? ps->comm : "");
	np_ch_buf_printf(&r->samples, "\t%" PRIu64 "\t%" PRIu64 "\n", h,
			 ps->count);
	r->nr_samples_rows++;
	return c->oom ? -ENOMEM : 0;
}

static void slice_row(struct np_fleet_rows *r, const struct np_fleet_slice *s)
{
	struct np_buf *b = &r->slice;
	const char *p = s->labels ? s->labels : "";

	np_ch_buf_tsv(b, s->host);
	np_ch_buf_printf(b, "\t%" PRIu64 "\t%" PRIu64 "\t%" PRIu64 "\t%" PRIu64
			 "\t%" PRIu64 "\t[", s->start_ns, s->end_ns, s->batch,
			 s->samples, s->lost);
	for (int first = 1; *p; first = 0) {
		size_t n = strcspn(p, ",");
		char one[256];

		snprintf(one, sizeof(one), "%.*s", (int)n, p);
		if (!first)
			np_buf_puts(b, ",", 1);
		np_ch_buf_sql_str(b, one);
		p += n;
		if (*p == ',')
			p++;
	}
	np_ch_buf_str(b, "]\n");
}

void np_fleet_rows_reset(struct np_fleet_rows *r)
{
	r->samples.len = r->stacks.len = r->slice.len = 0;
	r->samples.oom = r->stacks.oom = r->slice.oom = 0;
	r->nr_new = 0;
	r->nr_samples_rows = 0;
}

int np_fleet_rows_build(struct np_fleet_rows *r, const struct np_agg *a,
			const struct np_fleet_slice *s,
			np_fleet_known_fn known, void *known_arg)
{
	struct rows_ctx c = { .r = r, .s = s, .known = known,
			      .known_arg = known_arg };
	int ret;

	ret = np_profile_foreach(a, rows_sample, &c);
	free(c.seen);
	np_idx_free(&c.idx);
	slice_row(r, s);
	if (ret || c.oom || r->samples.oom || r->stacks.oom || r->slice.oom)
		return -ENOMEM;
	return 0;
}

void np_fleet_rows_free(struct np_fleet_rows *r)
{
	np_buf_free(&r->samples);
	np_buf_free(&r->stacks);
	np_buf_free(&r->slice);
	free(r->new_stacks);
	memset(r, 0, sizeof(*r));
}

static int fleet_insert_one(struct np_ch *c, const char *table,
			    const char *cols, const struct np_buf *b,
			    char *err, size_t errlen)
{
	char sql[512];

	if (!b->len)
		return 0;
	snprintf(sql, sizeof(sql), "INSERT INTO %s.%s (%s) FORMAT TabSeparated",
		 np_ch_database(c), table, cols);
	return np_ch_exec(c, sql, b->p, b->len, NULL, err, errlen);
}

int np_fleet_insert(struct np_ch *c, const struct np_fleet_rows *r,
		    char *err, size_t errlen)
{
	/* Stacks first, the slice's row (the commit) last. */
	if (fleet_insert_one(c, "stacks", "time, stack, kernel, dsos, funcs, offsets",
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
