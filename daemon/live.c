// SPDX-License-Identifier: GPL-2.0
/*
 * The live ring of per-second aggregates (see live.h).
 *
 * Slot i holds monotonic second sec with sec % nslots == i; a sample for
 * a newer second recycles the slot.  Each slot is an open-addressing
 * hash table of (stack, pid, cpu, comm) -> count.  Stacks are interned
 * in an np_stacktab (frames of dso, symbol, kernel; offset dropped, so a
 * stack is a chain of functions) and a key is a small integer: a slot
 * never holds strings, and a stack common to many seconds is stored once.
 *
 * Symbolizing every sample's addresses would cost more than the rest of
 * ingest together.  Two direct-mapped caches make a repeat cheap:
 * (pid, raw stack hash) -> stack id, one hash over the addresses and one
 * probe per sample, and behind it (pid, address) -> frame id for the
 * frames of a new stack.  Cached names go stale when a process's address
 * space changes (exec, mmap, exit and pid reuse), so each entry records
 * the generation of its pid's bucket in a small table, and a side-band
 * event for a pid bumps that bucket: one store invalidates every entry
 * of the pid (and of the few pids sharing the bucket, which merely costs
 * them a lookup).  A busy machine mmaps all the time; invalidating
 * everything on every mmap would empty the caches.
 *
 * Memory.  The seconds' tables and the stack table together stay under
 * a budget (NPD_LIVE_BUDGET): at 10^5 distinct stacks a minute, 300 s of
 * per-second tables would take 100+ MiB.  When a table must grow past
 * it, the oldest seconds are dropped first: a live view is about the
 * last few seconds, and the store keeps everything.  Queries report the
 * seconds they actually cover.  Only when the current second alone fills
 * the budget are samples of new keys counted without a key (top's
 * "matched" falls short of "samples").
 *
 * The stack table only grows, so when it passes half the budget it is
 * rebuilt (at a second boundary) from the stacks the ring still
 * references: the window's data survives, stacks that aged out go.  If
 * the window's own stacks still take over a quarter of the budget, the
 * older half of the window goes too, until they do not.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "live.h"
#include "stacktab.h"
#include "resolve.h"

/* Tables and stack table, not counting the fixed caches (~500 KiB). */
#define NPD_LIVE_BUDGET		(4U << 20)
/* Past this many distinct keys in one second, new keys are only counted. */
#define NPD_LIVE_MAX_KEYS	(1U << 16)
#define NPD_LIVE_MIN_CAP	64U
#define NPD_LIVE_MAX_DEPTH	256	/* frames of a stack: all a sample has */
_Static_assert(2 * NMIPROF_MAX_FRAMES + 1 <= NPD_LIVE_MAX_DEPTH,
	       "a resolved sample fits the live view's stacks");
#define NPD_LIVE_CACHE_BITS	12	/* 4096 entries, 96 KiB */
#define NPD_LIVE_SCACHE_BITS	14	/* 16384 stacks, 384 KiB */
#define NPD_KERNEL_PID		UINT32_MAX	/* kernel addresses: any pid */

/* 20 bytes: the comm is a string of the stack table. */
struct npd_live_ent {
	uint32_t stack, pid, cpu;
	uint32_t comm;		/* string id in npd_live.frames */
	uint32_t count;		/* 0: empty */
};

struct npd_live_slot {
	uint64_t sec;		/* UINT64_MAX: never used */
	uint64_t samples, lost;	/* every sample, including unkeyed ones */
	uint32_t cap, nr;
	struct npd_live_ent *tab;
};

struct npd_live_cached {
	uint64_t ip;
	uint32_t pid;		/* NPD_KERNEL_PID for kernel addresses */
	uint32_t gen;		/* valid while == its pid bucket's generation */
	uint32_t frame;
	uint32_t valid;
};

/* A raw stack seen before: its interned stack id. */
struct npd_live_scached {
	uint64_t hash;		/* of pid, ip and every address */
	uint32_t pid, gen;	/* gen: of pid's bucket at insertion */
	uint32_t stack;		/* NP_STACK_EMPTY (never a result): unused */
};

struct npd_live {
	uint32_t nslots;
	struct npd_live_slot *slots;
	size_t ents;		/* table entries held by all slots */
	struct np_stacktab *frames;	/* frames, comms, the stacks' call trie */
	size_t budget;			/* tables + stack table, bytes */
	size_t rebuild_at;		/* stack table bytes that trigger a rebuild */
	np_symbolize_fn symbolize;
	void *symbolize_arg;
	struct npd_live_cached *cache;
	struct npd_live_scached *scache;
	struct np_pidgen pidgen;
};

