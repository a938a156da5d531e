// SPDX-License-Identifier: GPL-2.0
/*
 * topview: symbol-level hot-spot model (see topview.h).
 *
 * Everything is interned into flat arrays indexed by uint32 ids and found
 * through open-addressing hash indexes, so a refresh touches contiguous
 * memory and a 100k-row view sorts in a few milliseconds.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "topview.h"
#include "np_grow.h"
#include "np_idx.h"

/* Weights below this are dust left by decay: hidden, then pruned. */
#define TOPVIEW_DUST		0.05

/* ---------------------------------------------------------------- */
/* Indexes: np_idx32 over each table, the hash kept in the item.    */
/* ---------------------------------------------------------------- */

static uint32_t hash_words(const uint32_t *w, size_t n)
{
	return (uint32_t)np_hash_bytes(w, n * sizeof(*w), 0);
}

typedef int (*idx_eq_fn)(const void *tab, uint32_t item, const void *key);

/* The item of tab that key matches, or -1. */
static int64_t idx_find(const struct np_idx32 *x, uint32_t hv, const void *tab,
			idx_eq_fn eq, const void *key)
{
	uint32_t pos = np_idx32_first(x, hv), id;

	while ((id = np_idx32_next(x, &pos)) != NP_IDX_NONE)
		if (eq(tab, id, key))
			return id;
	return -1;
}

/* Re-index items [0, nr) after they moved. */
static int idx_rebuild(struct np_idx32 *x, size_t nr, const void *tab,
		       np_idx32_hash_fn hash)
{
	np_idx32_clear(x);
	for (size_t i = 0; i < nr; i++)
		if (np_idx32_insert(x, hash(tab, (uint32_t)i), (uint32_t)i,
				    hash, tab))
			return -ENOMEM;
	return 0;
}

/* ---------------------------------------------------------------- */
/* Tables                                                           */
/* ---------------------------------------------------------------- */

struct strtab {
	char **str;
	uint32_t *hash;
	uint32_t *bid;	/* a dso's build-id string, else NO_ID */
	size_t nr, cap_str, cap_hash, cap_bid;
	struct np_idx32 idx;
};

struct sym {
	uint32_t dso, name;
	uint32_t kernel;
	uint32_t hash;
};

struct stack {
	uint32_t off, nr;	/* ids in topview.frames[off .. off + nr) */
	uint32_t hash;
};

struct bucket {
	uint32_t cpu, pid, tid, comm, stack;
	uint32_t hash;
	double w;
};

/* A row's key: the bucket's and the frame's fields the keys group by,
 * the others NO_ID (strings) or 0. */
#define NO_ID	UINT32_MAX

struct row_key {
	uint32_t comm, pid, tid, cpu, dso, sym, kernel;
};

struct row {
	struct topview_row pub;	/* first: topview_row hands out &pub */
	struct row_key k;
	uint32_t hash;
	uint64_t stamp;		/* last sample generation counted in children */
};

struct edge {
	uint32_t caller, callee;	/* row ids */
	uint32_t hash;
	double w;
	uint64_t stamp;
};

struct topview {
	struct strtab strs;

	struct sym *syms;
	size_t nr_syms, cap_syms;
	struct np_idx32 sym_idx;

	uint32_t *frames;	/* stack contents, sym ids */
	size_t nr_frames, cap_frames;
	struct stack *stacks;
	size_t nr_stacks, cap_stacks;
	struct np_idx32 stack_idx;

	struct bucket *buckets;
	size_t nr_buckets, cap_buckets;
	struct np_idx32 bucket_idx;

	struct row *rows;
	size_t nr_rows, cap_rows;
	struct np_idx32 row_idx;

	struct edge *edges;
	size_t nr_edges, cap_edges;
	struct np_idx32 edge_idx;

	uint32_t *view;		/* sorted row ids */
	size_t nr_view, cap_view;

	struct topview_keys keys;
	unsigned keymask;	/* 1 << enum topview_key */

	struct topview_filter filter;
	uint32_t filter_comm;	/* interned filter.comm, or UINT32_MAX */
	double total, total_raw;
	uint64_t gen;		/* sample generation for children dedup */

	uint32_t *scratch;	/* one sample's sym ids */
	uint32_t *scratch_rows;
	size_t cap_scratch, cap_scratch_rows;
	struct np_frame *scratch_frames;
	size_t cap_scratch_frames;
};

/* strings */

static uint32_t str_hash_at(const void *tab, uint32_t i)
{
	return ((const struct strtab *)tab)->hash[i];
}

static int str_eq(const void *tab, uint32_t i, const void *key)
{
	return !strcmp(((const struct strtab *)tab)->str[i], key);
}

