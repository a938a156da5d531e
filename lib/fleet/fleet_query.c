// SPDX-License-Identifier: GPL-2.0
/*
 * The queries behind `nmiprof report/export --cluster`.  The server does
 * the aggregation (GROUP BY over every shard through the Distributed
 * tables); the client gets one row per distinct key and the frames of
 * the stacks those rows name.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "np_fleet.h"
#include "np_grow.h"
#include "np_hash.h"
#include "np_idx.h"
#include "symbolizer.h"

#define NS_PER_SEC	((uint64_t)1000000000)

void np_fleet_filter_init(struct np_fleet_filter *f)
{
	memset(f, 0, sizeof(*f));
	f->pid = -1;
	f->cpu = -1;
}

/* A shell-style glob (* and ?) as a LIKE pattern. */
static void like_pattern(struct np_buf *b, const char *glob)
{
	struct np_buf p = { 0 };

	for (; *glob; glob++) {
		switch (*glob) {
		case '*': np_buf_puts(&p, "%", 1); break;
		case '?': np_buf_puts(&p, "_", 1); break;
		case '%': case '_': case '\\':
			np_buf_puts(&p, "\\", 1);
			/* fall through */
		default: np_buf_puts(&p, glob, 1); break;
		}
	}
	np_ch_buf_sql_str(b, p.p ? np_buf_str(&p) : "");
	np_buf_free(&p);
}

static void host_where(struct np_buf *b, const struct np_fleet_filter *f)
{
	for (unsigned int i = 0; i < f->nr_hosts; i++) {
		np_ch_buf_str(b, i ? " OR host LIKE " : " AND (host LIKE ");
		like_pattern(b, f->hosts[i]);
	}
	if (f->nr_hosts)
		np_ch_buf_str(b, ")");
}

/* The conditions on slices: time overlap, hosts, labels. */
static void slice_where(struct np_buf *b, const struct np_fleet_filter *f)
{
	np_ch_buf_str(b, " WHERE 1");
	if (f->since_ns)
		np_ch_buf_printf(b, " AND end >= %" PRIu64, f->since_ns);
	if (f->until_ns)
		np_ch_buf_printf(b, " AND start <= %" PRIu64, f->until_ns);
	host_where(b, f);
	for (unsigned int i = 0; i < f->nr_labels; i++) {
		np_ch_buf_str(b, " AND has(labels, ");
		np_ch_buf_sql_str(b, f->labels[i]);
		np_ch_buf_str(b, ")");
	}
}

/*
 * Each (host, day) whose per-day rollup (samples_day, `nmiprof cluster
 * rollup`) covers exactly the committed slices the filter selects, with
 * that rollup's id: the same number of slices and the same sum of their
 * batches' hashes (batches only come, or replace a slice's with a
 * smaller one, so a rollup made before a change never matches again).
 * On each shard, of its own hosts, as samples_where().
 */
static void rolled_sql(struct np_buf *b, const char *db,
		       const struct np_fleet_filter *f)
{
	np_ch_buf_str(b, "SELECT host, day, r FROM (SELECT host, day, count() AS slices,"
		      " sum(cityHash64(bt)) AS checksum FROM (SELECT host, start,"
		      " any(day) AS day, min(batch) AS bt FROM ");
	np_ch_buf_printf(b, "%s.slices_local", db);
	slice_where(b, f);
	np_ch_buf_printf(b, " GROUP BY host, start) GROUP BY host, day) ANY INNER JOIN"
			 " (SELECT host, day, slices, checksum, min(rollup) AS r FROM"
			 " %s.rollups_local GROUP BY host, day, slices, checksum)"
			 " USING host, day, slices, checksum", db);
}

/* The filters of samples and samples_day, after their own conditions. */
static void row_where(struct np_buf *b, const struct np_fleet_filter *f)
{
	/* The same hosts again: the sort key (host, ...) skips the others. */
	host_where(b, f);
	/* Partition pruning: no slice is longer than a day. */
	if (f->since_ns)
		np_ch_buf_printf(b, " AND day >= toDate(toDateTime(%" PRIu64 "))",
				 f->since_ns / NS_PER_SEC > 86400 ?
				 f->since_ns / NS_PER_SEC - 86400 : 0);
	if (f->until_ns)
		np_ch_buf_printf(b, " AND day <= toDate(toDateTime(%" PRIu64 "))",
				 f->until_ns / NS_PER_SEC);
	if (f->pid >= 0)
		np_ch_buf_printf(b, " AND pid = %" PRId64, f->pid);
	if (f->comm) {
		np_ch_buf_str(b, " AND comm = ");
		np_ch_buf_sql_str(b, f->comm);
	}
}

/*
 * How samples_grouped() reads the rollups: none, rolled_sql() on each
 * shard, or the table ROLLED_TABLE sent with the query (rolled_table()),
 * with the samples of the slices it does not cover or (ROLLED_ALL) none.
 */
enum { ROLLED_NONE, ROLLED_SQL, ROLLED_SENT, ROLLED_ALL };
#define ROLLED_TABLE		"rolled"
#define ROLLED_STRUCTURE	"host String, day Date, r UInt64, slices UInt64"

/*
 * Samples of the first committed batch of each slice, but those of the
 * rolled-up (host, day)s if rolled.  The subquery reads the shard's own
 * slices_local: a host's slices and samples share a shard (same
 * sharding key), and each shard answers for its hosts.
 */
static void samples_where(struct np_buf *b, const char *db,
			  const struct np_fleet_filter *f, int rolled)
{
	np_ch_buf_printf(b, " WHERE batch IN (SELECT min(batch) FROM %s.slices_local",
			 db);
	slice_where(b, f);
	if (rolled == ROLLED_SQL) {
		np_ch_buf_str(b, " AND (host, day) NOT IN (SELECT host, day FROM (");
		rolled_sql(b, db, f);
		np_ch_buf_str(b, "))");
	} else if (rolled) {
		np_ch_buf_str(b, " AND (host, day) NOT IN (SELECT host, day FROM " ROLLED_TABLE ")");
	}
	np_ch_buf_str(b, " GROUP BY host, start)");
	row_where(b, f);
	if (f->until_ns)
		np_ch_buf_printf(b, " AND time <= toDateTime(%" PRIu64 ")",
				 f->until_ns / NS_PER_SEC);
	if (f->cpu >= 0)
		np_ch_buf_printf(b, " AND cpu = %d", f->cpu);
}

/* 1 if the server has the per-day rollups (rollups, samples_day), 0, -1. */
static int has_rollups(struct np_ch *c, const struct np_fleet_filter *f,
		       char *err, size_t errlen)
{
	/* a rollup has no cpu */
	if (f->cpu >= 0)
		return 0;
	return np_fleet_has_column(c, "rollups", "checksum", err, errlen);
}

