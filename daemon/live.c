// SPDX-License-Identifier: GPL-2.0
/*
 * The live ring of per-second aggregates (see live.h).
 *
 * Slot i holds monotonic second sec with sec % nslots == i; a sample for
 * a newer second recycles the slot.  Each slot is an open-addressing
 * hash table of (frame, pid, cpu, comm) -> count.  Frames are interned
 * in an np_stacktab (dso, symbol, kernel; offset dropped) so a key is a
 * small integer and a slot never holds strings.
 *
 * Symbolizing every sample's address would cost more than the rest of
 * ingest together; a direct-mapped cache (pid, address) -> frame id
 * makes a repeated address one probe.  Cached names go stale when a
 * process's address space changes (exec, mmap, exit and pid reuse), so
 * each entry records the generation of its pid's bucket in a small
 * table, and a side-band event for a pid bumps that bucket: one store
 * invalidates every entry of the pid (and of the few pids sharing the
 * bucket, which merely costs them a lookup).  A busy machine mmaps all
 * the time; invalidating everything on every mmap would empty the cache.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "live.h"
#include "stacktab.h"

/*
 * Past this many distinct keys in one second, or when the tables of all
 * seconds together would pass NPD_LIVE_MAX_BYTES, samples of new keys are
 * only counted (top's "matched" then falls short of "samples"): a fork
 * storm must not turn the live ring into gigabytes.
 */
#define NPD_LIVE_MAX_KEYS	(1U << 16)
#define NPD_LIVE_MAX_BYTES	(32U << 20)
#define NPD_LIVE_MIN_CAP	64U
#define NPD_LIVE_CACHE_BITS	12	/* 4096 entries, 96 KiB */
#define NPD_LIVE_PIDGEN_BITS	10	/* 1024 pid buckets, 4 KiB */
#define NPD_KERNEL_PID		UINT32_MAX	/* kernel addresses: any pid */

struct npd_live_ent {
	uint32_t frame, pid, cpu, count;	/* count 0: empty */
	char comm[NMIPROF_COMM_LEN];
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

struct npd_live {
	uint32_t nslots;
	struct npd_live_slot *slots;
	size_t ents;		/* table entries held by all slots */
	struct np_stacktab *frames;
	np_symbolize_fn symbolize;
	void *symbolize_arg;
	struct npd_live_cached *cache;
	uint32_t pidgen[1U << NPD_LIVE_PIDGEN_BITS];
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
	if (!l->slots || !l->frames || !l->cache) {
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
	if (l->frames)
		np_stacktab_free(l->frames);
	free(l);
}

uint32_t npd_live_seconds(const struct npd_live *l)
{
	return l->nslots;
}

size_t npd_live_mem(const struct npd_live *l)
{
	size_t m = sizeof(*l) + l->nslots * sizeof(*l->slots) +
		   (sizeof(*l->cache) << NPD_LIVE_CACHE_BITS);

	for (uint32_t i = 0; i < l->nslots; i++)
		m += (size_t)l->slots[i].cap * sizeof(struct npd_live_ent);
	return m + np_stacktab_mem(l->frames);
}

static uint32_t npd_live_hash(uint32_t frame, uint32_t pid, uint32_t cpu,
			      const char *comm)
{
	uint64_t h = 0x9e3779b97f4a7c15ULL;

	h = (h ^ frame) * 0x100000001b3ULL;
	h = (h ^ pid) * 0x100000001b3ULL;
	h = (h ^ cpu) * 0x100000001b3ULL;
	for (unsigned int i = 0; i < NMIPROF_COMM_LEN && comm[i]; i++)
		h = (h ^ (unsigned char)comm[i]) * 0x100000001b3ULL;
	return (uint32_t)(h ^ (h >> 29));
}

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
		free(s->tab);
		l->ents -= s->cap;
		s->tab = NULL;
		s->cap = 0;
	} else if (s->tab) {
		memset(s->tab, 0, (size_t)s->cap * sizeof(*s->tab));
	}
	s->sec = sec;
	s->samples = s->lost = 0;
	s->nr = 0;
	return s;
}

static struct npd_live_ent *npd_live_find(struct npd_live_ent *tab, uint32_t cap,
					  const struct npd_live_ent *key)
{
	uint32_t i = npd_live_hash(key->frame, key->pid, key->cpu, key->comm) & (cap - 1);

	for (;; i = (i + 1) & (cap - 1)) {
		struct npd_live_ent *e = &tab[i];

		if (!e->count)
			return e;
		if (e->frame == key->frame && e->pid == key->pid &&
		    e->cpu == key->cpu && !strncmp(e->comm, key->comm, NMIPROF_COMM_LEN))
			return e;
	}
}