struct npd_live *npd_live_new(uint32_t seconds, np_symbolize_fn symbolize,
			      void *arg)
{
	struct npd_live *l = calloc(1, sizeof(*l));

	if (!l)
		return NULL;
	l->nslots = seconds ? seconds : 1;
	l->symbolize = symbolize;
	l->symbolize_arg = arg;
	l->slots = calloc(l->nslots, sizeof(*l->slots));
	l->frames = np_stacktab_new();
	l->cache = calloc(1U << NPD_LIVE_CACHE_BITS, sizeof(*l->cache));
	l->scache = calloc(1U << NPD_LIVE_SCACHE_BITS, sizeof(*l->scache));
	l->budget = NPD_LIVE_BUDGET;
	l->rebuild_at = NPD_LIVE_BUDGET / 2;
	if (!l->slots || !l->frames || !l->cache || !l->scache) {
		npd_live_free(l);
		return NULL;
	}
	for (uint32_t i = 0; i < l->nslots; i++)
		l->slots[i].sec = UINT64_MAX;
	return l;
}

void npd_live_free(struct npd_live *l)
{
	if (!l)
		return;
	for (uint32_t i = 0; l->slots && i < l->nslots; i++)
		free(l->slots[i].tab);
	free(l->slots);
	free(l->cache);
	free(l->scache);
	if (l->frames)
		np_stacktab_free(l->frames);
	free(l);
}

void npd_live_set_stack_budget(struct npd_live *l, size_t bytes)
{
	l->rebuild_at = bytes;
}

void npd_live_set_budget(struct npd_live *l, size_t bytes)
{
	l->budget = bytes;
	l->rebuild_at = bytes / 2;
}

uint32_t npd_live_seconds(const struct npd_live *l)
{
	return l->nslots;
}

/* What the budget counts: every second's table and the stack table. */
static size_t npd_live_budgeted(const struct npd_live *l)
{
	return l->ents * sizeof(struct npd_live_ent) + np_stacktab_mem(l->frames);
}

size_t npd_live_mem(const struct npd_live *l)
{
	return sizeof(*l) + l->nslots * sizeof(*l->slots) +
	       (sizeof(*l->cache) << NPD_LIVE_CACHE_BITS) +
	       (sizeof(*l->scache) << NPD_LIVE_SCACHE_BITS) +
	       npd_live_budgeted(l);
}

static uint32_t npd_live_hash(uint32_t stack, uint32_t pid, uint32_t cpu,
			      uint32_t comm)
{
	return (uint32_t)(np_hash_add(np_hash_u64((uint64_t)stack << 32 | pid),
				      (uint64_t)cpu << 32 | comm) >> 32);
}

static void npd_live_drop(struct npd_live *l, struct npd_live_slot *s)
{
	free(s->tab);
	l->ents -= s->cap;
	memset(s, 0, sizeof(*s));
	s->sec = UINT64_MAX;
}

/* Drop the oldest second other than keep.  0, or -1 if there is none. */
static int npd_live_drop_oldest(struct npd_live *l, uint64_t keep)
{
	struct npd_live_slot *old = NULL;

	for (uint32_t i = 0; i < l->nslots; i++) {
		struct npd_live_slot *s = &l->slots[i];

		if (s->sec != UINT64_MAX && s->sec != keep &&
		    (!old || s->sec < old->sec))
			old = s;
	}
	if (!old)
		return -1;
	npd_live_drop(l, old);
	return 0;
}

/* Drop the older half of the seconds other than keep.  -1 if none. */
static int npd_live_drop_older_half(struct npd_live *l, uint64_t keep)
{
	uint32_t n = 0;

	for (uint32_t i = 0; i < l->nslots; i++)
		n += l->slots[i].sec != UINT64_MAX && l->slots[i].sec != keep;
	if (!n)
		return -1;
	for (n = (n + 1) / 2; n; n--)
		npd_live_drop_oldest(l, keep);
	return 0;
}

static void npd_live_rebuild(struct npd_live *l, uint64_t keep);

/* The slot for sec, recycled if it holds an older second. */
static struct npd_live_slot *npd_live_slot(struct npd_live *l, uint64_t sec)
{
	struct npd_live_slot *s = &l->slots[sec % l->nslots];