/*
 * "SELECT sel FROM samples WHERE ... GROUP BY key", each arm summed on
 * the shards.  With rolled, the samples of the rolled-up (host, day)s
 * come from their rollups (21x fewer rows in the bench): two arms, each
 * grouped by key AS k, and outer (over sel's aliases) merges them.
 * extra: more conditions for both arms.
 */
static void samples_grouped(struct np_buf *b, const char *db,
			    const struct np_fleet_filter *f, int rolled,
			    const char *key, const char *sel, const char *outer,
			    const char *extra)
{
	if (!rolled) {
		np_ch_buf_printf(b, "SELECT %s FROM %s.samples", sel, db);
		samples_where(b, db, f, 0);
		np_ch_buf_printf(b, "%s GROUP BY %s", extra, key);
		return;
	}
	np_ch_buf_printf(b, "SELECT %s FROM (", outer);
	if (rolled != ROLLED_ALL) {
		np_ch_buf_printf(b, "SELECT %s AS k, %s FROM %s.samples", key, sel, db);
		samples_where(b, db, f, rolled);
		np_ch_buf_printf(b, "%s GROUP BY k UNION ALL ", extra);
	}
	np_ch_buf_printf(b, "SELECT %s AS k, %s FROM %s.samples_day WHERE rollup IN",
			 key, sel, db);
	if (rolled == ROLLED_SQL) {
		np_ch_buf_str(b, " (SELECT r FROM (");
		rolled_sql(b, db, f);
		np_ch_buf_str(b, "))");
	} else {
		np_ch_buf_str(b, " (SELECT r FROM " ROLLED_TABLE ")");
	}
	row_where(b, f);
	np_ch_buf_printf(b, "%s GROUP BY k) GROUP BY k", extra);
}

/* Split the next TabSeparated line into at most n fields, unescaped. */
static int next_row(char **cur, char **fields, int n)
{
	char *line = *cur, *end;
	int i = 0;

	if (!line || !*line)
		return 0;
	end = strchr(line, '\n');
	if (end)
		*end++ = 0;
	*cur = end;
	while (i < n) {
		char *tab = strchr(line, '\t');

		fields[i++] = line;
		if (!tab)
			break;
		*tab = 0;
		line = tab + 1;
	}
	for (int j = 0; j < i; j++)
		np_ch_tsv_unescape(fields[j]);
	return i;
}

static int run(struct np_ch *c, struct np_buf *sql, struct np_buf *out,
	       char *err, size_t errlen)
{
	char msg[512];

	if (sql->oom) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	if (np_ch_exec(c, np_buf_str(sql), NULL, 0, out, msg, sizeof(msg))) {
		snprintf(err, errlen, "%s: %s", np_ch_url(c), msg);
		return -1;
	}
	return 0;
}

static int symbol_where(struct np_ch *c, struct np_buf *b, const char *symbol,
			char *err, size_t errlen);

/* 1 if samples has the column comm_hash, 0 if not, -1. */
static int has_comm_hash(struct np_ch *c, char *err, size_t errlen)
{
	return np_fleet_has_column(c, "samples", "comm_hash", err, errlen);
}

int np_fleet_query_counts(struct np_ch *c, const struct np_fleet_filter *f,
			  np_fleet_count_fn fn, void *arg,
			  char *err, size_t errlen)
{
	const char *db = np_ch_database(c);
	struct np_buf sql = { 0 }, out = { 0 }, key = { 0 }, sel = { 0 }, extra = { 0 };
	char *cur, *fld[5];
	int ret, has, rolled;

	/* One number to group by, as top_buckets() */
	has = f->by_host || f->by_pid ? 0 : has_comm_hash(c, err, errlen);
	rolled = has < 0 ? -1 : has_rollups(c, f, err, errlen);
	if (has < 0 || rolled < 0)
		return -1;
	if (f->symbol && symbol_where(c, &extra, f->symbol, err, errlen)) {
		np_buf_free(&extra);
		return -1;
	}
	if (has)
		np_ch_buf_str(&key, "bitXor(stack, comm_hash)");
	else
		np_ch_buf_printf(&key, "bitXor(stack, cityHash64(comm%s%s))",
				 f->by_host ? ", host" : "", f->by_pid ? ", pid" : "");
	np_ch_buf_printf(&sel, "%s AS h, %s AS p, any(comm) AS cm, any(stack) AS st,"
			 " sum(count) AS c", f->by_host ? "any(host)" : "''",
			 f->by_pid ? "any(pid)" : "toUInt32(0)");
	samples_grouped(&sql, db, f, rolled, np_buf_str(&key), np_buf_str(&sel),
			"any(h), any(p), any(cm), any(st), sum(c)",
			extra.p ? np_buf_str(&extra) : "");
	np_ch_buf_str(&sql, " FORMAT TabSeparated");
	if (key.oom || sel.oom || extra.oom)
		sql.oom = 1;
	np_buf_free(&key);
	np_buf_free(&sel);
	np_buf_free(&extra);
	ret = run(c, &sql, &out, err, errlen);
	for (cur = np_buf_str(&out); !ret && next_row(&cur, fld, 5) == 5;) {
		struct np_fleet_count fc = {
			.host = fld[0],
			.pid = (uint32_t)strtoul(fld[1], NULL, 10),
			.comm = fld[2],
			.stack = strtoull(fld[3], NULL, 10),
			.count = strtoull(fld[4], NULL, 10),
		};

		ret = fn(&fc, arg);
	}
	np_buf_free(&sql);
	np_buf_free(&out);
	return ret;
}

/* ---- frames: RowBinary, one row per stack ----------------------------- */

static uint64_t rb_u64(struct np_rd *r)
{
	uint64_t v = 0;

	if (r->end - r->p < 8) {
		r->bad = 1;
		return 0;
	}
	for (int i = 7; i >= 0; i--)
		v = v << 8 | r->p[i];
	r->p += 8;
	return v;
}

/* An array's length: no more elements than bytes left (each takes one). */
static uint64_t rb_len(struct np_rd *r)
{
	uint64_t n = np_get_var(r);

	if (n > (uint64_t)(r->end - r->p)) {
		r->bad = 1;
		return 0;
	}
	return n;
}

/* One stack's frames, its strings NUL-terminated in str. */
struct stack_row {
	struct np_sym *f;
	size_t cap;
	struct np_buf str;
};

/*
 * A row: stack UInt64, kernel Array(UInt8), dsos Array(String), funcs
 * Array(String), offsets Array(UInt64).  0, -1 malformed, -ENOMEM.
 */
