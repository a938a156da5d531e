// SPDX-License-Identifier: GPL-2.0
/*
 * report/export --cluster: fleet profiles from ClickHouse (lib/fleet).
 * The server sums the samples per (comm, stack) (and pid or host when
 * asked); the client fetches the frames of those stacks and feeds the
 * same topview that local reports use, so the table, the call graphs and
 * the exports are built by one path.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "np_arena.h"
#include "np_fleet.h"
#include "np_grow.h"
#include "np_idx.h"
#include "store.h"

struct np_ch *cli_cluster_open(const char *cmd, const struct cli_source *src,
			       int *exit_code)
{
	char pw[NP_CH_PASSWORD_MAX] = "", err[512];
	struct np_ch_opts o = { 0 };
	struct np_ch *c;

	if (src->password_file &&
	    np_ch_read_password(src->password_file, pw, sizeof(pw), err, sizeof(err))) {
		cli_error(cmd, "%s", err);
		*exit_code = EXIT_NO_PERM;
		return NULL;
	}
	o.url = src->cluster;
	o.password = pw[0] ? pw : NULL;
	o.timeout_s = 300;
	c = np_ch_open(&o, err, sizeof(err));
	explicit_bzero(pw, sizeof(pw));
	if (!c) {
		cli_error(cmd, "--cluster: %s", err);
		*exit_code = EXIT_USAGE;
	}
	return c;
}

void cli_cluster_filter(const struct cli_source *src, const struct topview_filter *f,
			struct np_fleet_filter *ff)
{
	np_fleet_filter_init(ff);
	ff->since_ns = src->since_ns;
	ff->until_ns = src->until_ns;
	for (unsigned int i = 0; i < src->nr_hosts && i < NP_FLEET_MAX_MATCH; i++)
		ff->hosts[ff->nr_hosts++] = src->hosts[i];
	for (unsigned int i = 0; i < src->nr_labels && i < NP_FLEET_MAX_MATCH; i++)
		ff->labels[ff->nr_labels++] = src->labels[i];
	ff->pid = f->pid;
	ff->cpu = f->cpu;
	ff->comm = f->comm[0] ? f->comm : NULL;
	ff->by_pid = src->by_pid || f->pid >= 0;
}

/* ---- stacks by hash ------------------------------------------------- */

struct stack_ent {
	uint64_t hash;
	unsigned int nr;
	struct np_frame *frames;	/* strings in the map's arena */
};

struct stack_map {
	struct stack_ent *v;
	size_t n, cap;
	struct np_idx idx;
	struct np_arena strs;
};

static uint32_t stack_hash32(uint64_t stack)
{
	return (uint32_t)np_hash_u64(stack);
}

static struct stack_ent *map_find(const struct stack_map *m, uint64_t stack)
{
	uint32_t h = stack_hash32(stack), pos = np_idx_first(&m->idx, h), i;

	while ((i = np_idx_next(&m->idx, h, &pos)) != NP_IDX_NONE)
		if (m->v[i].hash == stack)
			return &m->v[i];
	return NULL;
}

static void map_free(struct stack_map *m)
{
	for (size_t i = 0; i < m->n; i++)
		free(m->v[i].frames);
	free(m->v);
	np_idx_free(&m->idx);
	np_arena_free(&m->strs);
}

static int map_stack(uint64_t stack, const struct np_sym *fr, unsigned int nr,
		     void *arg)
{
	struct stack_map *m = arg;
	struct stack_ent *e;

	if (map_find(m, stack))
		return 0;
	if (m->n >= UINT32_MAX - 1 || NP_GROW(m->v, m->cap, m->n + 1) ||
	    np_idx_insert(&m->idx, stack_hash32(stack), (uint32_t)m->n))
		return -ENOMEM;
	e = &m->v[m->n++];
	memset(e, 0, sizeof(*e));
	e->hash = stack;
	e->frames = calloc(nr ? nr : 1, sizeof(*e->frames));
	if (!e->frames)
		return -ENOMEM;
	for (unsigned int i = 0; i < nr; i++) {
		const char *dso = fr[i].dso ? fr[i].dso : "[unknown]", *sym = fr[i].name;
		char unnamed[NP_SYM_UNNAMED_MAX];

		if (!sym)
			sym = np_sym_unnamed(unnamed, sizeof(unnamed), dso,
					     fr[i].offset);
		e->frames[i].kernel = fr[i].kernel;
		e->frames[i].dso = np_arena_strdup(&m->strs, dso, strlen(dso));
		e->frames[i].sym = np_arena_strdup(&m->strs, sym, strlen(sym));
		if (!e->frames[i].dso || !e->frames[i].sym)
			return -ENOMEM;
		if (fr[i].build_id &&
		    !(e->frames[i].build_id = np_arena_strdup(&m->strs, fr[i].build_id,
							      strlen(fr[i].build_id))))
			return -ENOMEM;
		e->nr = i + 1;
	}
	return 0;
}