static int64_t str_intern(struct strtab *t, const char *s)
{
	uint32_t hv = (uint32_t)np_hash_str(s);
	int64_t id;
	char *copy;

	id = idx_find(&t->idx, hv, t, str_eq, s);
	if (id >= 0)
		return id;
	if (NP_GROW(t->str, t->cap_str, t->nr + 1) ||
	    NP_GROW(t->hash, t->cap_hash, t->nr + 1) ||
	    NP_GROW(t->bid, t->cap_bid, t->nr + 1))
		return -ENOMEM;
	copy = strdup(s);
	if (!copy)
		return -ENOMEM;
	t->str[t->nr] = copy;
	t->hash[t->nr] = hv;
	t->bid[t->nr] = NO_ID;
	if (np_idx32_insert(&t->idx, hv, (uint32_t)t->nr, str_hash_at, t)) {
		free(copy);
		return -ENOMEM;
	}
	return (int64_t)t->nr++;
}

/* Lookup only: UINT32_MAX when the string was never seen. */
static uint32_t str_lookup(struct strtab *t, const char *s)
{
	int64_t id = idx_find(&t->idx, (uint32_t)np_hash_str(s), t, str_eq, s);
	return id < 0 ? UINT32_MAX : (uint32_t)id;
}

/* symbols */

static uint32_t sym_hash_at(const void *tab, uint32_t i)
{
	return ((const struct topview *)tab)->syms[i].hash;
}

static int sym_eq(const void *tab, uint32_t i, const void *key)
{
	const struct sym *a = &((const struct topview *)tab)->syms[i];
	const struct sym *b = key;

	return a->dso == b->dso && a->name == b->name && a->kernel == b->kernel;
}

/*
 * The build-id of dso, kept once per object as the stack table does (the
 * latest one given wins: a library replaced at the same path); it does
 * not split rows.  0 or -ENOMEM.
 */
static int dso_build_id(struct strtab *t, uint32_t dso, const char *bid)
{
	int64_t b;

	if (!bid || !*bid ||
	    (t->bid[dso] != NO_ID && !strcmp(t->str[t->bid[dso]], bid)))
		return 0;
	b = str_intern(t, bid);
	if (b < 0)
		return -ENOMEM;
	t->bid[dso] = (uint32_t)b;
	return 0;
}

static int64_t sym_intern(struct topview *tv, const struct np_frame *f)
{
	int64_t dso = str_intern(&tv->strs, f->dso ? f->dso : "[unknown]");
	int64_t name = str_intern(&tv->strs, f->sym ? f->sym : "[unknown]");
	struct sym k;
	uint32_t w[3];
	int64_t id;

	if (dso < 0 || name < 0 || dso_build_id(&tv->strs, (uint32_t)dso, f->build_id))
		return -ENOMEM;
	k.dso = (uint32_t)dso;
	k.name = (uint32_t)name;
	k.kernel = !!f->kernel;
	w[0] = k.dso;
	w[1] = k.name;
	w[2] = k.kernel;
	k.hash = hash_words(w, 3);
	id = idx_find(&tv->sym_idx, k.hash, tv, sym_eq, &k);
	if (id >= 0)
		return id;
	if (NP_GROW(tv->syms, tv->cap_syms, tv->nr_syms + 1))
		return -ENOMEM;
	tv->syms[tv->nr_syms] = k;
	if (np_idx32_insert(&tv->sym_idx, k.hash, (uint32_t)tv->nr_syms, sym_hash_at, tv))
		return -ENOMEM;
	return (int64_t)tv->nr_syms++;
}

/* stacks */

struct stack_key {
	const uint32_t *ids;
	uint32_t nr;
};

static uint32_t stack_hash_at(const void *tab, uint32_t i)
{
	return ((const struct topview *)tab)->stacks[i].hash;
}

static int stack_eq(const void *tab, uint32_t i, const void *key)
{
	const struct topview *tv = tab;
	const struct stack *s = &tv->stacks[i];
	const struct stack_key *k = key;

	return s->nr == k->nr &&
	       !memcmp(tv->frames + s->off, k->ids, k->nr * sizeof(*k->ids));
}

