// SPDX-License-Identifier: GPL-2.0
/* Per-slice aggregation of samples into (pid, comm, cpu, stack) counts. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "agg.h"
#include "np_hash.h"
#include "np_idx.h"
#include "np_grow.h"
#include "resolve.h"

/*
 * Raw-stack cache entry, keyed by (pid, comm, raw frames) through 96
 * bits of hash (two keys colliding: ~n^2/2^97, 10^-19 for 10^5 stacks).
 * ent indexes np_agg.ents: the count of this stack on the CPU it was
 * last seen on, so the common hit increments a count without a second
 * lookup.
 */
struct raw_ent {
	uint64_t h1;
	uint32_t h2;
	uint32_t ent;
};

/*
 * The raw cache is only a cache: a miss re-resolves the stack through
 * the frame memo and finds its entry again.  It pays where a few stacks
 * take most samples; where most samples are new stacks (10^5 distinct
 * stacks a minute) it would hold every raw stack and hit nothing.  So
 * it is emptied when it holds RAW_MAX stacks: the hot stacks are back
 * after one sample each.
 */
#define RAW_MAX		(3U << 14)

/*
 * Frame memo: (pid, comm, address) -> frame id, direct mapped.  Distinct
 * raw stacks share most of their addresses (callers, the syscall path),
 * so a new raw stack mostly costs memo hits instead of a symbolizer call
 * plus interning two strings and a frame.  Dropped at every reset, like
 * the raw cache, so it is exactly as stale as that one: a process that
 * remaps under the same pid and comm within a slice keeps its names
 * until the slice ends.  Kernel addresses are keyed with pid 0 and comm
 * hash 0: they mean the same in every process.
 */
#define FRAME_MEMO_BITS	12	/* 4096 entries, 96 KiB */

struct frame_memo {
	uint64_t addr;
	uint32_t pid, commh;
	uint32_t frame;		/* NP_ID_NONE: empty */
	uint32_t kernel;
};

/*
 * User-part memo: (pid, comm, raw user frames) -> the stack node of
 * those frames, symbolized, plus the comm's ids.  A process busy in
 * user code is interrupted in many kernel paths (interrupts, faults,
 * syscalls): each is a new raw stack, but all share one user part, so
 * a new raw stack usually costs only its kernel frames.  Keyed by the
 * same 96-bit hash as the raw cache (the user lanes of raw_hash()),
 * direct mapped, dropped at every reset like the raw cache, so exactly
 * as stale as it.
 */
#define USER_MEMO_BITS	8	/* 256 entries, 6 KiB */

struct user_memo {
	uint64_t h1;
	uint32_t h2;
	uint32_t node;		/* NP_ID_NONE: empty */
	uint32_t comm, commh;
};

/* A raw sample's keys: all of it, and its (pid, comm, user frames). */
struct raw_key {
	uint64_t h1, uh1;
	uint32_t h2, uh2;
};

struct np_agg {
	struct np_agg_opts opts;
	struct frame_memo memo[1U << FRAME_MEMO_BITS];
	struct user_memo umemo[1U << USER_MEMO_BITS];
	struct np_stacktab *st;
	struct raw_ent *raw;
	uint32_t nr_raw;
	size_t cap_raw;
	struct np_idx32 raw_idx;	/* over raw[] */
	struct np_agg_entry *ents;
	uint32_t nr_ents, cap_ents;
	struct np_idx32 ent_idx;
	uint64_t samples, lost;
	uint32_t last_ent;	/* entry np_agg_add() last touched */
};

void np_agg_opts_init(struct np_agg_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->by_cpu = 1;
	/* A slice's own stacks may take more; this bounds what stacks of
	 * past slices keep (each clear keeps the arrays' capacity). */
	o->stacktab_cap = 8 << 20;
}

struct np_agg *np_agg_new(const struct np_agg_opts *o)
{
	struct np_agg *a = calloc(1, sizeof(*a));

	if (!a)
		return NULL;
	if (o)
		a->opts = *o;
	else
		np_agg_opts_init(&a->opts);
	memset(a->memo, 0xff, sizeof(a->memo));	/* frame NP_ID_NONE: empty */
	memset(a->umemo, 0xff, sizeof(a->umemo));	/* node NP_ID_NONE */
	a->st = np_stacktab_new();
	if (!a->st) {
		free(a);
		return NULL;
	}
	return a;
}

void np_agg_free(struct np_agg *a)
{
	if (!a)
		return;
	np_stacktab_free(a->st);
	free(a->raw);
	np_idx32_free(&a->raw_idx);
	free(a->ents);
	np_idx32_free(&a->ent_idx);
	free(a);
}