static int rb_stack(struct np_rd *r, struct stack_row *row, uint64_t *stack,
		    unsigned int *nr)
{
	uint64_t n = 0;
	size_t *soff;

	*stack = rb_u64(r);
	n = rb_len(r);
	if (r->bad || n > UINT32_MAX)
		return -1;
	if (n > row->cap) {
		struct np_sym *f = realloc(row->f, n * (sizeof(*f) + 2 * sizeof(size_t)));

		if (!f)
			return -ENOMEM;
		row->f = f;
		row->cap = n;
	}
	/* string offsets into str, after the frames: str may move */
	soff = (size_t *)(row->f + row->cap);
	if ((uint64_t)(r->end - r->p) < n)
		return -1;
	for (uint64_t i = 0; i < n; i++)
		row->f[i].kernel = *r->p++ != 0;
	for (int a = 0; a < 2; a++) {
		if (rb_len(r) != n)
			return -1;
		for (uint64_t i = 0; i < n; i++) {
			uint64_t len = np_get_var(r);

			if (r->bad || len > (uint64_t)(r->end - r->p))
				return -1;
			soff[i * 2 + a] = row->str.len;
			np_buf_puts(&row->str, (const char *)r->p, len);
			if (!row->str.oom)
				row->str.len++;		/* its NUL */
			r->p += len;
		}
	}
	if (rb_len(r) != n)
		return -1;
	for (uint64_t i = 0; i < n; i++)
		row->f[i].offset = rb_u64(r);
	if (r->bad)
		return -1;
	if (row->str.oom)
		return -ENOMEM;
	for (uint64_t i = 0; i < n; i++) {
		const char *name = (const char *)row->str.p + soff[i * 2 + 1];

		row->f[i].dso = (const char *)row->str.p + soff[i * 2];
		row->f[i].name = *name ? name : NULL;
		row->f[i].build_id = NULL;	/* not kept inline */
	}
	*nr = (unsigned int)n;
	return 0;
}

/* Stacks per request: bounds the reply (about 1.4 KB a stack of 25). */
#define STACKS_PER_QUERY	100000

/* ids as the rows of the table sent with a query: printing them was a
 * fifth of the client's instructions. */
static void ids_table(struct np_buf *b, const uint64_t *ids, size_t nr)
{
	for (size_t i = 0; i < nr; i++)
		np_ch_rb_u64(b, ids[i]);
}

/*
 * sql (reading the table "ids" of ids) in RowBinary into out.  The ids
 * go as a table sent with the query, not as literals: 18.16 took 4.4 s
 * to parse 50000 of them (on each shard), the table 0.2 s.
 */
static int query_ids(struct np_ch *c, struct np_buf *sql, const uint64_t *ids,
		     size_t nr, struct np_buf *out, char *err, size_t errlen)
{
	struct np_ch_table t = { .name = "ids", .structure = "id UInt64" };
	struct np_buf tb = { 0 };
	char msg[512];
	int ret = 0;

	ids_table(&tb, ids, nr);
	t.data = tb.p;
	t.len = tb.len;
	if (sql->oom || tb.oom) {
		snprintf(err, errlen, "out of memory");
		ret = -ENOMEM;
	} else if (np_ch_query_with(c, np_buf_str(sql), &t, out, msg, sizeof(msg))) {
		snprintf(err, errlen, "%s: %s", np_ch_url(c), msg);
		ret = -1;
	}
	np_buf_free(&tb);
	return ret;
}

/*
 * The first schema's stacks, frames inline, as they are stored: no
 * ARRAY JOIN and no GROUP BY (a stack stored twice, two days or parts
 * not merged yet, comes twice, and fn keeps the first).
 */
static int query_inline_chunk(struct np_ch *c, const uint64_t *stacks,
			      size_t nr, np_fleet_stack_fn fn, void *arg,
			      char *err, size_t errlen)
{
	struct np_buf sql = { 0 }, out = { 0 };
	struct stack_row row = { 0 };
	struct np_rd r;
	int ret;

	np_ch_buf_printf(&sql,
		"SELECT stack, kernel, dsos, funcs, offsets FROM %s.stacks"
		" PREWHERE stack IN ids FORMAT RowBinary", np_ch_database(c));
	ret = query_ids(c, &sql, stacks, nr, &out, err, errlen);
	r = (struct np_rd){ .p = out.p, .end = out.p + out.len };
	while (!ret && r.p < r.end) {
		unsigned int n;
		uint64_t st;

		np_buf_reset(&row.str);
		ret = rb_stack(&r, &row, &st, &n);
		if (ret == -ENOMEM)
			snprintf(err, errlen, "out of memory");
		else if (ret)
			snprintf(err, errlen, "%s: malformed stacks reply at byte %zu",
				 np_ch_url(c), (size_t)(r.p - out.p));
		else
			ret = fn(st, row.f, n, arg);
	}
	free(row.f);
	np_buf_free(&row.str);
	np_buf_free(&sql);
	np_buf_free(&out);
	return ret;
}

/* A set of 64-bit ids, each with an index into the owner's arrays. */
struct id_set {
	uint64_t *id;
	uint32_t n, cap;
	struct np_idx idx;
};

static uint32_t id_find(const struct id_set *s, uint64_t id)
{
	uint32_t h = (uint32_t)np_hash_u64(id), pos = np_idx_first(&s->idx, h), i;

	while ((i = np_idx_next(&s->idx, h, &pos)) != NP_IDX_NONE)
		if (s->id[i] == id)
			return i;
	return NP_IDX_NONE;
}

/* Add id if new: its index, or NP_IDX_NONE on ENOMEM. */
static uint32_t id_add(struct id_set *s, uint64_t id, int *added)
{
	uint32_t i = id_find(s, id);

	*added = 0;
	if (i != NP_IDX_NONE)
		return i;
	if (s->n >= NP_IDX_NONE - 1 ||
	    np_grow((void **)&s->id, &s->cap, s->n + 1ULL, sizeof(*s->id)) ||
	    np_idx_insert(&s->idx, (uint32_t)np_hash_u64(id), s->n))
		return NP_IDX_NONE;
	s->id[s->n] = id;
	*added = 1;
	return s->n++;
}

static void id_free(struct id_set *s)
{
	free(s->id);
	np_idx_free(&s->idx);
}

/* The stacks as frame ids (stack_frames), then those frames (frames). */
struct dict {
	struct id_set stacks;		/* found ones */
	uint32_t *first, *nr;		/* per stack: its ids in fids[] */
	uint32_t cap_first, cap_nr;
	uint64_t *fids;
	size_t nr_fids, cap_fids;
	struct id_set frames;
	struct np_sym *sym;		/* per frame, strings in str */
	size_t *soff;			/* per frame: dso, func, build-id in str */
	uint32_t cap_sym, cap_soff;
	struct np_buf str;
};

static void dict_free(struct dict *d)
{
	id_free(&d->stacks);
	id_free(&d->frames);
	free(d->first);
	free(d->nr);
	free(d->fids);
	free(d->sym);
	free(d->soff);
	np_buf_free(&d->str);
}