/* ---- the counts ----------------------------------------------------- */

struct count_row {
	char *host, *comm;
	uint32_t pid;
	uint64_t stack, count;
};

struct count_rows {
	struct count_row *v;
	size_t n, cap;
	int oom;
};

static int collect_count(const struct np_fleet_count *c, void *arg)
{
	struct count_rows *r = arg;
	struct count_row *row;

	if (r->n == r->cap) {
		size_t nc = r->cap ? r->cap * 2 : 1024;
		struct count_row *v = realloc(r->v, nc * sizeof(*v));

		if (!v) {
			r->oom = 1;
			return -ENOMEM;
		}
		r->v = v;
		r->cap = nc;
	}
	row = &r->v[r->n];
	row->host = strdup(c->host);
	row->comm = strdup(c->comm);
	row->pid = c->pid;
	row->stack = c->stack;
	row->count = c->count;
	if (!row->host || !row->comm) {
		free(row->host);
		free(row->comm);
		r->oom = 1;
		return -ENOMEM;
	}
	r->n++;
	return 0;
}

static void rows_free(struct count_rows *r)
{
	for (size_t i = 0; i < r->n; i++) {
		free(r->v[i].host);
		free(r->v[i].comm);
	}
	free(r->v);
}

/* Counts, then the frames of every stack they name. */
static int fetch(const char *cmd, struct np_ch *c, const struct np_fleet_filter *ff,
		 struct count_rows *rows, struct stack_map *map)
{
	struct np_idx seen = { 0 };	/* over ids[] */
	uint64_t *ids;
	size_t n = 0;
	char err[600];
	int ret;

	if (np_fleet_query_counts(c, ff, collect_count, rows, err, sizeof(err))) {
		cli_error(cmd, "%s", rows->oom ? "out of memory" : err);
		return rows->oom ? EXIT_FAILURE_RT : EXIT_BAD_INPUT;
	}
	ids = malloc((rows->n + 1) * sizeof(*ids));
	if (!ids || rows->n >= UINT32_MAX)
		goto nomem;
	for (size_t i = 0; i < rows->n; i++) {
		uint64_t stack = rows->v[i].stack;
		uint32_t h = stack_hash32(stack), pos = np_idx_first(&seen, h), id;

		while ((id = np_idx_next(&seen, h, &pos)) != NP_IDX_NONE &&
		       ids[id] != stack)
			;
		if (id != NP_IDX_NONE)
			continue;
		if (np_idx_insert(&seen, h, (uint32_t)n))
			goto nomem;
		ids[n++] = stack;
	}
	np_idx_free(&seen);
	ret = np_fleet_query_stacks(c, ids, n, map_stack, map, err, sizeof(err));
	free(ids);
	if (ret) {
		cli_error(cmd, "%s", ret == -ENOMEM ? "out of memory" : err);
		return ret == -ENOMEM ? EXIT_FAILURE_RT : EXIT_BAD_INPUT;
	}
	return EXIT_OK;
nomem:
	free(ids);
	np_idx_free(&seen);
	cli_error(cmd, "out of memory");
	return EXIT_FAILURE_RT;
}

/* ---- rows only: ranked by the server ------------------------------- */

struct top_ctx {
	struct topview *tv;
	uint32_t cpu;
	int by_cpu;
};

static int add_top_row(const struct np_fleet_top_row *r, void *arg)
{
	struct top_ctx *t = arg;
	struct topview_row row = {
		.self = (double)r->self, .children = (double)r->children,
		.pid = r->pid, .cpu = t->by_cpu ? t->cpu : 0, .kernel = r->kernel,
		.comm = r->comm, .dso = r->dso, .sym = r->sym,
	};

	return topview_add_row(t->tv, &row);
}