static int npd_live_grow(struct npd_live *l, struct npd_live_slot *s)
{
	uint32_t cap = s->cap ? s->cap * 2 : NPD_LIVE_MIN_CAP;
	struct npd_live_ent *tab;

	if ((l->ents - s->cap + cap) * sizeof(*tab) > NPD_LIVE_MAX_BYTES)
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

static uint32_t *npd_live_pidgen(struct npd_live *l, uint32_t pid)
{
	return &l->pidgen[(pid * 0x9e3779b9U) >> (32 - NPD_LIVE_PIDGEN_BITS)];
}

void npd_live_invalidate(struct npd_live *l, uint32_t pid)
{
	(*npd_live_pidgen(l, pid))++;
}

/* The interned innermost frame of (pid, ip), NP_ID_NONE on ENOMEM. */
static uint32_t npd_live_frame(struct npd_live *l, uint32_t pid, uint64_t ip,
			       int kernel)
{
	uint32_t key_pid = kernel ? NPD_KERNEL_PID : pid;
	/* Kernel text does not move under a running daemon. */
	uint32_t gen = kernel ? 0 : *npd_live_pidgen(l, pid);
	uint64_t h = (ip ^ ((uint64_t)key_pid << 32)) * 0x9e3779b97f4a7c15ULL;
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

void npd_live_sample(struct npd_live *l, uint64_t sec, uint32_t cpu,
		     uint32_t pid, const char *comm, uint64_t ip, int kernel)
{
	struct npd_live_slot *s = npd_live_slot(l, sec);
	struct npd_live_ent key = { .pid = pid, .cpu = cpu }, *e;

	if (!s)
		return;
	s->samples++;
	key.frame = npd_live_frame(l, pid, ip, kernel);
	if (key.frame == NP_ID_NONE)
		return;
	strncpy(key.comm, comm, NMIPROF_COMM_LEN - 1);
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

/* A result row: the fields of the sort key are set, the others zero. */
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
	uint32_t i = npd_live_hash(key->frame, key->pid, key->cpu, key->comm) & (r->cap - 1);

	for (;; i = (i + 1) & (r->cap - 1)) {
		struct npd_live_row *row = &r->v[i];

		if (!row->count)
			return row;
		if (row->key.frame == key->frame && row->key.pid == key->pid &&
		    !strncmp(row->key.comm, key->comm, NMIPROF_COMM_LEN))
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
	if (x->key.frame != y->key.frame)
		return x->key.frame < y->key.frame ? -1 : 1;
	if (x->key.pid != y->key.pid)
		return x->key.pid < y->key.pid ? -1 : 1;
	return strncmp(x->key.comm, y->key.comm, NMIPROF_COMM_LEN);
}

static int npd_live_match(const struct np_ctl_top_query *q,
			  const struct npd_live_ent *e)
{
	if (q->pid >= 0 && e->pid != (uint64_t)q->pid)
		return 0;
	if (q->cpu >= 0 && e->cpu != (uint32_t)q->cpu)
		return 0;
	if (q->comm[0] && strncmp(e->comm, q->comm, NMIPROF_COMM_LEN))
		return 0;
	return 1;
}

static int npd_live_emit(struct npd_live *l, const struct np_ctl_top_query *q,
			 const struct npd_live_row *row, struct np_ctl_top_entry *e)
{
	memset(e, 0, sizeof(*e));
	e->samples = row->count;
	e->pid = -1;
	switch (q->sort) {
	case NP_CTL_SORT_SYM: {
		const struct np_sym *f = np_stacktab_frame_get(l->frames, row->key.frame);

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
		memcpy(e->comm, row->key.comm, NMIPROF_COMM_LEN);
		e->comm[NMIPROF_COMM_LEN - 1] = '\0';
		break;
	}
	return 0;
}

int npd_live_top(struct npd_live *l, uint64_t now_sec,
		 const struct np_ctl_top_query *q, struct np_ctl_top *t)
{
	uint64_t first = now_sec + 1 > q->secs ? now_sec + 1 - q->secs : 0;
	uint64_t oldest = UINT64_MAX;
	struct npd_live_rows rows = { 0 };
	struct npd_live_row *v = NULL;
	uint32_t nr = 0;

	memset(t, 0, sizeof(*t));
	if (now_sec + 1 > l->nslots && first < now_sec + 1 - l->nslots)
		first = now_sec + 1 - l->nslots;
	for (uint32_t i = 0; i < l->nslots; i++) {
		const struct npd_live_slot *s = &l->slots[i];

		if (s->sec == UINT64_MAX || s->sec < first || s->sec > now_sec)
			continue;
		if (s->sec < oldest)
			oldest = s->sec;
		t->samples += s->samples;
		t->lost += s->lost;
		for (uint32_t j = 0; j < s->cap; j++) {
			const struct npd_live_ent *e = &s->tab[j];
			struct npd_live_ent key = { 0 };

			if (!e->count || !npd_live_match(q, e))
				continue;
			t->matched += e->count;
			switch (q->sort) {
			case NP_CTL_SORT_SYM:
				key.frame = e->frame;
				break;
			case NP_CTL_SORT_PID:
				key.pid = e->pid;
				/* pid reuse and exec: a pid row is (pid, comm) */
				memcpy(key.comm, e->comm, NMIPROF_COMM_LEN);
				break;
			case NP_CTL_SORT_COMM:
				memcpy(key.comm, e->comm, NMIPROF_COMM_LEN);
				break;
			}
			if (npd_rows_add(&rows, &key, e->count))
				goto nomem;
		}
	}
	t->secs = oldest == UINT64_MAX ? 0 : (uint32_t)(now_sec - oldest + 1);

	/* Compact the table to the rows and sort them. */
	if (rows.nr) {
		v = malloc(rows.nr * sizeof(*v));
		if (!v)
			goto nomem;
		for (uint32_t i = 0; i < rows.cap; i++)
			if (rows.v[i].count)
				v[nr++] = rows.v[i];
		qsort(v, nr, sizeof(*v), npd_row_cmp);
	}
	if (nr > q->n)
		nr = q->n;
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
	free(rows.v);
	return 0;
nomem:
	free(v);
	free(rows.v);
	np_ctl_top_free(t);
	return -ENOMEM;
}