struct np_stacktab *np_agg_stacktab(const struct np_agg *a)
{
	return a->st;
}

const struct np_agg_entry *np_agg_entries(const struct np_agg *a,
					  uint32_t *nr)
{
	*nr = a->nr_ents;
	return a->ents;
}

uint64_t np_agg_samples(const struct np_agg *a)
{
	return a->samples;
}

uint64_t np_agg_period_ns(const struct np_agg *a)
{
	return a->opts.period_ns;
}

void np_agg_set_period_ns(struct np_agg *a, uint64_t ns)
{
	a->opts.period_ns = ns;
}

uint64_t np_agg_lost_count(const struct np_agg *a)
{
	return a->lost;
}

void np_agg_lost(struct np_agg *a, uint64_t lost)
{
	a->lost += lost;
}

size_t np_agg_mem(const struct np_agg *a)
{
	return sizeof(*a) + np_stacktab_mem(a->st) +
	       a->cap_raw * sizeof(*a->raw) + np_idx32_mem(&a->raw_idx) +
	       (size_t)a->cap_ents * sizeof(*a->ents) +
	       np_idx32_mem(&a->ent_idx);
}

static uint32_t ent_hash(uint32_t pid, uint32_t cpu, uint32_t comm,
			 uint32_t stack)
{
	return (uint32_t)(np_mum(((uint64_t)pid << 32 | cpu) ^ NP_HK0,
				 ((uint64_t)comm << 32 | stack) ^ NP_HK1) >> 32);
}

static uint32_t ent_hash_at(const void *owner, uint32_t id)
{
	const struct np_agg_entry *e = &((const struct np_agg *)owner)->ents[id];

	return ent_hash(e->pid, e->cpu, e->comm, e->stack);
}

int np_agg_add(struct np_agg *a, uint32_t pid, uint32_t cpu, uint32_t comm,
	       uint32_t stack, uint64_t count)
{
	uint32_t h = ent_hash(pid, cpu, comm, stack);
	uint32_t pos = np_idx32_first(&a->ent_idx, h), id;
	struct np_agg_entry *e;

	while ((id = np_idx32_next(&a->ent_idx, &pos)) != NP_IDX_NONE) {
		e = &a->ents[id];
		if (e->stack == stack && e->pid == pid && e->cpu == cpu &&
		    e->comm == comm) {
			a->last_ent = id;
			e->count += count;
			a->samples += count;
			return 0;
		}
	}
	if (a->nr_ents == NP_ID_NONE - 1 ||
	    np_grow((void **)&a->ents, &a->cap_ents, a->nr_ents + 1,
		    sizeof(*a->ents)) ||
	    np_idx32_insert(&a->ent_idx, h, a->nr_ents, ent_hash_at, a))
		return -ENOMEM;
	a->last_ent = a->nr_ents;
	e = &a->ents[a->nr_ents++];
	e->pid = pid;
	e->cpu = cpu;
	e->comm = comm;
	e->stack = stack;
	e->count = count;
	a->samples += count;
	return 0;
}

/*
 * Fold frames into two independent lanes, each folding two words per
 * multiply so the dependency chain is half the frame count; unrolled,
 * since user stacks tend to be deep.  c0..c3 differ per kind of frame.
 */
static inline __attribute__((always_inline)) void
fold_frames(const uint64_t *f, unsigned int n, uint64_t c0, uint64_t c1,
	    uint64_t c2, uint64_t c3, uint64_t *pa, uint64_t *pb)
{
	uint64_t a = *pa, b = *pb;
	unsigned int i;

	for (i = 0; i + 3 < n; i += 4) {
		a = np_mum(f[i] ^ a ^ c0, f[i + 1] ^ c1);
		b = np_mum(f[i] ^ b ^ c2, f[i + 1] ^ c3);
		a = np_mum(f[i + 2] ^ a ^ c0, f[i + 3] ^ c1);
		b = np_mum(f[i + 2] ^ b ^ c2, f[i + 3] ^ c3);
	}
	if (i + 1 < n) {
		a = np_mum(f[i] ^ a ^ c0, f[i + 1] ^ c1);
		b = np_mum(f[i] ^ b ^ c2, f[i + 1] ^ c3);
		i += 2;
	}
	if (i < n) {		/* an odd one out: other constants */
		a = np_mum(f[i] ^ a ^ c1, c0);
		b = np_mum(f[i] ^ b ^ c3, c2);
	}
	*pa = a;
	*pb = b;
}

/*
 * Keys of a raw sample (struct raw_key), 96 bits each.  The user frames
 * go first, so the lanes' state after them keys the user part alone
 * (struct user_memo); the kernel frames' count and the frames then
 * continue both lanes into the key of the whole sample.  A sample
 * without any frame is keyed by its ip, the one frame it is given
 * (raw_resolve()).
 */