/* 0 with the rows in tv, 1 if the database can't rank them, or an exit code. */
static int load_top(const char *cmd, struct np_ch *c, const struct cli_source *src,
		    const struct np_fleet_filter *ff, uint64_t slices, struct topview *tv)
{
	const struct topview_keys *k = topview_keys(tv);
	const struct topview_filter *f = topview_filter(tv);
	struct np_fleet_top t = {
		.by_comm = topview_keys_has(k, TOPVIEW_KEY_COMM),
		.by_pid = topview_keys_has(k, TOPVIEW_KEY_PID),
		.by_sym = topview_keys_has(k, TOPVIEW_KEY_SYM),
		.kernel = f->kernel, .user = f->user,
		.by_children = src->order == TOPVIEW_SORT_CHILDREN,
		.limit = src->max_rows, .slices = slices,
	};
	struct top_ctx ctx = {
		.tv = tv, .cpu = f->cpu >= 0 ? (uint32_t)f->cpu : 0,
		.by_cpu = topview_keys_has(k, TOPVIEW_KEY_CPU),
	};
	uint64_t shown;
	char err[600];
	int ret;

	t.by_dso = t.by_sym || topview_keys_has(k, TOPVIEW_KEY_DSO);
	ret = np_fleet_query_top(c, ff, &t, add_top_row, &ctx, &shown, err, sizeof(err));
	if (ret < 0) {
		cli_error(cmd, "%s", err);
		return strcmp(err, "out of memory") ? EXIT_BAD_INPUT : EXIT_FAILURE_RT;
	}
	if (!ret)
		topview_add_shown(tv, (double)shown);
	return ret;
}

/* A stack the server has no frames for still counts, as one frame. */
static const struct np_frame unknown_frame = { "[unknown]", "[unknown stack]", 0, NULL };

int cli_load_cluster(const char *cmd, const struct cli_source *src,
		     struct topview *tv, struct cli_profile_info *info)
{
	const struct topview_filter *f = topview_filter(tv);
	struct count_rows rows = { 0 };
	struct np_fleet_totals t;
	struct np_fleet_filter ff;
	struct stack_map map = { 0 };
	char err[600];
	struct np_ch *c;
	int ret;

	c = cli_cluster_open(cmd, src, &ret);
	if (!c)
		return ret;
	cli_cluster_filter(src, f, &ff);
	if (np_fleet_query_totals(c, &ff, &t, err, sizeof(err))) {
		cli_error(cmd, "%s", err);
		np_ch_close(c);
		return EXIT_BAD_INPUT;
	}
	/* Only the top rows, no call graph: the server ranks them. */
	ret = 1;
	if (src->rows_only && !f->search[0] &&
	    !topview_keys_has(topview_keys(tv), TOPVIEW_KEY_TID) &&
	    (src->order == TOPVIEW_SORT_SELF || src->order == TOPVIEW_SORT_CHILDREN))
		ret = load_top(cmd, c, src, &ff, t.slices, tv);
	if (ret == 1)
		ret = fetch(cmd, c, &ff, &rows, &map);
	np_ch_close(c);
	for (size_t i = 0; !ret && i < rows.n; i++) {
		const struct count_row *r = &rows.v[i];
		const struct stack_ent *e = map_find(&map, r->stack);
		struct topview_sample ts = {
			.cpu = f->cpu >= 0 ? (uint32_t)f->cpu : 0,
			.pid = r->pid, .comm = r->comm,
			.frames = e ? e->frames : &unknown_frame,
			.nr_frames = e ? e->nr : 1,
			.weight = (double)r->count,
		};

		if (topview_add(tv, &ts)) {
			cli_error(cmd, "out of memory");
			ret = EXIT_FAILURE_RT;
		}
	}
	rows_free(&rows);
	map_free(&map);
	if (!ret && info) {
		memset(info, 0, sizeof(*info));
		info->segments = (uint32_t)t.slices;
		info->samples = t.samples;
		info->lost = t.lost;
		info->first_ns = t.first_ns;
		info->last_ns = t.last_ns;
	}
	return ret;
}

/* ---- report --sort host --------------------------------------------- */

struct host_row {
	char *host;
	uint64_t self, children, total;
};

struct host_rows {
	struct host_row *v;
	size_t n, cap;
};

static int host_cmp(const void *a, const void *b)
{
	const struct host_row *x = a, *y = b;
	uint64_t kx = x->self ? x->self : x->total, ky = y->self ? y->self : y->total;

	if (kx != ky)
		return kx > ky ? -1 : 1;
	if (x->children != y->children)
		return x->children > y->children ? -1 : 1;
	return strcmp(x->host, y->host);
}