/* Rows: stack UInt64, frames Array(UInt64).  0, -1 malformed, -ENOMEM. */
static int dict_stacks(struct dict *d, struct np_rd *r)
{
	while (r->p < r->end) {
		uint64_t st = rb_u64(r), n = rb_len(r);
		uint32_t i;
		int added;

		if (r->bad || n > (uint64_t)(r->end - r->p) / 8)
			return -1;
		i = id_add(&d->stacks, st, &added);
		if (i == NP_IDX_NONE)
			return -ENOMEM;
		if (!added) {		/* stored twice: the first */
			r->p += n * 8;
			continue;
		}
		if (np_grow((void **)&d->first, &d->cap_first, i + 1ULL, sizeof(*d->first)) ||
		    np_grow((void **)&d->nr, &d->cap_nr, i + 1ULL, sizeof(*d->nr)))
			return -ENOMEM;
		if (d->nr_fids + n > UINT32_MAX)
			return -ENOMEM;
		if (d->nr_fids + n > d->cap_fids) {
			size_t nc = (d->nr_fids + n) * 2;
			uint64_t *v = realloc(d->fids, nc * sizeof(*v));

			if (!v)
				return -ENOMEM;
			d->fids = v;
			d->cap_fids = nc;
		}
		d->first[i] = (uint32_t)d->nr_fids;
		d->nr[i] = (uint32_t)n;
		for (uint64_t k = 0; k < n; k++)
			d->fids[d->nr_fids++] = rb_u64(r);
	}
	return r->bad ? -1 : 0;
}

/* A string into str, its offset in *off. */
static int rb_str(struct np_rd *r, struct np_buf *str, size_t *off)
{
	uint64_t len = np_get_var(r);

	if (r->bad || len > (uint64_t)(r->end - r->p))
		return -1;
	*off = str->len;
	np_buf_puts(str, (const char *)r->p, len);
	if (!str->oom)
		str->len++;		/* its NUL */
	r->p += len;
	return 0;
}

/* SIZE_MAX: no string. */
static int dict_str_empty(const struct dict *d, size_t off)
{
	return off == SIZE_MAX || d->str.oom || !d->str.p[off];
}

/*
 * Rows: frame UInt64, kernel UInt8, dso String, func String, off UInt64,
 * and build_id String if bid.
 */
static int dict_frames(struct dict *d, struct np_rd *r, int bid)
{
	while (r->p < r->end) {
		uint64_t fr = rb_u64(r), off;
		uint32_t i;
		size_t dso, func, b = SIZE_MAX;
		int added, kernel;

		if (r->bad || r->p >= r->end)
			return -1;
		kernel = *r->p++ != 0;
		if (rb_str(r, &d->str, &dso) || rb_str(r, &d->str, &func))
			return -1;
		off = rb_u64(r);
		if (bid && rb_str(r, &d->str, &b))
			return -1;
		i = id_add(&d->frames, fr, &added);
		if (i == NP_IDX_NONE)
			return -ENOMEM;
		/*
		 * A frame sent before `cluster init` added build_id has a
		 * row with "" beside the newer one (same id: the id covers
		 * the build-id), in any order until parts merge.
		 */
		if (!added) {
			if (!dict_str_empty(d, b) &&
			    dict_str_empty(d, d->soff[3 * i + 2]))
				d->soff[3 * i + 2] = b;
			continue;
		}
		if (np_grow((void **)&d->sym, &d->cap_sym, i + 1ULL, sizeof(*d->sym)) ||
		    np_grow((void **)&d->soff, &d->cap_soff, 3 * (i + 1ULL), sizeof(*d->soff)))
			return -ENOMEM;
		d->sym[i].kernel = kernel;
		d->sym[i].offset = off;
		d->soff[3 * i] = dso;
		d->soff[3 * i + 1] = func;
		d->soff[3 * i + 2] = b;
	}
	if (d->str.oom)
		return -ENOMEM;
	for (uint32_t i = 0; i < d->frames.n; i++) {
		const char *name = (const char *)d->str.p + d->soff[3 * i + 1];
		size_t b = d->soff[3 * i + 2];

		d->sym[i].dso = (const char *)d->str.p + d->soff[3 * i];
		d->sym[i].name = *name ? name : NULL;
		d->sym[i].build_id = dict_str_empty(d, b) ? NULL :
				     (const char *)d->str.p + b;
	}
	return r->bad ? -1 : 0;
}

enum { HAS_DICT = 1, HAS_INLINE = 2, HAS_BUILD_ID = 4 };

/* frames: a mask of stack_tables(), else 0 for the stacks' frame ids. */
static int dict_query(struct np_ch *c, struct dict *d, int frames,
		      const uint64_t *ids, size_t nr, char *err, size_t errlen)
{
	int bid = !!(frames & HAS_BUILD_ID);
	struct np_buf sql = { 0 }, out = { 0 };
	struct np_rd r;
	int ret;

	if (frames)
		np_ch_buf_printf(&sql, "SELECT frame, kernel, dso, func, off%s FROM %s.frames"
				 " PREWHERE frame IN ids FORMAT RowBinary",
				 bid ? ", build_id" : "", np_ch_database(c));
	else
		np_ch_buf_printf(&sql, "SELECT stack, frames FROM %s.stack_frames"
				 " PREWHERE stack IN ids FORMAT RowBinary",
				 np_ch_database(c));
	ret = query_ids(c, &sql, ids, nr, &out, err, errlen);
	r = (struct np_rd){ .p = out.p, .end = out.p + out.len };
	if (!ret) {
		ret = frames ? dict_frames(d, &r, bid) : dict_stacks(d, &r);
		if (ret == -ENOMEM)
			snprintf(err, errlen, "out of memory");
		else if (ret)
			snprintf(err, errlen, "%s: malformed %s reply at byte %zu",
				 np_ch_url(c), frames ? "frames" : "stacks",
				 (size_t)(r.p - out.p));
	}
	np_buf_free(&sql);
	np_buf_free(&out);
	return ret;
}

/*
 * Which stack tables the database has: the frame dictionary
 * (stack_frames and frames, with build_id or not), the first schema's
 * stacks with frames inline, or both (a server made by the first schema
 * and initialized again).  A mask, or -1.
 */
static int stack_tables(struct np_ch *c, char *err, size_t errlen)
{
	struct np_buf sql = { 0 }, out = { 0 };
	char *cur, *fld[1];
	int ret, mask = 0, dict = 0;

	np_ch_buf_str(&sql, "SELECT name FROM system.tables WHERE database = ");
	np_ch_buf_sql_str(&sql, np_ch_database(c));
	np_ch_buf_str(&sql, " AND name IN ('stack_frames', 'frames', 'stacks')"
		      " UNION ALL SELECT 'build_id' FROM system.columns WHERE database = ");
	np_ch_buf_sql_str(&sql, np_ch_database(c));
	np_ch_buf_str(&sql, " AND table = 'frames' AND name = 'build_id'"
		      " FORMAT TabSeparated");
	ret = run(c, &sql, &out, err, errlen);
	for (cur = np_buf_str(&out); !ret && next_row(&cur, fld, 1) == 1;) {
		if (!strcmp(fld[0], "stacks"))
			mask |= HAS_INLINE;
		else if (!strcmp(fld[0], "build_id"))
			mask |= HAS_BUILD_ID;
		else
			dict++;
	}
	if (dict == 2)
		mask |= HAS_DICT;
	if (!ret && !(mask & (HAS_DICT | HAS_INLINE))) {
		snprintf(err, errlen, "%s: database %s has no fleet stack tables"
			 " (run `nmiprof cluster init`)", np_ch_url(c),
			 np_ch_database(c));
		ret = -1;
	}
	np_buf_free(&sql);
	np_buf_free(&out);
	return ret ? ret : mask;
}