static int64_t stack_intern(struct topview *tv, const uint32_t *ids, uint32_t nr)
{
	struct stack_key k = { ids, nr };
	uint32_t hv = hash_words(ids, nr);
	int64_t id;

	id = idx_find(&tv->stack_idx, hv, tv, stack_eq, &k);
	if (id >= 0)
		return id;
	if (NP_GROW(tv->stacks, tv->cap_stacks, tv->nr_stacks + 1) ||
	    NP_GROW(tv->frames, tv->cap_frames, tv->nr_frames + nr))
		return -ENOMEM;
	memcpy(tv->frames + tv->nr_frames, ids, nr * sizeof(*ids));
	tv->stacks[tv->nr_stacks] = (struct stack){
		.off = (uint32_t)tv->nr_frames, .nr = nr, .hash = hv };
	tv->nr_frames += nr;
	if (np_idx32_insert(&tv->stack_idx, hv, (uint32_t)tv->nr_stacks, stack_hash_at, tv))
		return -ENOMEM;
	return (int64_t)tv->nr_stacks++;
}

/* buckets */

static uint32_t bucket_hash_at(const void *tab, uint32_t i)
{
	return ((const struct topview *)tab)->buckets[i].hash;
}

static int bucket_eq(const void *tab, uint32_t i, const void *key)
{
	const struct bucket *a = &((const struct topview *)tab)->buckets[i];
	const struct bucket *b = key;

	return a->cpu == b->cpu && a->pid == b->pid && a->tid == b->tid &&
	       a->comm == b->comm && a->stack == b->stack;
}

static struct bucket *bucket_get(struct topview *tv, uint32_t cpu, uint32_t pid,
				 uint32_t tid, uint32_t comm, uint32_t stack)
{
	struct bucket k = { .cpu = cpu, .pid = pid, .tid = tid, .comm = comm,
			    .stack = stack };
	uint32_t w[5] = { cpu, pid, tid, comm, stack };
	int64_t id;

	k.hash = hash_words(w, 5);
	id = idx_find(&tv->bucket_idx, k.hash, tv, bucket_eq, &k);
	if (id >= 0)
		return &tv->buckets[id];
	if (NP_GROW(tv->buckets, tv->cap_buckets, tv->nr_buckets + 1))
		return NULL;
	tv->buckets[tv->nr_buckets] = k;
	if (np_idx32_insert(&tv->bucket_idx, k.hash, (uint32_t)tv->nr_buckets, bucket_hash_at, tv))
		return NULL;
	return &tv->buckets[tv->nr_buckets++];
}

/* rows */

static uint32_t row_hash_at(const void *tab, uint32_t i)
{
	return ((const struct topview *)tab)->rows[i].hash;
}

static int row_eq(const void *tab, uint32_t i, const void *key)
{
	const struct row *a = &((const struct topview *)tab)->rows[i];
	const struct row *b = key;

	return !memcmp(&a->k, &b->k, sizeof(a->k));
}

static int keyed(const struct topview *tv, enum topview_key key)
{
	return !!(tv->keymask & (1U << key));
}

/* The row of frame sym of a sample of bucket b: the groups of the keys. */
static int64_t row_get(struct topview *tv, const struct bucket *b, uint32_t sym)
{
	const struct sym *s = &tv->syms[sym];
	int by_sym = keyed(tv, TOPVIEW_KEY_SYM);
	int by_dso = by_sym || keyed(tv, TOPVIEW_KEY_DSO);
	struct row k = { .k = {
		.comm = keyed(tv, TOPVIEW_KEY_COMM) ? b->comm : NO_ID,
		.pid = keyed(tv, TOPVIEW_KEY_PID) ? b->pid : 0,
		.tid = keyed(tv, TOPVIEW_KEY_TID) ? b->tid : 0,
		.cpu = keyed(tv, TOPVIEW_KEY_CPU) ? b->cpu : 0,
		.dso = by_dso ? s->dso : NO_ID,
		.sym = by_sym ? sym : NO_ID,
		.kernel = by_dso ? s->kernel : 0,
	} };
	int64_t id;

	k.hash = hash_words((const uint32_t *)&k.k, sizeof(k.k) / sizeof(uint32_t));
	id = idx_find(&tv->row_idx, k.hash, tv, row_eq, &k);
	if (id >= 0)
		return id;
	if (NP_GROW(tv->rows, tv->cap_rows, tv->nr_rows + 1))
		return -ENOMEM;
	k.pub.pid = k.k.pid;
	k.pub.tid = k.k.tid;
	k.pub.cpu = k.k.cpu;
	k.pub.kernel = (int)k.k.kernel;
	k.pub.comm = k.k.comm == NO_ID ? "" : tv->strs.str[k.k.comm];
	k.pub.dso = by_dso ? tv->strs.str[s->dso] : "";
	k.pub.sym = by_sym ? tv->strs.str[s->name] : "";
	tv->rows[tv->nr_rows] = k;
	if (np_idx32_insert(&tv->row_idx, k.hash, (uint32_t)tv->nr_rows, row_hash_at, tv))
		return -ENOMEM;
	return (int64_t)tv->nr_rows++;
}

/* edges */