	if (s->sec == sec)
		return s;
	if (s->sec != UINT64_MAX && s->sec > sec)
		return NULL;	/* older than the ring: too late to count */
	/* Shrink a table a burst left oversized, else just clear it. */
	if (s->cap > NPD_LIVE_MIN_CAP && s->nr < s->cap / 8) {
		npd_live_drop(l, s);
	} else if (s->tab) {
		memset(s->tab, 0, (size_t)s->cap * sizeof(*s->tab));
	}
	s->sec = sec;
	s->samples = s->lost = 0;
	s->nr = 0;
	/* Once a second at most, and with one slot less to carry over. */
	if (np_stacktab_mem(l->frames) > l->rebuild_at)
		npd_live_rebuild(l, sec);
	return s;
}

static struct npd_live_ent *npd_live_find(struct npd_live_ent *tab, uint32_t cap,
					  const struct npd_live_ent *key)
{
	uint32_t i = npd_live_hash(key->stack, key->pid, key->cpu, key->comm) & (cap - 1);

	for (;; i = (i + 1) & (cap - 1)) {
		struct npd_live_ent *e = &tab[i];

		if (!e->count)
			return e;
		if (e->stack == key->stack && e->pid == key->pid &&
		    e->cpu == key->cpu && e->comm == key->comm)
			return e;
	}
}

static int npd_live_grow(struct npd_live *l, struct npd_live_slot *s)
{
	uint32_t cap = s->cap ? s->cap * 2 : NPD_LIVE_MIN_CAP;
	struct npd_live_ent *tab;

	/* Room from the oldest seconds first: the newest matter most. */
	while (npd_live_budgeted(l) + (size_t)(cap - s->cap) * sizeof(*tab) >
	       l->budget)
		if (npd_live_drop_oldest(l, s->sec))
			return -ENOSPC;
	tab = calloc(cap, sizeof(*tab));
	if (!tab)
		return -ENOMEM;
	for (uint32_t i = 0; i < s->cap; i++)
		if (s->tab[i].count)
			*npd_live_find(tab, cap, &s->tab[i]) = s->tab[i];
	free(s->tab);
	l->ents += cap - s->cap;
	s->tab = tab;
	s->cap = cap;
	return 0;
}

void npd_live_invalidate(struct npd_live *l, uint32_t pid)
{
	np_pidgen_bump(&l->pidgen, pid);
}

/* The interned frame (function) of (pid, ip), NP_ID_NONE on ENOMEM. */
static uint32_t npd_live_frame(struct npd_live *l, uint32_t pid, uint64_t ip,
			       int kernel)
{
	uint32_t key_pid = kernel ? NPD_KERNEL_PID : pid;
	/* Kernel text does not move under a running daemon. */
	uint32_t gen = kernel ? 0 : np_pidgen_get(&l->pidgen, pid);
	uint64_t h = np_hash_add(np_hash_u64(ip), key_pid);
	struct npd_live_cached *c = &l->cache[h >> (64 - NPD_LIVE_CACHE_BITS)];
	struct np_sym f;

	if (c->valid && c->ip == ip && c->pid == key_pid && c->gen == gen)
		return c->frame;
	memset(&f, 0, sizeof(f));
	if (l->symbolize)
		l->symbolize(l->symbolize_arg, pid, ip, kernel, &f);
	f.kernel = kernel;
	/* Group by function: the offset inside it (or the dso) is noise here. */
	f.offset = 0;
	c->frame = np_stacktab_frame(l->frames, &f);
	c->ip = ip;
	c->pid = key_pid;
	c->gen = gen;
	c->valid = c->frame != NP_ID_NONE;
	return c->frame;
}

/* Hash of a sample's raw stack (pid, ip and every address). */
static uint64_t npd_live_stack_hash(const struct np_sample *s)
{
	uint64_t h = np_hash_add(np_hash_u64(s->pid), s->ip);

	h = np_hash_add(h, (uint64_t)s->nr_kframes << 32 | s->nr_uframes);
	for (unsigned int i = 0; i < s->nr_kframes; i++)
		h = np_hash_add(h, s->kframes[i]);
	for (unsigned int i = 0; i < s->nr_uframes; i++)
		h = np_hash_add(h, s->uframes[i]);
	return h;
}

