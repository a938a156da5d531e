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

/* The frames of one stack collected from its rows, then handed to fn. */
struct stack_acc {
	uint64_t stack;
	struct np_sym *f;
	char **strs;
	unsigned int nr, cap;
};

static void acc_clear(struct stack_acc *a)
{
	for (unsigned int i = 0; i < a->nr * 2; i++)
		free(a->strs[i]);
	a->nr = 0;
}

static int acc_add(struct stack_acc *a, int kernel, const char *dso,
		   const char *func, uint64_t off)
{
	if (a->nr == a->cap) {
		unsigned int nc = a->cap ? a->cap * 2 : 64;
		struct np_sym *f = realloc(a->f, nc * sizeof(*f));
		char **s;

		if (!f)
			return -ENOMEM;
		a->f = f;
		s = realloc(a->strs, nc * 2 * sizeof(*s));
		if (!s)
			return -ENOMEM;
		a->strs = s;
		a->cap = nc;
	}
	a->strs[a->nr * 2] = strdup(dso);
	a->strs[a->nr * 2 + 1] = *func ? strdup(func) : NULL;
	if (!a->strs[a->nr * 2] || (*func && !a->strs[a->nr * 2 + 1])) {
		free(a->strs[a->nr * 2]);
		free(a->strs[a->nr * 2 + 1]);
		return -ENOMEM;
	}
	a->f[a->nr].dso = a->strs[a->nr * 2];
	a->f[a->nr].name = a->strs[a->nr * 2 + 1];
	a->f[a->nr].offset = off;
	a->f[a->nr].kernel = kernel;
	a->nr++;
	return 0;
}

/* Ids per request: about 21 bytes and 2 AST elements each, within the
 * limits NP_FLEET_QUERY_PARAMS raises. */
#define STACKS_PER_QUERY	100000

/*
 * One row per frame: the arrays ARRAY JOINed side by side (indexing them
 * after a join of one copied every array per frame: 7 s for 5000 stacks
 * on 18.16) and no GROUP BY: a stack stored twice (two days, parts not
 * merged yet) comes twice, each copy's frames together and numbered from
 * 1, and fn keeps the first.
 */
static int query_stacks_chunk(struct np_ch *c, const uint64_t *stacks,
			      size_t nr, np_fleet_stack_fn fn, void *arg,
			      char *err, size_t errlen)
{
	struct np_buf sql = { 0 }, out = { 0 };
	struct stack_acc acc = { 0 };
	char *cur, *fld[6];
	int ret = 0;

	np_ch_buf_printf(&sql,
		"SELECT stack, i, k, d, f, o FROM %s.stacks"
		" ARRAY JOIN arrayEnumerate(funcs) AS i, kernel AS k, dsos AS d,"
		" funcs AS f, offsets AS o PREWHERE stack IN (", np_ch_database(c));
	for (size_t i = 0; i < nr; i++)
		np_ch_buf_printf(&sql, "%s%" PRIu64, i ? "," : "", stacks[i]);
	np_ch_buf_str(&sql, ") FORMAT TabSeparated");
	ret = run(c, &sql, &out, err, errlen);
	for (cur = np_buf_str(&out); !ret && next_row(&cur, fld, 6) == 6;) {
		uint64_t st = strtoull(fld[0], NULL, 10);

		if (acc.nr && (st != acc.stack || !strcmp(fld[1], "1"))) {
			ret = fn(acc.stack, acc.f, acc.nr, arg);
			acc_clear(&acc);
		}
		acc.stack = st;
		if (!ret && acc_add(&acc, fld[2][0] == '1', fld[3], fld[4],
				    strtoull(fld[5], NULL, 10))) {
			snprintf(err, errlen, "out of memory");
			ret = -1;
		}
	}
	if (!ret && acc.nr)
		ret = fn(acc.stack, acc.f, acc.nr, arg);
	acc_clear(&acc);
	free(acc.f);
	free(acc.strs);
	np_buf_free(&sql);
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