static uint32_t edge_hash_at(const void *tab, uint32_t i)
{
	return ((const struct topview *)tab)->edges[i].hash;
}

static int edge_eq(const void *tab, uint32_t i, const void *key)
{
	const struct edge *a = &((const struct topview *)tab)->edges[i];
	const struct edge *b = key;

	return a->caller == b->caller && a->callee == b->callee;
}

static struct edge *edge_get(struct topview *tv, uint32_t caller, uint32_t callee)
{
	struct edge k = { .caller = caller, .callee = callee };
	uint32_t w[2] = { caller, callee };
	int64_t id;

	k.hash = hash_words(w, 2);
	id = idx_find(&tv->edge_idx, k.hash, tv, edge_eq, &k);
	if (id >= 0)
		return &tv->edges[id];
	if (NP_GROW(tv->edges, tv->cap_edges, tv->nr_edges + 1))
		return NULL;
	tv->edges[tv->nr_edges] = k;
	if (np_idx32_insert(&tv->edge_idx, k.hash, (uint32_t)tv->nr_edges, edge_hash_at, tv))
		return NULL;
	return &tv->edges[tv->nr_edges++];
}

/* ---------------------------------------------------------------- */
/* Accounting                                                       */
/* ---------------------------------------------------------------- */

static int scratch_reserve(struct topview *tv, size_t n)
{
	if (NP_GROW(tv->scratch, tv->cap_scratch, n) ||
	    NP_GROW(tv->scratch_rows, tv->cap_scratch_rows, n))
		return -ENOMEM;
	return 0;
}

static int bucket_passes(const struct topview *tv, const struct bucket *b)
{
	const struct topview_filter *f = &tv->filter;

	if (f->cpu >= 0 && b->cpu != (uint32_t)f->cpu)
		return 0;
	if (f->pid >= 0 && b->pid != (uint64_t)f->pid)
		return 0;
	if (f->comm[0] && b->comm != tv->filter_comm)
		return 0;
	return 1;
}

/* The bucket's stack with the frames the filter hides removed, in scratch. */
static uint32_t filtered_stack(struct topview *tv, const struct bucket *b)
{
	const struct stack *st = &tv->stacks[b->stack];
	const uint32_t *ids = tv->frames + st->off;
	uint32_t n = 0;

	for (uint32_t i = 0; i < st->nr; i++) {
		int k = (int)tv->syms[ids[i]].kernel;

		if ((k && tv->filter.kernel) || (!k && tv->filter.user))
			tv->scratch[n++] = ids[i];
	}
	return n;
}

/* Adds w of bucket b to rows and edges if the filter accepts it. */
static int account(struct topview *tv, const struct bucket *b, double w)
{
	uint32_t n;

	if (!bucket_passes(tv, b))
		return 0;
	n = filtered_stack(tv, b);
	if (!n)
		return 0;
	tv->total += w;
	tv->gen++;
	for (uint32_t i = 0; i < n; i++) {
		int64_t r = row_get(tv, b, tv->scratch[i]);

		if (r < 0)
			return -ENOMEM;
		tv->scratch_rows[i] = (uint32_t)r;
		if (i == 0)
			tv->rows[r].pub.self += w;
		/* Recursion: a symbol counts once per sample in children. */
		if (tv->rows[r].stamp != tv->gen) {
			tv->rows[r].stamp = tv->gen;
			tv->rows[r].pub.children += w;
		}
	}
	for (uint32_t i = 0; i + 1 < n; i++) {
		struct edge *e;

		/* Rows wider than a symbol: calls within one are no edge. */
		if (tv->scratch_rows[i + 1] == tv->scratch_rows[i] &&
		    !keyed(tv, TOPVIEW_KEY_SYM))
			continue;
		e = edge_get(tv, tv->scratch_rows[i + 1], tv->scratch_rows[i]);
		if (!e)
			return -ENOMEM;
		if (e->stamp != tv->gen) {
			e->stamp = tv->gen;
			e->w += w;
		}
	}
	return 0;
}

static int rebuild(struct topview *tv)
{
	tv->nr_rows = 0;
	tv->nr_edges = 0;
	tv->nr_view = 0;
	tv->total = 0;
	np_idx32_clear(&tv->row_idx);
	np_idx32_clear(&tv->edge_idx);
	for (size_t i = 0; i < tv->nr_buckets; i++) {
		size_t need = tv->stacks[tv->buckets[i].stack].nr;

		if (scratch_reserve(tv, need) ||
		    account(tv, &tv->buckets[i], tv->buckets[i].w))
			return -ENOMEM;
	}
	return 0;
}

/* ---------------------------------------------------------------- */
/* API                                                              */
/* ---------------------------------------------------------------- */