/* host's row, added if new; NULL on ENOMEM. */
static struct host_row *host_get(struct host_rows *h, const char *host)
{
	for (size_t i = 0; i < h->n; i++)
		if (!strcmp(h->v[i].host, host))
			return &h->v[i];
	if (NP_GROW(h->v, h->cap, h->n + 1))
		return NULL;
	memset(&h->v[h->n], 0, sizeof(h->v[0]));
	h->v[h->n].host = strdup(host);
	return h->v[h->n].host ? &h->v[h->n++] : NULL;
}

static int host_total(const char *host, uint64_t count, void *arg)
{
	struct host_row *h = host_get(arg, host);

	if (!h)
		return -ENOMEM;
	h->total += count;
	return 0;
}

static int frame_shown(const struct topview_filter *f, const struct np_frame *fr)
{
	return fr->kernel ? f->kernel : f->user;
}

/*
 * The hosts' totals are summed by the server; with a symbol, the stacks
 * that have a frame of that name come with their counts per host, and
 * each counts for self when its innermost frame shown is one, for
 * children when any is.
 */
int cli_report_by_host(const struct cli_source *src, const struct topview_filter *f,
		       const char *symbol, size_t max_rows)
{
	struct count_rows rows = { 0 };
	struct host_rows hr = { 0 };
	struct np_fleet_filter ff;
	struct stack_map map = { 0 };
	uint64_t all = 0;
	char err[600];
	struct np_ch *c;
	int ret;

	c = cli_cluster_open("report", src, &ret);
	if (!c)
		return ret;
	cli_cluster_filter(src, f, &ff);
	ff.by_host = 1;
	ff.symbol = symbol;
	ret = np_fleet_query_hosts(c, &ff, host_total, &hr, err, sizeof(err));
	if (ret) {
		cli_error("report", "%s", ret == -ENOMEM ? "out of memory" : err);
		ret = ret == -ENOMEM ? EXIT_FAILURE_RT : EXIT_BAD_INPUT;
	}
	if (!ret && symbol)
		ret = fetch("report", c, &ff, &rows, &map);
	np_ch_close(c);
	for (size_t i = 0; !ret && i < rows.n; i++) {
		const struct count_row *r = &rows.v[i];
		const struct stack_ent *e = map_find(&map, r->stack);
		struct host_row *h = host_get(&hr, r->host);
		int leaf = 1, self = 0, any = 0;

		if (!h) {
			cli_error("report", "out of memory");
			ret = EXIT_FAILURE_RT;
			break;
		}
		for (unsigned int j = 0; e && j < e->nr; j++) {
			if (!frame_shown(f, &e->frames[j]))
				continue;
			if (!strcmp(e->frames[j].sym, symbol)) {
				any = 1;
				self |= leaf;
			}
			leaf = 0;
		}
		if (self)
			h->self += r->count;
		if (any)
			h->children += r->count;
	}
	for (size_t i = 0; i < hr.n; i++)
		all += hr.v[i].total;
	if (!ret) {
		qsort(hr.v, hr.n, sizeof(*hr.v), host_cmp);
		printf("# nmiprof report: %s\n# samples: %" PRIu64 "  hosts: %zu  sort: host%s%s\n#\n",
		       src->cluster, all, hr.n, symbol ? "  symbol: " : "",
		       symbol ? symbol : "");
		if (symbol)
			printf("%12s %12s %12s  %s\n", "Self", "Children", "Samples", "Host");
		else
			printf("%8s %12s  %s\n", "Overhead", "Samples", "Host");
		for (size_t i = 0; i < hr.n && (!max_rows || i < max_rows); i++) {
			const struct host_row *h = &hr.v[i];

			if (symbol && !h->children)
				continue;
			if (symbol)
				printf("%12" PRIu64 " %12" PRIu64 " %12" PRIu64 "  %s\n",
				       h->self, h->children, h->total, h->host);
			else
				printf("%7.2f%% %12" PRIu64 "  %s\n",
				       all ? 100.0 * (double)h->total / (double)all : 0,
				       h->total, h->host);
		}
	}
	for (size_t i = 0; i < hr.n; i++)
		free(hr.v[i].host);
	free(hr.v);
	rows_free(&rows);
	map_free(&map);
	return ret;
}
