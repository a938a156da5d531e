// SPDX-License-Identifier: GPL-2.0
/*
 * The live ring of per-second aggregates (see live.h).
 *
 * Slot i holds monotonic second sec with sec % nslots == i; a sample for
 * a newer second recycles the slot.  Each slot is a table of (stack,
 * pid, cpu, comm) -> count, indexed by an np_idx.  Stacks are interned
 * in an np_stacktab (frames of dso, symbol, kernel; a symbol's offset
 * dropped, so a stack is a chain of functions, but an unnamed address
 * keeps its offset in the dso, as in every other view) and a key is a
 * small integer: a slot never holds strings, and a stack common to many
 * seconds is stored once.
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
#include "live_impl.h"
#include "stacktab.h"
#include "resolve.h"

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
	for (uint32_t i = 0; l->slots && i < l->nslots; i++) {
		free(l->slots[i].tab);
		np_idx_free(&l->slots[i].idx);
	}
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
	return l->tab_bytes + np_stacktab_mem(l->frames);
}

size_t npd_live_mem(const struct npd_live *l)
{
	return sizeof(*l) + l->nslots * sizeof(*l->slots) +
	       (sizeof(*l->cache) << NPD_LIVE_CACHE_BITS) +
	       (sizeof(*l->scache) << NPD_LIVE_SCACHE_BITS) +
	       npd_live_budgeted(l);
}

/* A slot's table and index with room for cap keys (npd_live_grow). */
static size_t npd_live_tab_mem(uint32_t cap)
{
	size_t idx = 64;	/* np_idx's smallest, load <= 1/2 */

	if (!cap)
		return 0;
	while (idx < 2 * (size_t)cap)
		idx *= 2;
	return cap * sizeof(struct npd_live_ent) + idx * sizeof(uint64_t);
}

static void npd_live_drop(struct npd_live *l, struct npd_live_slot *s)
{
	free(s->tab);
	np_idx_free(&s->idx);
	l->tab_bytes -= npd_live_tab_mem(s->cap);
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
	} else {
		np_idx_clear(&s->idx);
	}
	s->sec = sec;
	s->samples = s->lost = 0;
	s->nr = 0;
	/* Once a second at most, and with one slot less to carry over. */
	if (np_stacktab_mem(l->frames) > l->rebuild_at)
		npd_live_rebuild(l, sec);
	return s;
}

static struct npd_live_ent *npd_live_find(struct npd_live_slot *s, uint32_t h,
					  const struct npd_live_ent *key)
{
	uint32_t pos = np_idx_first(&s->idx, h), i;

	while ((i = np_idx_next(&s->idx, h, &pos)) != NP_IDX_NONE) {
		struct npd_live_ent *e = &s->tab[i];

		if (e->stack == key->stack && e->pid == key->pid &&
		    e->cpu == key->cpu && e->comm == key->comm)
			return e;
	}
	return NULL;
}

/* Room for twice the keys, within the budget.  0, -ENOSPC or -ENOMEM. */
static int npd_live_grow(struct npd_live *l, struct npd_live_slot *s)
{
	uint32_t cap = s->cap ? s->cap * 2 : NPD_LIVE_MIN_CAP;
	size_t more = npd_live_tab_mem(cap) - npd_live_tab_mem(s->cap);
	struct npd_live_ent *tab;

	/* Room from the oldest seconds first: the newest matter most. */
	while (npd_live_budgeted(l) + more > l->budget)
		if (npd_live_drop_oldest(l, s->sec))
			return -ENOSPC;
	tab = realloc(s->tab, (size_t)cap * sizeof(*tab));
	if (!tab)
		return -ENOMEM;
	s->tab = tab;
	if (np_idx_reserve(&s->idx, cap))
		return -ENOMEM;	/* s->cap kept: the index fits it still */
	l->tab_bytes += more;
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
	/*
	 * Group by function: the offset inside it is noise here.  Unnamed
	 * code keeps its offset in the dso: one row per address, as report
	 * and in-process top show it (np_sym_unnamed), not one per library.
	 */
	if (f.name)
		f.offset = 0;
	c->frame = np_stacktab_frame(l->frames, &f);
	c->ip = ip;
	c->pid = key_pid;
	c->gen = gen;
	c->valid = c->frame != NP_ID_NONE;
	return c->frame;
}

/* Hash of a sample's raw stack (pid, ip and every address). */
static uint64_t npd_live_stack_hash(const struct np_ev_sample *s)
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
static uint32_t npd_live_stack(struct npd_live *l, const struct np_ev_sample *s)
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

		for (uint32_t j = 0; j < s->nr && !failed; j++) {
			struct npd_live_ent *e = &s->tab[j];
			const char *comm;
			unsigned int n;

			n = np_stacktab_walk(l->frames, e->stack, fr, NPD_LIVE_MAX_DEPTH);
			for (unsigned int k = 0; k < n; k++)
				sy[k] = *fr[k];
			e->stack = np_stacktab_stack(nt, sy, n);
			comm = np_stacktab_str_get(l->frames, e->comm);
			e->comm = np_stacktab_str(nt, comm, strlen(comm));
			failed = e->stack == NP_ID_NONE || e->comm == NP_ID_NONE;
		}
	}
	/* Ids changed, and so did their hashes: index each table anew. */
	for (uint32_t i = 0; i < l->nslots && !failed; i++) {
		struct npd_live_slot *s = &l->slots[i];

		np_idx_clear(&s->idx);
		/* Cannot fail: the index has room for cap keys. */
		for (uint32_t j = 0; j < s->nr; j++) {
			const struct npd_live_ent *e = &s->tab[j];
			uint32_t h = npd_live_hash(e->stack, e->pid, e->cpu,
						   e->comm);

			np_idx_insert(&s->idx, h, j);
		}
	}
	if (failed) {
		for (uint32_t i = 0; i < l->nslots; i++) {
			np_idx_clear(&l->slots[i].idx);
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

void npd_live_sample(struct npd_live *l, uint64_t sec,
		     const struct np_ev_sample *smp)
{
	struct npd_live_slot *s = npd_live_slot(l, sec);
	struct npd_live_ent *e, key = { .pid = smp->pid, .cpu = smp->cpu,
					.count = 1 };
	uint32_t h;

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
	h = npd_live_hash(key.stack, key.pid, key.cpu, key.comm);
	e = npd_live_find(s, h, &key);
	if (e) {
		e->count++;
		return;
	}
	/* Past the keys of a second or the budget: counted, unkeyed. */
	if (s->nr == s->cap &&
	    (s->nr >= NPD_LIVE_MAX_KEYS || npd_live_grow(l, s)))
		return;
	/* Cannot fail: the index has room for cap keys. */
	np_idx_insert(&s->idx, h, s->nr);
	s->tab[s->nr++] = key;
}

void npd_live_lost(struct npd_live *l, uint64_t sec, uint64_t lost)
{
	struct npd_live_slot *s = npd_live_slot(l, sec);

	if (s)
		s->lost += lost;
}