/*
 * A server keeps each frame once (frames) and stacks as arrays of frame
 * ids (stack_frames): the stacks of a top-50 read 8 bytes a frame, not
 * its strings.  Stacks a server made by the first schema holds inline
 * (stacks) are read from there.
 */
static int query_dict_chunk(struct np_ch *c, int tables, const uint64_t *stacks,
			    size_t nr, np_fleet_stack_fn fn, void *arg,
			    char *err, size_t errlen)
{
	static const struct np_sym unknown = { .dso = "[unknown]" };
	struct dict d = { 0 };
	struct id_set want = { 0 };
	uint64_t *missing = NULL;
	struct np_sym *f = NULL;
	size_t nm = 0, capf = 0;
	int ret, added;

	if (!(tables & HAS_DICT))
		return query_inline_chunk(c, stacks, nr, fn, arg, err, errlen);
	ret = dict_query(c, &d, 0, stacks, nr, err, errlen);
	for (size_t i = 0; !ret && i < d.nr_fids; i++)
		if (id_add(&want, d.fids[i], &added) == NP_IDX_NONE)
			ret = -ENOMEM;
	if (!ret && want.n)
		ret = dict_query(c, &d, tables, want.id, want.n, err, errlen);
	if (!ret && !(missing = malloc((nr + 1) * sizeof(*missing))))
		ret = -ENOMEM;
	for (size_t i = 0; !ret && i < nr; i++) {
		uint32_t s = id_find(&d.stacks, stacks[i]);

		if (s == NP_IDX_NONE) {
			missing[nm++] = stacks[i];
			continue;
		}
		if (d.nr[s] > capf) {
			struct np_sym *nf = realloc(f, d.nr[s] * sizeof(*f));

			if (!nf) {
				ret = -ENOMEM;
				break;
			}
			f = nf;
			capf = d.nr[s];
		}
		for (uint32_t k = 0; k < d.nr[s]; k++) {
			uint32_t j = id_find(&d.frames, d.fids[d.first[s] + k]);

			f[k] = j == NP_IDX_NONE ? unknown : d.sym[j];
		}
		ret = fn(stacks[i], f, d.nr[s], arg);
	}
	if (ret == -ENOMEM)
		snprintf(err, errlen, "out of memory");
	free(f);
	id_free(&want);
	dict_free(&d);
	if (!ret && nm && (tables & HAS_INLINE))
		ret = query_inline_chunk(c, missing, nm, fn, arg, err, errlen);
	free(missing);
	return ret;
}

int np_fleet_query_stacks(struct np_ch *c, const uint64_t *stacks, size_t nr,
			  np_fleet_stack_fn fn, void *arg,
			  char *err, size_t errlen)
{
	int tables = nr ? stack_tables(c, err, errlen) : 0, ret = 0;

	if (tables < 0)
		return -1;
	for (size_t i = 0; i < nr && !ret; i += STACKS_PER_QUERY)
		ret = query_dict_chunk(c, tables, stacks + i, nr - i < STACKS_PER_QUERY ?
				       nr - i : STACKS_PER_QUERY, fn, arg,
				       err, errlen);
	return ret;
}

int np_fleet_query_totals(struct np_ch *c, const struct np_fleet_filter *f,
			  struct np_fleet_totals *t, char *err, size_t errlen)
{
	struct np_buf sql = { 0 }, out = { 0 };
	char *cur, *fld[6];
	int ret;

	memset(t, 0, sizeof(*t));
	np_ch_buf_printf(&sql,
		"SELECT count(), sum(s), sum(l), uniqExact(host), min(start), max(e) FROM"
		" (SELECT host, start, argMin(samples, batch) AS s,"
		" argMin(lost, batch) AS l, any(end) AS e FROM %s.slices",
		np_ch_database(c));
	slice_where(&sql, f);
	/*
	 * A host's slices are on one shard: each shard's groups are whole,
	 * and it sends them finished, not as states to merge (3x faster).
	 */
	np_ch_buf_str(&sql, " GROUP BY host, start)"
		      " SETTINGS distributed_group_by_no_merge = 1 FORMAT TabSeparated");
	ret = run(c, &sql, &out, err, errlen);
	cur = np_buf_str(&out);
	if (!ret && next_row(&cur, fld, 6) == 6) {
		t->slices = strtoull(fld[0], NULL, 10);
		t->samples = strtoull(fld[1], NULL, 10);
		t->lost = strtoull(fld[2], NULL, 10);
		t->hosts = strtoull(fld[3], NULL, 10);
		t->first_ns = t->slices ? strtoull(fld[4], NULL, 10) : 0;
		t->last_ns = t->slices ? strtoull(fld[5], NULL, 10) : 0;
	}
	np_buf_free(&sql);
	np_buf_free(&out);
	return ret;
}

/* ---- the hot-spot rows, ranked by the server --------------------------- */

/*
 * np_sym_unnamed() in SQL, of the columns fd (dso) and fo (offset): the
 * name the client gives a frame without one, for the server to sort by.
 * hex() gives whole bytes in upper case: one leading 0 to drop.
 */
static void unnamed_sql(struct np_buf *b)
{
	const char *base = "if(fd = '', '[unknown]', fd)";
	const char *hex = "replaceRegexpOne(lower(hex(fo)), '^0', '')";

	/* "[kernel.kallsyms]" whole, a path's file name; cut, never the offset */
	np_ch_buf_printf(b, "concat(substring(if(substring(%1$s, 1, 1) = '['"
			 " OR splitByChar('/', %1$s)[-1] = '', %1$s, splitByChar('/', %1$s)[-1]),"
			 " 1, %2$d - length(%3$s)), '+0x', %3$s)",
			 base, NP_SYM_UNNAMED_MAX - 4, hex);
}

/*
 * The rollups the query reads, found once (rolled_sql() on each shard)
 * rather than by each arm of samples_grouped(), as its table
 * ROLLED_TABLE in out.  ROLLED_ALL when they cover all the slices
 * np_fleet_query_totals() counted (slices, 0 if not known): no arm of
 * samples then, it would read every batch to find none.  ROLLED_NONE
 * without any, ROLLED_SENT, or -1.
 */