void topview_filter_init(struct topview_filter *f)
{
	memset(f, 0, sizeof(*f));
	f->cpu = -1;
	f->pid = -1;
	f->kernel = 1;
	f->user = 1;
}

static const char *const sort_names[TOPVIEW_SORT_NR] = {
	[TOPVIEW_SORT_SELF] = "self",
	[TOPVIEW_SORT_CHILDREN] = "children",
	[TOPVIEW_SORT_COMM] = "comm",
	[TOPVIEW_SORT_DSO] = "dso",
	[TOPVIEW_SORT_SYMBOL] = "symbol",
	[TOPVIEW_SORT_PID] = "pid",
};

int topview_sort_parse(const char *name)
{
	if (!strcmp(name, "sym"))
		return TOPVIEW_SORT_SYMBOL;
	if (!strcmp(name, "overhead"))
		return TOPVIEW_SORT_SELF;
	for (int i = 0; i < TOPVIEW_SORT_NR; i++)
		if (!strcmp(name, sort_names[i]))
			return i;
	return -1;
}

const char *topview_sort_name(enum topview_sort s)
{
	return (unsigned)s < TOPVIEW_SORT_NR ? sort_names[s] : "?";
}

static const char *const key_names[TOPVIEW_KEY_NR] = {
	[TOPVIEW_KEY_COMM] = "comm",
	[TOPVIEW_KEY_PID] = "pid",
	[TOPVIEW_KEY_TID] = "tid",
	[TOPVIEW_KEY_CPU] = "cpu",
	[TOPVIEW_KEY_DSO] = "dso",
	[TOPVIEW_KEY_SYM] = "sym",
};

const char *topview_key_name(enum topview_key key)
{
	return (unsigned)key < TOPVIEW_KEY_NR ? key_names[key] : "?";
}

int topview_keys_has(const struct topview_keys *k, enum topview_key key)
{
	for (unsigned i = 0; i < k->nr; i++)
		if (k->key[i] == key)
			return 1;
	return 0;
}

int topview_keys_parse(const char *list, struct topview_keys *k,
		       enum topview_sort *order, const char **bad)
{
	struct topview_keys out = { 0 };
	const char *p = list;

	do {
		size_t n = strcspn(p, ",");
		int key = -1;

		for (int i = 0; i < TOPVIEW_KEY_NR; i++)
			if (n == strlen(key_names[i]) && !strncmp(p, key_names[i], n))
				key = i;
		if (n == 6 && !strncmp(p, "symbol", n))
			key = TOPVIEW_KEY_SYM;
		if (key < 0 && ((n == 4 && !strncmp(p, "self", n)) ||
				(n == 8 && !strncmp(p, "overhead", n)))) {
			*order = TOPVIEW_SORT_SELF;
		} else if (key < 0 && n == 8 && !strncmp(p, "children", n)) {
			*order = TOPVIEW_SORT_CHILDREN;
		} else if (key < 0) {
			*bad = p;
			return -1;
		} else if (!topview_keys_has(&out, (enum topview_key)key)) {
			out.key[out.nr++] = (enum topview_key)key;
		}
		p += n;
	} while (*p++);
	if (!out.nr)
		return topview_keys_parse(TOPVIEW_KEYS_DEFAULT, k, order, bad);
	*k = out;
	return 0;
}

int topview_set_keys(struct topview *tv, const struct topview_keys *k)
{
	unsigned mask = 0;

	for (unsigned i = 0; i < k->nr && i < TOPVIEW_KEY_NR; i++)
		mask |= 1U << k->key[i];
	tv->keys = *k;
	if (mask == tv->keymask)
		return 0;
	tv->keymask = mask;
	return rebuild(tv);
}

const struct topview_keys *topview_keys(const struct topview *tv)
{
	return &tv->keys;
}

struct topview *topview_new(void)
{
	struct topview *tv = calloc(1, sizeof(*tv));

	if (!tv)
		return NULL;
	topview_filter_init(&tv->filter);
	tv->filter_comm = UINT32_MAX;
	topview_keys_parse(TOPVIEW_KEYS_DEFAULT, &tv->keys, &(enum topview_sort){ 0 },
			   &(const char *){ NULL });
	for (unsigned i = 0; i < tv->keys.nr; i++)
		tv->keymask |= 1U << tv->keys.key[i];
	return tv;
}