struct npd_live_frame_ctx {
	struct npd_live *l;
	uint32_t pid;
};

static uint32_t npd_live_frame_fn(void *arg, uint64_t ip, int kernel)
{
	struct npd_live_frame_ctx *c = arg;

	return npd_live_frame(c->l, c->pid, ip, kernel);
}

/* The stack id of s (resolve.h); NP_ID_NONE on ENOMEM. */
static uint32_t npd_live_stack(struct npd_live *l, const struct np_sample *s)
{
	uint64_t h = npd_live_stack_hash(s);
	uint32_t gen = np_pidgen_get(&l->pidgen, s->pid);
	struct npd_live_scached *c = &l->scache[h >> (64 - NPD_LIVE_SCACHE_BITS)];
	struct npd_live_frame_ctx ctx = { .l = l, .pid = s->pid };
	uint32_t node;

	/* A 64-bit hash collision within one pid is accepted as impossible. */
	if (c->stack != NP_STACK_EMPTY && c->hash == h && c->pid == s->pid &&
	    c->gen == gen)
		return c->stack;
	node = np_resolve_stack(l->frames, s, npd_live_frame_fn, &ctx);
	c->hash = h;
	c->pid = s->pid;
	c->gen = gen;
	c->stack = node == NP_ID_NONE ? NP_STACK_EMPTY : node;
	return node;
}

/*
 * Re-intern the stacks and comms the ring still counts into a fresh
 * table and renumber the entries.  On ENOMEM the ring is emptied instead
 * (a live view may lose its window, never the daemon its memory).
 */
static void npd_live_reintern(struct npd_live *l)
{
	struct np_stacktab *nt = np_stacktab_new();
	const struct np_sym *fr[NPD_LIVE_MAX_DEPTH];
	struct np_sym sy[NPD_LIVE_MAX_DEPTH];
	int failed = !nt;

	for (uint32_t i = 0; i < l->nslots && !failed; i++) {
		struct npd_live_slot *s = &l->slots[i];

		for (uint32_t j = 0; j < s->cap && !failed; j++) {
			struct npd_live_ent *e = &s->tab[j];
			const char *comm;
			unsigned int n;

			if (!e->count)
				continue;
			n = np_stacktab_walk(l->frames, e->stack, fr, NPD_LIVE_MAX_DEPTH);
			for (unsigned int k = 0; k < n; k++)
				sy[k] = *fr[k];
			/* Same ids in every slot, so the hash position is kept. */
			e->stack = np_stacktab_stack(nt, sy, n);
			comm = np_stacktab_str_get(l->frames, e->comm);
			e->comm = np_stacktab_str(nt, comm, strlen(comm));
			failed = e->stack == NP_ID_NONE || e->comm == NP_ID_NONE;
		}
	}
	/*
	 * Ids changed: hash positions in each slot table did too, so
	 * re-insert each table's entries in place (grow cannot fail here:
	 * same capacity).
	 */
	for (uint32_t i = 0; i < l->nslots && !failed; i++) {
		struct npd_live_slot *s = &l->slots[i];
		struct npd_live_ent *tab;

		if (!s->cap)
			continue;
		tab = calloc(s->cap, sizeof(*tab));
		if (!tab) {
			failed = 1;
			break;
		}
		for (uint32_t j = 0; j < s->cap; j++)
			if (s->tab[j].count)
				*npd_live_find(tab, s->cap, &s->tab[j]) = s->tab[j];
		free(s->tab);
		s->tab = tab;
	}
	if (failed) {
		for (uint32_t i = 0; i < l->nslots; i++) {
			if (l->slots[i].tab)
				memset(l->slots[i].tab, 0,
				       (size_t)l->slots[i].cap * sizeof(*l->slots[i].tab));
			l->slots[i].nr = 0;
		}
		if (nt)
			np_stacktab_free(nt);
		np_stacktab_clear(l->frames);
	} else {
		np_stacktab_free(l->frames);
		l->frames = nt;
	}
	memset(l->cache, 0, sizeof(*l->cache) << NPD_LIVE_CACHE_BITS);
	memset(l->scache, 0, sizeof(*l->scache) << NPD_LIVE_SCACHE_BITS);
}

/*
 * The stack table past rebuild_at: keep only what the ring references,
 * and if that alone is over a quarter of the budget, the older half of
 * the window goes, again, until it is not.  keep: the second being
 * started (empty), never dropped.
 */
