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
 * Samples of the first committed batch of each slice.  The subquery
 * reads the shard's own slices_local: a host's slices and samples share
 * a shard (same sharding key), and each shard answers for its hosts.
 */
static void samples_where(struct np_buf *b, const char *db,
			  const struct np_fleet_filter *f)
{
	np_ch_buf_printf(b, " WHERE batch IN (SELECT min(batch) FROM %s.slices_local",
			 db);
	slice_where(b, f);
	np_ch_buf_str(b, " GROUP BY host, start)");
	/* The same hosts again: the sort key (host, time) skips the others. */
	host_where(b, f);
	/* Partition pruning: no slice is longer than a day. */
	if (f->since_ns)
		np_ch_buf_printf(b, " AND day >= toDate(toDateTime(%" PRIu64 "))",
				 f->since_ns / NS_PER_SEC > 86400 ?
				 f->since_ns / NS_PER_SEC - 86400 : 0);
	if (f->until_ns)
		np_ch_buf_printf(b, " AND time <= toDateTime(%" PRIu64 ")",
				 f->until_ns / NS_PER_SEC);
	if (f->pid >= 0)
		np_ch_buf_printf(b, " AND pid = %" PRId64, f->pid);
	if (f->cpu >= 0)
		np_ch_buf_printf(b, " AND cpu = %d", f->cpu);
	if (f->comm) {
		np_ch_buf_str(b, " AND comm = ");
		np_ch_buf_sql_str(b, f->comm);
	}
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

int np_fleet_query_counts(struct np_ch *c, const struct np_fleet_filter *f,
			  np_fleet_count_fn fn, void *arg,
			  char *err, size_t errlen)
{
	const char *db = np_ch_database(c);
	struct np_buf sql = { 0 }, out = { 0 };
	char *cur, *fld[5];
	int ret;

	np_ch_buf_printf(&sql, "SELECT %s AS h, %s AS p, comm, stack, sum(count)"
			 " FROM %s.samples", f->by_host ? "host" : "''",
			 f->by_pid ? "pid" : "toUInt32(0)", db);
	samples_where(&sql, db, f);
	np_ch_buf_str(&sql, " GROUP BY h, p, comm, stack FORMAT TabSeparated");
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
	}
	*nr = (unsigned int)n;
	return 0;
}

/* Stacks per request: bounds the reply (about 1.4 KB a stack of 25). */
#define STACKS_PER_QUERY	100000

/*
 * The stacks' rows as they are stored, in RowBinary: no ARRAY JOIN (a
 * row per frame, each a copy of the strings) and no text to unescape.
 * No GROUP BY either: a stack stored twice (two days, parts not merged
 * yet) comes twice, and fn keeps the first.  The ids go as a table sent
 * with the query, not as literals: 18.16 took 4.4 s to parse 50000 of
 * them (on each shard), the table 0.2 s.
 */
static int query_stacks_chunk(struct np_ch *c, const uint64_t *stacks,
			      size_t nr, np_fleet_stack_fn fn, void *arg,
			      char *err, size_t errlen)
{
	struct np_buf sql = { 0 }, ids = { 0 }, out = { 0 };
	struct stack_row row = { 0 };
	struct np_ch_table t = { .name = "ids", .structure = "stack UInt64" };
	char msg[512];
	struct np_rd r;
	int ret = 0;

	np_ch_buf_printf(&sql,
		"SELECT stack, kernel, dsos, funcs, offsets FROM %s.stacks"
		" PREWHERE stack IN ids FORMAT RowBinary", np_ch_database(c));
	for (size_t i = 0; i < nr; i++)
		np_ch_buf_printf(&ids, "%" PRIu64 "\n", stacks[i]);
	t.data = ids.p;
	t.len = ids.len;
	if (sql.oom || ids.oom) {
		snprintf(err, errlen, "out of memory");
		ret = -ENOMEM;
	} else if (np_ch_query_with(c, np_buf_str(&sql), &t, &out, msg, sizeof(msg))) {
		snprintf(err, errlen, "%s: %s", np_ch_url(c), msg);
		ret = -1;
	}
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
	np_buf_free(&ids);
	np_buf_free(&out);
	return ret;
}

int np_fleet_query_stacks(struct np_ch *c, const uint64_t *stacks, size_t nr,
			  np_fleet_stack_fn fn, void *arg,
			  char *err, size_t errlen)
{
	int ret = 0;

	for (size_t i = 0; i < nr && !ret; i += STACKS_PER_QUERY)
		ret = query_stacks_chunk(c, stacks + i, nr - i < STACKS_PER_QUERY ?
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
	np_ch_buf_str(&sql, " GROUP BY host, start) FORMAT TabSeparated");
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