void topview_free(struct topview *tv)
{
	if (!tv)
		return;
	for (size_t i = 0; i < tv->strs.nr; i++)
		free(tv->strs.str[i]);
	free(tv->strs.str);
	free(tv->strs.hash);
	free(tv->strs.bid);
	np_idx32_free(&tv->strs.idx);
	free(tv->syms);
	np_idx32_free(&tv->sym_idx);
	free(tv->frames);
	free(tv->stacks);
	np_idx32_free(&tv->stack_idx);
	free(tv->buckets);
	np_idx32_free(&tv->bucket_idx);
	free(tv->rows);
	np_idx32_free(&tv->row_idx);
	free(tv->edges);
	np_idx32_free(&tv->edge_idx);
	free(tv->view);
	free(tv->scratch);
	free(tv->scratch_rows);
	free(tv->scratch_frames);
	free(tv);
}

int topview_add(struct topview *tv, const struct topview_sample *s)
{
	int64_t comm, stack;
	struct bucket *b;

	if (!s->nr_frames || !(s->weight > 0))
		return 0;
	if (s->nr_frames > UINT16_MAX || scratch_reserve(tv, s->nr_frames))
		return -ENOMEM;
	comm = str_intern(&tv->strs, s->comm ? s->comm : "");
	if (comm < 0)
		return -ENOMEM;
	for (unsigned i = 0; i < s->nr_frames; i++) {
		int64_t id = sym_intern(tv, &s->frames[i]);

		if (id < 0)
			return -ENOMEM;
		tv->scratch[i] = (uint32_t)id;
	}
	stack = stack_intern(tv, tv->scratch, s->nr_frames);
	if (stack < 0)
		return -ENOMEM;
	/* The filter's comm may have been interned only now. */
	if (tv->filter.comm[0] && tv->filter_comm == UINT32_MAX)
		tv->filter_comm = str_lookup(&tv->strs, tv->filter.comm);
	b = bucket_get(tv, s->cpu, s->pid, s->tid ? s->tid : s->pid,
		       (uint32_t)comm, (uint32_t)stack);
	if (!b)
		return -ENOMEM;
	b->w += s->weight;
	tv->total_raw += s->weight;
	return account(tv, b, s->weight);
}

int topview_add_row(struct topview *tv, const struct topview_row *r)
{
	int64_t comm = str_intern(&tv->strs, r->comm ? r->comm : "");
	int64_t dso = str_intern(&tv->strs, r->dso ? r->dso : "");
	int64_t sym = str_intern(&tv->strs, r->sym ? r->sym : "");
	struct row *row;

	if (comm < 0 || dso < 0 || sym < 0 ||
	    NP_GROW(tv->rows, tv->cap_rows, tv->nr_rows + 1))
		return -ENOMEM;
	/* Not indexed: no sample is ever counted in it. */
	row = &tv->rows[tv->nr_rows++];
	memset(row, 0, sizeof(*row));
	row->pub = *r;
	row->pub.comm = tv->strs.str[comm];
	row->pub.dso = tv->strs.str[dso];
	row->pub.sym = tv->strs.str[sym];
	row->k = (struct row_key){ NO_ID, 0, 0, 0, NO_ID, NO_ID, 0 };
	return 0;
}

void topview_add_shown(struct topview *tv, double shown)
{
	tv->total += shown;
	tv->total_raw += shown;
}

int topview_set_filter(struct topview *tv, const struct topview_filter *f)
{
	int same = tv->filter.cpu == f->cpu && tv->filter.pid == f->pid &&
		   !strncmp(tv->filter.comm, f->comm, TOPVIEW_COMM_MAX) &&
		   tv->filter.kernel == f->kernel && tv->filter.user == f->user;

	tv->filter = *f;
	tv->filter.comm[TOPVIEW_COMM_MAX - 1] = 0;
	tv->filter.search[TOPVIEW_SEARCH_MAX - 1] = 0;
	tv->filter_comm = tv->filter.comm[0] ?
			  str_lookup(&tv->strs, tv->filter.comm) : UINT32_MAX;
	/* The search only narrows the sorted view: no rebuild for it. */
	return same ? 0 : rebuild(tv);
}

const struct topview_filter *topview_filter(const struct topview *tv)
{
	return &tv->filter;
}