static void raw_hash(const struct np_ev_sample *s, struct raw_key *k)
{
	uint64_t comm[2], a, b;

	memcpy(comm, s->comm, sizeof(comm));
	a = np_mum((uint64_t)s->pid ^ NP_HK0, (uint64_t)s->nr_uframes ^ NP_HK1);
	b = np_mum(comm[0] ^ NP_HK2, comm[1] ^ NP_HK3);
	a = np_mum(a ^ comm[1], comm[0] ^ NP_HK2);
	b = np_mum(b ^ s->pid, (uint64_t)s->nr_uframes ^ NP_HK0);
	fold_frames(s->uframes, s->nr_uframes, NP_HK3, NP_HK2, NP_HK1, NP_HK0,
		    &a, &b);
	k->uh1 = a;
	k->uh2 = (uint32_t)(b ^ b >> 32);
	k->uh2 |= !(a | k->uh2);		/* never (0, 0) */

	a = np_mum(a ^ NP_HK1, (uint64_t)s->nr_kframes ^ NP_HK2);
	b = np_mum(b ^ NP_HK3, (uint64_t)s->nr_kframes ^ NP_HK0);
	fold_frames(s->kframes, s->nr_kframes, NP_HK0, NP_HK1, NP_HK2, NP_HK3,
		    &a, &b);
	if (!s->nr_kframes && !s->nr_uframes) {
		a = np_mum(s->ip ^ a ^ NP_HK2, NP_HK3);
		b = np_mum(s->ip ^ b ^ NP_HK0, NP_HK1);
	}
	k->h1 = a;
	b ^= b >> 32;
	k->h2 = (uint32_t)b | !(a | (uint32_t)b);	/* never (0, 0): free */
}

static uint32_t raw_hash_at(const void *owner, uint32_t id)
{
	return (uint32_t)((const struct np_agg *)owner)->raw[id].h1;
}

static struct raw_ent *raw_find(struct np_agg *a, const struct raw_key *k)
{
	uint32_t pos = np_idx32_first(&a->raw_idx, (uint32_t)k->h1), id;

	while ((id = np_idx32_next(&a->raw_idx, &pos)) != NP_IDX_NONE)
		if (a->raw[id].h1 == k->h1 && a->raw[id].h2 == k->h2)
			return &a->raw[id];
	return NULL;
}

static void raw_clear(struct np_agg *a)
{
	np_idx32_clear(&a->raw_idx);
	a->nr_raw = 0;
}

static uint32_t sym_frame_slow(struct np_agg *a, uint32_t pid, uint64_t addr,
			       int kernel)
{
	struct np_sym sym = {
		.dso = kernel ? "[kernel.kallsyms]" : "[unknown]",
		.offset = addr,
		.kernel = kernel,
	};

	if (a->opts.symbolize) {
		a->opts.symbolize(a->opts.symbolize_arg, pid, addr, kernel,
				  &sym);
		sym.kernel = kernel;
	}
	return np_stacktab_frame(a->st, &sym);
}

static uint32_t sym_frame(struct np_agg *a, uint32_t pid, uint32_t commh,
			  uint64_t addr, int kernel)
{
	uint32_t kpid = kernel ? 0 : pid, f;
	struct frame_memo *m;
	uint64_t h;

	if (kernel)
		commh = 0;
	h = np_mum(addr ^ NP_HK0, ((uint64_t)kpid << 32 | commh) ^ NP_HK1);
	m = &a->memo[h >> (64 - FRAME_MEMO_BITS)];
	if (m->frame != NP_ID_NONE && m->addr == addr && m->pid == kpid &&
	    m->commh == commh && m->kernel == (uint32_t)kernel)
		return m->frame;
	f = sym_frame_slow(a, pid, addr, kernel);
	if (f != NP_ID_NONE) {
		m->addr = addr;
		m->pid = kpid;
		m->commh = commh;
		m->kernel = (uint32_t)kernel;
		m->frame = f;
	}
	return f;
}

/* np_frame_fn of the aggregation: sym_frame() of one sample. */
struct agg_frame_ctx {
	struct np_agg *a;
	uint32_t pid, commh;
};

static uint32_t agg_frame(void *arg, uint64_t addr, int kernel)
{
	struct agg_frame_ctx *c = arg;

	return sym_frame(c->a, c->pid, c->commh, addr, kernel);
}

/*
 * The user part of a raw stack, symbolized outermost first: *node gets
 * its stack node (NP_STACK_EMPTY without user frames), *comm and *commh
 * the comm's string id and hash.  From the user memo when it has it.
 */