static int rolled_table(struct np_ch *c, const struct np_fleet_filter *f,
			uint64_t slices, struct np_buf *out, char *err, size_t errlen)
{
	const char *db = np_ch_database(c);
	struct np_buf sql = { 0 };
	struct np_rd r;
	uint64_t covered = 0;
	int ret;

	np_ch_buf_printf(&sql, "SELECT host, day, rollup, slices FROM %s.rollups"
			 " WHERE rollup IN (SELECT r FROM (", db);
	rolled_sql(&sql, db, f);
	np_ch_buf_str(&sql, ")) FORMAT RowBinary");
	ret = run(c, &sql, out, err, errlen);
	np_buf_free(&sql);
	if (ret)
		return -1;
	r = (struct np_rd){ .p = out->p, .end = out->p + out->len };
	while (r.p < r.end && !r.bad) {
		uint64_t len = np_get_var(&r);

		if (r.bad || len > (uint64_t)(r.end - r.p) || r.end - r.p - len < 18) {
			snprintf(err, errlen, "%s: malformed rollups reply", np_ch_url(c));
			return -1;
		}
		r.p += len + 10;
		covered += rb_u64(&r);
	}
	if (!out->len)
		return ROLLED_NONE;
	return slices && covered == slices ? ROLLED_ALL : ROLLED_SENT;
}

/*
 * The buckets (comm and pid as the rows group by, stack, count), summed
 * by the server, in RowBinary as the table b of the second query: they
 * go back as they came, unparsed.  One 64-bit key per bucket, the stack
 * id mixed with the comm's and pid's hashes: 18.16 groups by one number
 * 4x faster than by (stack, comm).  Like stack ids, a content hash.
 */
static int top_buckets(struct np_ch *c, const struct np_fleet_filter *f,
		       const struct np_fleet_top *t, struct np_buf *out,
		       char *err, size_t errlen)
{
	struct np_ch_table tb = { .name = ROLLED_TABLE, .structure = ROLLED_STRUCTURE };
	const char *db = np_ch_database(c);
	struct np_buf sql = { 0 }, sel = { 0 }, rl = { 0 };
	int ret, rolled, has = t->by_comm && !t->by_pid ? has_comm_hash(c, err, errlen) : 0;
	char msg[512];

	rolled = has < 0 ? -1 : has_rollups(c, f, err, errlen);
	if (rolled > 0)
		rolled = rolled_table(c, f, t->slices, &rl, err, errlen);
	if (has < 0 || rolled < 0) {
		np_buf_free(&rl);
		return -1;
	}
	np_ch_buf_printf(&sel, "any(stack) AS st, %s AS cm, %s AS pd, sum(count) AS c",
			 t->by_comm ? "any(comm)" : "''",
			 t->by_pid ? "any(pid)" : "toUInt32(0)");
	np_ch_buf_str(&sql, "SELECT rowNumberInAllBlocks(), cm, pd, st, c FROM (");
	samples_grouped(&sql, db, f, rolled,
			t->by_comm && t->by_pid ? "bitXor(stack, cityHash64(comm, pid))" :
			t->by_comm ? (has ? "bitXor(stack, comm_hash)" :
				      "bitXor(stack, " NP_FLEET_COMM_HASH ")") :
			t->by_pid ? "bitXor(stack, intHash64(pid))" : "stack",
			np_buf_str(&sel), "any(st) AS st, any(cm) AS cm, any(pd) AS pd, sum(c) AS c",
			"");
	np_ch_buf_str(&sql, " HAVING c > 0) FORMAT RowBinary");
	if (sel.oom)
		sql.oom = 1;
	np_buf_free(&sel);
	if (rolled == ROLLED_NONE) {
		ret = run(c, &sql, out, err, errlen);
	} else if (sql.oom) {
		snprintf(err, errlen, "out of memory");
		ret = -1;
	} else {
		tb.data = rl.p;
		tb.len = rl.len;
		ret = np_ch_query_with(c, np_buf_str(&sql), &tb, out, msg, sizeof(msg));
		if (ret)
			snprintf(err, errlen, "%s: %s", np_ch_url(c), msg);
	}
	np_buf_free(&sql);
	np_buf_free(&rl);
	return ret;
}

#define TOP_BUCKETS	"id UInt64, cm String, pd UInt32, stack UInt64, c UInt64"

/* The rows of top_buckets()' reply. */
static uint64_t top_nr_buckets(const struct np_buf *buckets)
{
	struct np_rd r = { .p = buckets->p, .end = buckets->p + buckets->len };
	uint64_t n = 0;

	while (r.p < r.end && !r.bad) {
		uint64_t len;

		rb_u64(&r);
		len = np_get_var(&r);
		if (r.bad || len > (uint64_t)(r.end - r.p) || r.end - r.p - len < 20)
			break;
		r.p += len + 20;
		n++;
	}
	return n;
}

/*
 * Whether to read every frame rather than those of the buckets' stacks:
 * 18.16 spends more building and probing the set of their frame ids (a
 * stack's depth of them for each bucket) than reading a frame's row, so
 * while the table is not much larger than that set, all of it (bench:
 * 193k frames, 20k buckets: 0.35 s less server CPU of 0.9).
 */
static int top_all_frames(struct np_ch *c, uint64_t nr_buckets, char *err,
			  size_t errlen)
{
	struct np_buf sql = { 0 }, out = { 0 };
	int ret;

	np_ch_buf_printf(&sql, "SELECT count() FROM %s.frames FORMAT TabSeparated",
			 np_ch_database(c));
	ret = run(c, &sql, &out, err, errlen);
	if (!ret)
		ret = strtoull(np_buf_str(&out), NULL, 10) <= 32 * nr_buckets;
	np_buf_free(&sql);
	np_buf_free(&out);
	return ret;
}

/*
 * Each bucket's stack as frame ids, each frame's key (what rows group by
 * of a frame, as a hash: kernel, dso, and func with the offset when func
 * is empty, the name then made of dso and offset), the frames kept; per
 * bucket, its innermost kept frame's key (leaf) and its distinct keys;
 * per key, self and children, and the key's fields.  A missing stack is
 * one frame, the client's "[unknown stack]"; a missing frame "[unknown]"
 * at 0.  The totals' self: every bucket with a frame kept, once.
 * all_frames: read every frame, not only those of the buckets' stacks.
 */