void topview_decay(struct topview *tv, double factor)
{
	size_t dust = 0;

	for (size_t i = 0; i < tv->nr_buckets; i++) {
		tv->buckets[i].w *= factor;
		dust += tv->buckets[i].w < TOPVIEW_DUST;
	}
	for (size_t i = 0; i < tv->nr_rows; i++) {
		tv->rows[i].pub.self *= factor;
		tv->rows[i].pub.children *= factor;
	}
	for (size_t i = 0; i < tv->nr_edges; i++)
		tv->edges[i].w *= factor;
	tv->total *= factor;
	tv->total_raw *= factor;

	/*
	 * Pruning costs a rebuild, so wait until dust is a quarter of the
	 * buckets: amortized, each bucket is rebuilt O(1) times per prune.
	 */
	if (dust < 1024 || dust * 4 < tv->nr_buckets)
		return;
	size_t n = 0;

	tv->total_raw = 0;
	for (size_t i = 0; i < tv->nr_buckets; i++) {
		if (tv->buckets[i].w < TOPVIEW_DUST)
			continue;
		tv->buckets[n++] = tv->buckets[i];
		tv->total_raw += tv->buckets[i].w;
	}
	tv->nr_buckets = n;
	if (idx_rebuild(&tv->bucket_idx, n, tv, bucket_hash_at) ||
	    rebuild(tv)) {
		/* Out of memory while shrinking: keep going with empty rows. */
		topview_zero(tv);
	}
}

void topview_zero(struct topview *tv)
{
	tv->nr_buckets = tv->nr_rows = tv->nr_edges = tv->nr_view = 0;
	tv->nr_stacks = tv->nr_frames = 0;
	np_idx32_clear(&tv->bucket_idx);
	np_idx32_clear(&tv->row_idx);
	np_idx32_clear(&tv->edge_idx);
	np_idx32_clear(&tv->stack_idx);
	tv->total = tv->total_raw = 0;
}

/* Sorting: qsort_r with the model as context. */

struct sort_ctx {
	const struct topview *tv;
	enum topview_sort key;
};

static int cmp_double_desc(double a, double b)
{
	return a < b ? 1 : a > b ? -1 : 0;
}

static int row_cmp(const void *pa, const void *pb, void *arg)
{
	const struct sort_ctx *c = arg;
	const struct row *ra = &c->tv->rows[*(const uint32_t *)pa];
	const struct row *rb = &c->tv->rows[*(const uint32_t *)pb];
	const struct topview_row *a = &ra->pub, *b = &rb->pub;
	int r = 0;

	switch (c->key) {
	case TOPVIEW_SORT_SELF:
		r = cmp_double_desc(a->self, b->self);
		break;
	case TOPVIEW_SORT_CHILDREN:
		r = cmp_double_desc(a->children, b->children);
		break;
	case TOPVIEW_SORT_COMM:
		r = strcmp(a->comm, b->comm);
		break;
	case TOPVIEW_SORT_DSO:
		r = strcmp(a->dso, b->dso);
		break;
	case TOPVIEW_SORT_SYMBOL:
		r = strcmp(a->sym, b->sym);
		break;
	case TOPVIEW_SORT_PID:
		r = a->pid < b->pid ? -1 : a->pid > b->pid;
		break;
	default:
		break;
	}
	if (!r)
		r = cmp_double_desc(a->self, b->self);
	if (!r)
		r = cmp_double_desc(a->children, b->children);
	if (!r)
		r = strcmp(a->sym, b->sym);
	if (!r)
		r = a->pid < b->pid ? -1 : a->pid > b->pid;
	if (!r)
		r = strcmp(a->dso, b->dso);
	if (!r)
		r = strcmp(a->comm, b->comm);
	if (!r)
		r = a->tid < b->tid ? -1 : a->tid > b->tid;
	if (!r)
		r = a->cpu < b->cpu ? -1 : a->cpu > b->cpu;
	if (!r)
		r = ra < rb ? -1 : ra > rb;
	return r;
}

size_t topview_sort(struct topview *tv, enum topview_sort key)
{
	const char *search = tv->filter.search;
	struct sort_ctx c = { tv, key };
	size_t n = 0;

	if (NP_GROW(tv->view, tv->cap_view, tv->nr_rows)) {
		tv->nr_view = 0;
		return 0;
	}
	for (size_t i = 0; i < tv->nr_rows; i++) {
		const struct topview_row *r = &tv->rows[i].pub;

		if (r->children < TOPVIEW_DUST)
			continue;
		if (search[0] && !strstr(keyed(tv, TOPVIEW_KEY_SYM) ? r->sym : r->dso,
					 search))
			continue;
		tv->view[n++] = (uint32_t)i;
	}
	if (n)
		qsort_r(tv->view, n, sizeof(*tv->view), row_cmp, &c);
	tv->nr_view = n;
	return n;
}

size_t topview_nr_rows(const struct topview *tv)
{
	return tv->nr_view;
}

const struct topview_row *topview_row(const struct topview *tv, size_t i)
{
	return i < tv->nr_view ? &tv->rows[tv->view[i]].pub : NULL;
}

double topview_total(const struct topview *tv)
{
	return tv->total;
}

double topview_total_raw(const struct topview *tv)
{
	return tv->total_raw;
}