static int user_resolve(struct np_agg *a, const struct np_ev_sample *s,
			const struct raw_key *k, uint32_t *node,
			uint32_t *comm, uint32_t *commh)
{
	struct user_memo *m = &a->umemo[k->uh1 >> (64 - USER_MEMO_BITS)];
	struct agg_frame_ctx ctx;
	size_t clen;

	if (m->node != NP_ID_NONE && m->h1 == k->uh1 && m->h2 == k->uh2) {
		*node = m->node;
		*comm = m->comm;
		*commh = m->commh;
		return 0;
	}
	clen = strnlen(s->comm, sizeof(s->comm));
	*comm = np_stacktab_str(a->st, s->comm, clen);
	*commh = (uint32_t)np_hash_bytes(s->comm, clen, 0);
	if (*comm == NP_ID_NONE)
		return -1;
	ctx = (struct agg_frame_ctx){ .a = a, .pid = s->pid, .commh = *commh };
	*node = np_resolve_user(a->st, s, agg_frame, &ctx);
	if (*node == NP_ID_NONE)
		return -1;
	m->h1 = k->uh1;
	m->h2 = k->uh2;
	m->node = *node;
	m->comm = *comm;
	m->commh = *commh;
	return 0;
}

/* First sight of a raw stack in this slice: symbolize, outermost first. */
static int raw_resolve(struct np_agg *a, const struct np_ev_sample *s,
		       const struct raw_key *k, struct raw_ent *r)
{
	struct agg_frame_ctx ctx;
	uint32_t node, comm, commh;

	if (user_resolve(a, s, k, &node, &comm, &commh))
		return -1;
	ctx = (struct agg_frame_ctx){ .a = a, .pid = s->pid, .commh = commh };
	node = np_resolve_kernel(a->st, node, s, agg_frame, &ctx);
	if (node == NP_ID_NONE)
		return -1;
	/* Several raw keys can share an entry (same symbolized stack). */
	if (np_agg_add(a, s->pid, a->opts.by_cpu ? s->cpu : NP_CPU_ANY, comm,
		       node, 0))
		return -1;
	r->ent = a->last_ent;
	return 0;
}

int np_agg_sample(struct np_agg *a, const struct np_ev_sample *s)
{
	uint32_t cpu = a->opts.by_cpu ? s->cpu : NP_CPU_ANY;
	struct np_agg_entry *e;
	struct raw_ent *r;
	struct raw_key k;

	raw_hash(s, &k);
	r = raw_find(a, &k);
	if (!r) {
		if (a->nr_raw == RAW_MAX)
			raw_clear(a);
		if (np_grow_to((void **)&a->raw, &a->cap_raw, a->nr_raw + 1,
			       sizeof(*a->raw), RAW_MAX))
			goto nomem;
		r = &a->raw[a->nr_raw];
		if (raw_resolve(a, s, &k, r) ||
		    np_idx32_insert(&a->raw_idx, (uint32_t)k.h1, a->nr_raw,
				    raw_hash_at, a))
			goto nomem;
		r->h1 = k.h1;
		r->h2 = k.h2;
		a->nr_raw++;
	}
	e = &a->ents[r->ent];
	if (e->cpu == cpu) {
		e->count++;
		a->samples++;
		return 0;
	}
	/* Same stack on another CPU: find that key's entry, and remember
	 * it, since a task tends to stay on its new CPU. */
	if (np_agg_add(a, e->pid, cpu, e->comm, e->stack, 1))
		goto nomem;
	r->ent = a->last_ent;
	return 0;
nomem:
	a->lost++;
	return -ENOMEM;
}

void np_agg_maps_changed(struct np_agg *a)
{
	raw_clear(a);
	memset(a->memo, 0xff, sizeof(a->memo));
	memset(a->umemo, 0xff, sizeof(a->umemo));
}

void np_agg_reset(struct np_agg *a)
{
	a->nr_ents = 0;
	np_idx32_clear(&a->ent_idx);
	raw_clear(a);
	memset(a->memo, 0xff, sizeof(a->memo));	/* frame NP_ID_NONE: empty */
	memset(a->umemo, 0xff, sizeof(a->umemo));
	a->samples = 0;
	a->lost = 0;
	/* Ids are only meaningful within a slice's segment, so the stack
	 * table can be dropped between slices; keeping it saves interning
	 * the same frames every minute, until it outgrows its cap.  Its
	 * rows, not its capacity: that stays after a clear. */
	if (a->opts.stacktab_cap &&
	    np_stacktab_mem_used(a->st) > a->opts.stacktab_cap)
		np_stacktab_clear(a->st);
}