static void top_sql(struct np_buf *b, const char *db, const struct np_fleet_top *t,
		    int all_frames)
{
	/* key, missing frame, missing stack */
	static const char *const keys[3][3] = {
		{ "toUInt64(0)", "toUInt64(0)", "toUInt64(0)" },
		{ "cityHash64(kernel != 0, dso)", "cityHash64(toUInt8(0), '[unknown]')",
		  "cityHash64(toUInt8(0), '[unknown]')" },
		{ "cityHash64(kernel != 0, dso, func, if(func = '', off, 0))",
		  "cityHash64(toUInt8(0), '[unknown]', '', toUInt64(0))",
		  "cityHash64(toUInt8(0), '[unknown]', '[unknown stack]', toUInt64(0))" },
	};
	const char *const *k = keys[t->by_sym ? 2 : t->by_dso ? 1 : 0];
	struct np_buf fs = { 0 };

	/* the frames of the buckets' stacks */
	if (!all_frames)
		np_ch_buf_printf(&fs, " PREWHERE frame GLOBAL IN (SELECT arrayJoin(frames)"
				 " FROM %s.stack_frames PREWHERE stack GLOBAL IN"
				 " (SELECT stack FROM b))", db);
	np_ch_buf_str(b, "SELECT cm, pd, ");
	if (t->by_dso)
		np_ch_buf_str(b, "any(fk) AS kernel, any(fd) AS dso, ");
	else
		np_ch_buf_str(b, "toUInt8(0) AS kernel, '' AS dso, ");
	if (t->by_sym) {
		np_ch_buf_str(b, "any(if(ff != '', ff, ");
		unnamed_sql(b);
		np_ch_buf_str(b, ")) AS sym");
	} else {
		np_ch_buf_str(b, "'' AS sym");
	}
	np_ch_buf_printf(b, ", sum(self) AS self, sum(children) AS children FROM"
		" (SELECT cm, pd, kh, sum(if(kh = leaf, c, 0)) AS self, sum(c) AS children FROM"
		" (SELECT id, any(c) AS c, any(cm) AS cm, any(pd) AS pd, argMin(kh, pos) AS leaf,"
		" groupUniqArray(kh) AS keys FROM"
		" (SELECT id, c, cm, pd, pos, if(sfound, if(ffound, k0, 0), 0) AS k,"
		" if(sfound, if(ffound, kh0, %2$s), %3$s) AS kh FROM"
		" (SELECT id, c, cm, pd, fid, pos, sfound FROM"
		" (SELECT id, c, cm, pd, if(sfound, fs, [toUInt64(0)]) AS fl, sfound FROM b"
		" ANY LEFT JOIN (SELECT stack, frames AS fs, toUInt8(1) AS sfound"
		" FROM %4$s.stack_frames PREWHERE stack GLOBAL IN (SELECT stack FROM b))"
		" USING stack) ARRAY JOIN fl AS fid, arrayEnumerate(fl) AS pos)"
		" ANY LEFT JOIN (SELECT frame AS fid, kernel != 0 AS k0, %1$s AS kh0,"
		" toUInt8(1) AS ffound FROM %4$s.frames%5$s) USING fid",
		k[0], k[1], k[2], db, fs.p ? np_buf_str(&fs) : "");
	if (t->kernel != t->user)
		np_ch_buf_printf(b, " WHERE k = %d", t->kernel ? 1 : 0);
	np_ch_buf_str(b, ") GROUP BY id) ARRAY JOIN keys AS kh GROUP BY cm, pd, kh)");
	if (t->by_dso)
		np_ch_buf_printf(b, " ANY LEFT JOIN (SELECT %1$s AS kh, kernel != 0 AS fk,"
			" dso AS fd, func AS ff, if(func = '', off, 0) AS fo"
			" FROM %4$s.frames%5$s"
			" UNION ALL SELECT %2$s AS kh, toUInt8(0) AS fk, '[unknown]' AS fd,"
			" '' AS ff, toUInt64(0) AS fo"
			" UNION ALL SELECT %3$s AS kh, toUInt8(0) AS fk, '[unknown]' AS fd,"
			" '[unknown stack]' AS ff, toUInt64(0) AS fo) USING kh",
			k[0], k[1], k[2], db, fs.p ? np_buf_str(&fs) : "");
	np_ch_buf_str(b, " GROUP BY cm, pd, kh WITH TOTALS ORDER BY ");
	/* topview's row_cmp, the view's insertion order last */
	np_ch_buf_str(b, t->by_children ? "children DESC, self DESC" :
		      "self DESC, children DESC");
	np_ch_buf_str(b, ", sym, pd, dso, cm, kernel");
	if (t->limit)
		np_ch_buf_printf(b, " LIMIT %zu", t->limit);
	np_ch_buf_str(b, " FORMAT TabSeparated");
	if (fs.oom)
		b->oom = 1;
	np_buf_free(&fs);
}

int np_fleet_query_top(struct np_ch *c, const struct np_fleet_filter *f,
		       const struct np_fleet_top *t, np_fleet_top_fn fn,
		       void *arg, uint64_t *shown, char *err, size_t errlen)
{
	struct np_ch_table tb = { .name = "b", .structure = TOP_BUCKETS };
	struct np_buf buckets = { 0 }, sql = { 0 }, out = { 0 };
	int tables, ret, totals = 0, all;
	char *cur, *fld[7], msg[512];

	*shown = 0;
	tables = stack_tables(c, err, errlen);
	if (tables < 0)
		return -1;
	if ((tables & (HAS_DICT | HAS_INLINE)) != HAS_DICT)
		return 1;
	ret = top_buckets(c, f, t, &buckets, err, errlen);
	if (ret || !buckets.len)
		goto out;
	all = top_all_frames(c, top_nr_buckets(&buckets), err, errlen);
	if (all < 0) {
		ret = -1;
		goto out;
	}
	top_sql(&sql, np_ch_database(c), t, all);
	tb.data = buckets.p;
	tb.len = buckets.len;
	if (sql.oom) {
		snprintf(err, errlen, "out of memory");
		ret = -1;
		goto out;
	}
	if (np_ch_query_with(c, np_buf_str(&sql), &tb, &out, msg, sizeof(msg))) {
		snprintf(err, errlen, "%s: %s", np_ch_url(c), msg);
		ret = -1;
		goto out;
	}
	/* the rows, an empty line, the totals */
	for (cur = np_buf_str(&out); !ret;) {
		int n = next_row(&cur, fld, 7);
		struct np_fleet_top_row r;

		if (n == 1 && !*fld[0] && !totals) {
			totals = 1;
			continue;
		}
		if (n != 7)
			break;
		if (totals) {
			*shown = strtoull(fld[5], NULL, 10);
			break;
		}
		r = (struct np_fleet_top_row){
			.comm = fld[0], .pid = (uint32_t)strtoul(fld[1], NULL, 10),
			.kernel = fld[2][0] == '1', .dso = fld[3], .sym = fld[4],
			.self = strtoull(fld[5], NULL, 10),
			.children = strtoull(fld[6], NULL, 10),
		};
		ret = fn(&r, arg);
		if (ret)
			snprintf(err, errlen, "out of memory");
	}
out:
	np_buf_free(&buckets);
	np_buf_free(&sql);
	np_buf_free(&out);
	return ret ? -1 : 0;
}

/* ---- report --sort host ---------------------------------------------- */