static int edge_cmp(const void *pa, const void *pb)
{
	const struct topview_edge *a = pa, *b = pb;
	int r = cmp_double_desc(a->weight, b->weight);

	if (!r)
		r = strcmp(a->row->sym, b->row->sym);
	if (!r)
		r = a->row < b->row ? -1 : a->row > b->row;
	return r;
}

static size_t neighbours(const struct topview *tv, const struct topview_row *row,
			 int want_callers, struct topview_edge *out, size_t max)
{
	const struct row *r = (const struct row *)row;
	struct topview_edge *all;
	size_t id, n = 0;

	if (!row || r < tv->rows || r >= tv->rows + tv->nr_rows)
		return 0;
	id = (size_t)(r - tv->rows);
	/* A linear scan: done for one expanded row per refresh. */
	for (size_t i = 0; i < tv->nr_edges; i++)
		n += (want_callers ? tv->edges[i].callee : tv->edges[i].caller) == id &&
		     tv->edges[i].w >= TOPVIEW_DUST;
	if (!n || !max)
		return 0;
	all = malloc(n * sizeof(*all));
	if (!all)
		return 0;
	n = 0;
	for (size_t i = 0; i < tv->nr_edges; i++) {
		const struct edge *e = &tv->edges[i];

		if ((want_callers ? e->callee : e->caller) != id || e->w < TOPVIEW_DUST)
			continue;
		all[n].row = &tv->rows[want_callers ? e->caller : e->callee].pub;
		all[n].weight = e->w;
		n++;
	}
	qsort(all, n, sizeof(*all), edge_cmp);
	if (n > max)
		n = max;
	memcpy(out, all, n * sizeof(*out));
	free(all);
	return n;
}

size_t topview_callers(const struct topview *tv, const struct topview_row *row,
		       struct topview_edge *out, size_t max)
{
	return neighbours(tv, row, 1, out, max);
}

size_t topview_callees(const struct topview *tv, const struct topview_row *row,
		       struct topview_edge *out, size_t max)
{
	return neighbours(tv, row, 0, out, max);
}

struct stack_walk {
	topview_stack_fn fn;
	topview_rows_fn rows_fn;
	void *arg;
	const struct topview_row **rows;
	size_t cap_rows;
};

static int foreach_stack(struct topview *tv, struct stack_walk *w)
{
	for (size_t i = 0; i < tv->nr_buckets; i++) {
		const struct bucket *b = &tv->buckets[i];
		uint32_t n;
		int ret;

		if (b->w < TOPVIEW_DUST || !bucket_passes(tv, b))
			continue;
		if (scratch_reserve(tv, tv->stacks[b->stack].nr))
			return -ENOMEM;
		n = filtered_stack(tv, b);
		if (!n)
			continue;
		if (NP_GROW(tv->scratch_frames, tv->cap_scratch_frames, n))
			return -ENOMEM;
		for (uint32_t j = 0; j < n; j++) {
			const struct sym *s = &tv->syms[tv->scratch[j]];

			tv->scratch_frames[j] = (struct np_frame){
				.dso = tv->strs.str[s->dso],
				.sym = tv->strs.str[s->name],
				.kernel = (int)s->kernel,
				.build_id = tv->strs.bid[s->dso] == NO_ID ? NULL :
					    tv->strs.str[tv->strs.bid[s->dso]],
			};
		}
		if (w->fn) {
			ret = w->fn(tv->scratch_frames, n, b->pid,
				    tv->strs.str[b->comm], b->w, w->arg);
		} else {
			struct topview_stack ts = {
				.frames = tv->scratch_frames, .nr = n,
				.cpu = b->cpu, .pid = b->pid, .tid = b->tid,
				.comm = tv->strs.str[b->comm], .weight = b->w,
			};

			if (NP_GROW(w->rows, w->cap_rows, n))
				return -ENOMEM;
			/* Every frame's row exists: account() made it. */
			for (uint32_t j = 0; j < n; j++) {
				int64_t r = row_get(tv, b, tv->scratch[j]);

				if (r < 0)
					return -ENOMEM;
				w->rows[j] = &tv->rows[r].pub;
			}
			ts.rows = w->rows;
			ret = w->rows_fn(&ts, w->arg);
		}
		if (ret)
			return ret;
	}
	return 0;
}

int topview_foreach_stack(struct topview *tv, topview_stack_fn fn, void *arg)
{
	struct stack_walk w = { .fn = fn, .arg = arg };

	return foreach_stack(tv, &w);
}

int topview_foreach_row_stack(struct topview *tv, topview_rows_fn fn, void *arg)
{
	struct stack_walk w = { .rows_fn = fn, .arg = arg };
	int ret = foreach_stack(tv, &w);

	free(w.rows);
	return ret;
}