static void npd_live_rebuild(struct npd_live *l, uint64_t keep)
{
	npd_live_reintern(l);
	while (np_stacktab_mem(l->frames) > l->budget / 4 &&
	       !npd_live_drop_older_half(l, keep))
		npd_live_reintern(l);
}

void npd_live_sample(struct npd_live *l, uint64_t sec, const struct np_sample *smp)
{
	struct npd_live_slot *s = npd_live_slot(l, sec);
	struct npd_live_ent key = { .pid = smp->pid, .cpu = smp->cpu }, *e;

	if (!s)
		return;
	s->samples++;
	/*
	 * New stacks grow the stack table: past the budget, make room from
	 * the oldest seconds, or count the sample without a key.
	 */
	while (npd_live_budgeted(l) > l->budget)
		if (npd_live_drop_oldest(l, sec))
			return;
	key.stack = npd_live_stack(l, smp);
	if (key.stack == NP_ID_NONE)
		return;
	key.comm = np_stacktab_str(l->frames, smp->comm,
				   strnlen(smp->comm, NMIPROF_COMM_LEN - 1));
	if (key.comm == NP_ID_NONE)
		return;
	if ((s->nr + 1) * 2 > s->cap) {
		if (s->nr >= NPD_LIVE_MAX_KEYS || npd_live_grow(l, s))
			goto full;
	}
	e = npd_live_find(s->tab, s->cap, &key);
	if (!e->count) {
		*e = key;
		s->nr++;
	}
	e->count++;
	return;
full:
	/* Still findable if the key already exists. */
	if (s->cap) {
		e = npd_live_find(s->tab, s->cap, &key);
		if (e->count)
			e->count++;
	}
}

void npd_live_lost(struct npd_live *l, uint64_t sec, uint64_t lost)
{
	struct npd_live_slot *s = npd_live_slot(l, sec);

	if (s)
		s->lost += lost;
}

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
};

static struct npd_live_row *npd_rows_find(struct npd_live_rows *r,
					  const struct npd_live_ent *key)
{
	uint32_t i = npd_live_hash(key->stack, key->pid, key->cpu, key->comm) & (r->cap - 1);

	for (;; i = (i + 1) & (r->cap - 1)) {
		struct npd_live_row *row = &r->v[i];

		if (!row->count)
			return row;
		if (row->key.stack == key->stack && row->key.pid == key->pid &&
		    row->key.cpu == key->cpu && row->key.comm == key->comm)
			return row;
	}
}

static int npd_rows_add(struct npd_live_rows *r, const struct npd_live_ent *key,
			uint64_t count)
{
	struct npd_live_row *row;

	if ((r->nr + 1) * 2 > r->cap) {
		struct npd_live_rows n = { .cap = r->cap ? r->cap * 2 : 256 };

		n.v = calloc(n.cap, sizeof(*n.v));
		if (!n.v)
			return -ENOMEM;
		for (uint32_t i = 0; i < r->cap; i++)
			if (r->v[i].count)
				*npd_rows_find(&n, &r->v[i].key) = r->v[i];
		n.nr = r->nr;
		free(r->v);
		*r = n;
	}
	row = npd_rows_find(r, key);
	if (!row->count) {
		row->key = *key;
		r->nr++;
	}
	row->count += count;
	return 0;
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
		for (uint32_t j = 0; j < s->cap; j++) {
			const struct npd_live_ent *e = &s->tab[j];

			if (!e->count || !npd_live_match(l, pid, cpu, comm, e))
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
	uint32_t nr = 0;

	*out = NULL;
	if (!rows->nr)
		return 0;
	*out = malloc(rows->nr * sizeof(**out));
	if (!*out)
		return -ENOMEM;
	for (uint32_t i = 0; i < rows->cap; i++)
		if (rows->v[i].count)
			(*out)[nr++] = rows->v[i];
	qsort(*out, nr, sizeof(**out), npd_row_cmp);
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

		e->kernel = f->kernel;
		e->dso = strdup(f->dso ? f->dso : "[unknown]");
		if (!e->dso)
			return -ENOMEM;
		if (f->name && !(e->sym = strdup(f->name)))
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
	free(c.rows.v);
	return 0;
nomem:
	free(v);
	free(c.rows.v);
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
	free(rows.v);
	return 0;
nomem:
	free(map);
	free(v);
	free(rows.v);
	np_ctl_stacks_free(t);
	return -ENOMEM;
}