int np_fleet_query_hosts(struct np_ch *c, const struct np_fleet_filter *f,
			 np_fleet_host_fn fn, void *arg, char *err, size_t errlen)
{
	const char *db = np_ch_database(c);
	struct np_buf sql = { 0 }, out = { 0 };
	char *cur, *fld[2];
	int ret, rolled = has_rollups(c, f, err, errlen);

	if (rolled < 0)
		return -1;
	samples_grouped(&sql, db, f, rolled, "host", "any(host) AS h, sum(count) AS c",
			"any(h), sum(c)", "");
	np_ch_buf_str(&sql, " FORMAT TabSeparated");
	ret = run(c, &sql, &out, err, errlen);
	for (cur = np_buf_str(&out); !ret && next_row(&cur, fld, 2) == 2;)
		ret = fn(fld[0], strtoull(fld[1], NULL, 10), arg);
	np_buf_free(&sql);
	np_buf_free(&out);
	return ret;
}

/*
 * The stacks with a frame named symbol, as the client names frames: a
 * frame's func, else np_sym_unnamed() of its dso and offset.  Only where
 * every stack is in the frame dictionary (a stack of the first schema
 * has its frames inline): elsewhere no condition, the client sorts out.
 */
static int symbol_where(struct np_ch *c, struct np_buf *b, const char *symbol,
			char *err, size_t errlen)
{
	const char *db = np_ch_database(c);
	int tables = stack_tables(c, err, errlen);

	if (tables < 0)
		return -1;
	if ((tables & (HAS_DICT | HAS_INLINE)) != HAS_DICT)
		return 0;
	np_ch_buf_printf(b, " AND stack GLOBAL IN (SELECT stack FROM %s.stack_frames"
			 " ARRAY JOIN frames AS fid WHERE fid GLOBAL IN (SELECT frame FROM"
			 " (SELECT frame, func, dso AS fd, off AS fo FROM %s.frames)"
			 " WHERE if(func != '', func, ", db, db);
	unnamed_sql(b);
	np_ch_buf_str(b, ") = ");
	np_ch_buf_sql_str(b, symbol);
	np_ch_buf_str(b, "))");
	return 0;
}

/* ---- lockups ----------------------------------------------------------- */

/*
 * A row of lockups may be there twice until its parts merge (a daemon
 * that crashed before its cursor sent it again): one per (host, id).
 */
static void lockups_sql(struct np_buf *b, const char *db,
			const struct np_fleet_filter *f, const char *id,
			int flags)
{
	np_ch_buf_printf(b, "SELECT host, id, toUnixTimestamp(any(time)) AS t,"
			 " any(cpu), any(pid), any(tid), any(comm), any(stuck_ns), %s"
			 " FROM %s.lockups WHERE 1",
			 flags ? "ifNull(toString(any(flags)), '')" : "''", db);
	if (f->since_ns)
		np_ch_buf_printf(b, " AND time >= %" PRIu64, f->since_ns / NS_PER_SEC);
	if (f->until_ns)
		np_ch_buf_printf(b, " AND time <= %" PRIu64, f->until_ns / NS_PER_SEC);
	host_where(b, f);
	/* Lockups carry no labels: the hosts whose slices have them. */
	if (f->nr_labels) {
		np_ch_buf_printf(b, " AND host GLOBAL IN (SELECT DISTINCT host FROM %s.slices",
				 db);
		slice_where(b, f);
		np_ch_buf_str(b, ")");
	}
	if (id) {
		np_ch_buf_str(b, " AND id = ");
		np_ch_buf_sql_str(b, id);
	}
	np_ch_buf_str(b, " GROUP BY host, id ORDER BY t, host, id FORMAT TabSeparated");
}

/* One lockup's frames, innermost first, into l (strings in out). */
static int lockup_frames(struct np_ch *c, struct np_fleet_lockup *l,
			 struct np_buf *out, struct np_sym **frames,
			 char *err, size_t errlen)
{
	struct np_buf sql = { 0 };
	size_t n = 0, cap = 0;
	char *cur, *fld[4];
	int ret;

	/* ARRAY JOIN keeps each array's order. */
	np_ch_buf_printf(&sql, "SELECT k, d, fn, o FROM (SELECT any(kernel) AS ka,"
			 " any(dsos) AS da, any(funcs) AS fa, any(offsets) AS oa"
			 " FROM %s.lockups WHERE host = ", np_ch_database(c));
	np_ch_buf_sql_str(&sql, l->host);
	np_ch_buf_str(&sql, " AND id = ");
	np_ch_buf_sql_str(&sql, l->id);
	np_ch_buf_str(&sql, ") ARRAY JOIN ka AS k, da AS d, fa AS fn, oa AS o"
		      " FORMAT TabSeparated");
	ret = run(c, &sql, out, err, errlen);
	for (cur = np_buf_str(out); !ret && next_row(&cur, fld, 4) == 4; n++) {
		if (NP_GROW(*frames, cap, n + 1)) {
			snprintf(err, errlen, "out of memory");
			ret = -1;
			break;
		}
		(*frames)[n] = (struct np_sym){
			.kernel = fld[0][0] == '1',
			.dso = fld[1],
			.name = fld[2][0] ? fld[2] : NULL,
			.offset = strtoull(fld[3], NULL, 10),
		};
	}
	l->frames = *frames;
	l->nr_frames = ret ? 0 : (unsigned int)n;
	np_buf_free(&sql);
	return ret;
}

int np_fleet_query_lockups(struct np_ch *c, const struct np_fleet_filter *f,
			   const char *id, np_fleet_lockup_fn fn, void *arg,
			   char *err, size_t errlen)
{
	struct np_buf sql = { 0 }, out = { 0 }, fout = { 0 };
	struct np_sym *frames = NULL;
	int ret, flags = np_fleet_has_column(c, "lockups", "flags", err, errlen);
	char *cur, *fld[9];

	if (flags < 0)
		return -1;
	lockups_sql(&sql, np_ch_database(c), f, id, flags);
	ret = run(c, &sql, &out, err, errlen);
	for (cur = np_buf_str(&out); !ret && next_row(&cur, fld, 9) == 9;) {
		struct np_fleet_lockup l = {
			.host = fld[0], .id = fld[1],
			.time_s = strtoull(fld[2], NULL, 10),
			.cpu = (uint32_t)strtoul(fld[3], NULL, 10),
			.pid = (uint32_t)strtoul(fld[4], NULL, 10),
			.tid = (uint32_t)strtoul(fld[5], NULL, 10),
			.comm = fld[6],
			.stuck_ns = strtoull(fld[7], NULL, 10),
			.flags = fld[8][0] ? (int64_t)strtoull(fld[8], NULL, 10) : -1,
		};

		/* a fresh reply: an empty one leaves an old text in a kept buffer */
		np_buf_free(&fout);
		if (id)
			ret = lockup_frames(c, &l, &fout, &frames, err, errlen);
		if (!ret)
			ret = fn(&l, arg);
	}
	free(frames);
	np_buf_free(&sql);
	np_buf_free(&out);
	np_buf_free(&fout);
	return ret;
}
