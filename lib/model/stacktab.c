// SPDX-License-Identifier: GPL-2.0
/* Deduplicated symbolized stack table: strings, frames, call trie. */
#include <stdlib.h>
#include <string.h>
#include "stacktab.h"
#include "np_hash.h"
#include "np_idx.h"
#include "np_arena.h"
#include "np_grow.h"

#define ARENA_CHUNK	(64 * 1024)	/* the arena's largest chunk */

struct st_str {
	const char *p;
	uint32_t len;
	uint32_t bid;		/* an object's build-id string, NP_ID_NONE */
};

struct st_frame {
	struct np_sym sym;	/* strings point into the arena */
	uint32_t dso, name;	/* string ids; name NP_ID_NONE if unknown */
};

/*
 * The call trie, stored for the common shape of real stacks.  A stack
 * inserted outermost first creates its new nodes in one run: every node
 * of the run but the first has the node just before it as parent.  Such
 * a "chain" node costs its frame id and one bit; only the other nodes
 * ("branch" nodes: the first new node of a run) store their parent, in
 * an array ascending by id, and only they are in the hash index.  Each
 * node has at most one chain child (the node after it), found without
 * hashing.  With 100k distinct 20-40 frame stacks that part ways early
 * this is ~4.3 bytes a node instead of 8 plus a 5-8 byte index slot.
 * A segment read back numbers nodes in preorder, which is all chains
 * but the later siblings.
 */
struct st_branch {
	uint32_t id, parent;
};

struct np_stacktab {
	struct np_arena arena;		/* strings: stable addresses */
	struct st_str *strs;
	uint32_t nr_strs, cap_strs;
	struct np_idx str_idx;
	struct st_frame *frames;
	uint32_t nr_frames, cap_frames;
	struct np_idx frame_idx;
	uint32_t *node_frame;		/* frame of each node; root: none */
	uint64_t *node_chain;		/* bit id: parent of id is id - 1 */
	uint32_t nr_nodes, cap_nodes;	/* cap_nodes: a multiple of 64 */
	struct st_branch *branch;	/* the other nodes, ascending id */
	uint32_t nr_branch, cap_branch;
	struct np_idx32 node_idx;	/* over branch[] positions */
	uint32_t unknown_dso;		/* string id of "[unknown]" */
	int bid_stale;			/* frames' build_id to be redone */
	uint64_t bid_changes;		/* see np_stacktab_build_id_changes() */
	uint64_t gen;			/* see np_stacktab_gen() */
};

/*
 * Generations are unique in the process, not per table: a table freed
 * and another allocated at its address must not look like the same one
 * to a cache keyed by the pointer (the store's dictionary reader).
 */
static uint64_t st_gens;

static uint64_t st_next_gen(void)
{
	return __atomic_add_fetch(&st_gens, 1, __ATOMIC_RELAXED);
}

/* Room for need nodes: frame ids and chain bits grow together. */
static int nodes_reserve(struct np_stacktab *st, uint32_t need)
{
	uint64_t cap = st->cap_nodes ? st->cap_nodes : 64;
	uint32_t *f;
	uint64_t *c;

	if (need <= st->cap_nodes)
		return 0;
	while (cap < need)
		cap *= 2;
	if (cap > UINT32_MAX)
		cap = (uint64_t)UINT32_MAX + 1 - 64;
	if (cap < need)
		return -1;
	f = realloc(st->node_frame, cap * sizeof(*f));
	if (!f)
		return -1;
	st->node_frame = f;
	c = realloc(st->node_chain, cap / 64 * sizeof(*c));
	if (!c)
		return -1;
	memset(c + st->cap_nodes / 64, 0,
	       (cap - st->cap_nodes) / 64 * sizeof(*c));
	st->node_chain = c;
	st->cap_nodes = (uint32_t)cap;
	return 0;
}

static int node_is_chain(const struct np_stacktab *st, uint32_t id)
{
	return (st->node_chain[id / 64] >> (id % 64)) & 1;
}

static int st_init(struct np_stacktab *st)
{
	/* Node 0 is the root: no frame, no parent (neither chain nor branch). */
	if (nodes_reserve(st, 1))
		return -1;
	st->node_frame[0] = NP_ID_NONE;
	st->node_chain[0] &= ~1ULL;
	st->nr_nodes = 1;
	st->unknown_dso = np_stacktab_str(st, "[unknown]", 9);
	return st->unknown_dso == NP_ID_NONE ? -1 : 0;
}

struct np_stacktab *np_stacktab_new(void)
{
	struct np_stacktab *st = calloc(1, sizeof(*st));

	if (st) {
		st->arena.max_chunk = ARENA_CHUNK;
		st->gen = st_next_gen();
	}
	if (st && st_init(st)) {
		np_stacktab_free(st);
		return NULL;
	}
	return st;
}

void np_stacktab_free(struct np_stacktab *st)
{
	if (!st)
		return;
	np_arena_free(&st->arena);
	free(st->strs);
	free(st->frames);
	free(st->node_frame);
	free(st->node_chain);
	free(st->branch);
	np_idx_free(&st->str_idx);
	np_idx_free(&st->frame_idx);
	np_idx32_free(&st->node_idx);
	free(st);
}

void np_stacktab_clear(struct np_stacktab *st)
{
	np_arena_free(&st->arena);
	st->nr_strs = st->nr_frames = st->nr_nodes = st->nr_branch = 0;
	if (st->node_chain)
		memset(st->node_chain, 0,
		       (size_t)st->cap_nodes / 64 * sizeof(*st->node_chain));
	np_idx_clear(&st->str_idx);
	np_idx_clear(&st->frame_idx);
	np_idx32_clear(&st->node_idx);
	st->bid_stale = 0;
	st_init(st);	/* cannot fail: capacity and index slots remain */
	st->gen = st_next_gen();
}

uint64_t np_stacktab_gen(const struct np_stacktab *st)
{
	return st->gen;
}

size_t np_stacktab_mem(const struct np_stacktab *st)
{
	return sizeof(*st) + st->arena.bytes +
	       (size_t)st->cap_strs * sizeof(*st->strs) +
	       (size_t)st->cap_frames * sizeof(*st->frames) +
	       (size_t)st->cap_nodes * sizeof(*st->node_frame) +
	       (size_t)st->cap_nodes / 8 +
	       (size_t)st->cap_branch * sizeof(*st->branch) +
	       np_idx_mem(&st->str_idx) + np_idx_mem(&st->frame_idx) +
	       np_idx32_mem(&st->node_idx);
}

size_t np_stacktab_mem_used(const struct np_stacktab *st)
{
	return st->arena.bytes +
	       (size_t)st->nr_strs * sizeof(*st->strs) +
	       (size_t)st->nr_frames * sizeof(*st->frames) +
	       (size_t)st->nr_nodes * sizeof(*st->node_frame) +
	       (size_t)st->nr_nodes / 8 +
	       (size_t)st->nr_branch * sizeof(*st->branch) +
	       ((size_t)st->str_idx.used + st->frame_idx.used) * 2 * sizeof(uint64_t) +
	       (size_t)st->node_idx.used * 2 * sizeof(uint32_t);
}

uint32_t np_stacktab_str(struct np_stacktab *st, const char *s, size_t len)
{
	uint32_t h = (uint32_t)np_hash_bytes(s, len, 0);
	uint32_t pos = np_idx_first(&st->str_idx, h), id;
	const char *p;

	while ((id = np_idx_next(&st->str_idx, h, &pos)) != NP_ID_NONE)
		if (st->strs[id].len == len && !memcmp(st->strs[id].p, s, len))
			return id;
	if (len > UINT32_MAX - 1 || st->nr_strs == NP_ID_NONE - 1 ||
	    np_grow((void **)&st->strs, &st->cap_strs, st->nr_strs + 1,
		    sizeof(*st->strs)))
		return NP_ID_NONE;
	p = np_arena_strdup(&st->arena, s, len);
	if (!p)
		return NP_ID_NONE;
	id = st->nr_strs;
	if (np_idx_insert(&st->str_idx, h, id))
		return NP_ID_NONE;
	st->strs[id].p = p;
	st->strs[id].len = (uint32_t)len;
	st->strs[id].bid = NP_ID_NONE;
	st->nr_strs++;
	return id;
}

const char *np_stacktab_str_get(const struct np_stacktab *st, uint32_t id)
{
	return id < st->nr_strs ? st->strs[id].p : NULL;
}

uint32_t np_stacktab_nr_strs(const struct np_stacktab *st)
{
	return st->nr_strs;
}

static uint64_t frame_hash(uint32_t dso, uint32_t name, uint64_t off, int k)
{
	return np_mum(np_hash_u64(((uint64_t)dso << 32 | name) ^ NP_HK2),
		      off ^ ((uint64_t)!!k << 63) ^ NP_HK3);
}

uint32_t np_stacktab_frame_ids(struct np_stacktab *st, uint32_t dso,
			       uint32_t name, uint64_t offset, int kernel)
{
	uint32_t h = (uint32_t)frame_hash(dso, name, offset, kernel);
	uint32_t pos = np_idx_first(&st->frame_idx, h), id;
	struct st_frame *f;

	if (dso >= st->nr_strs || (name != NP_ID_NONE && name >= st->nr_strs))
		return NP_ID_NONE;
	while ((id = np_idx_next(&st->frame_idx, h, &pos)) != NP_ID_NONE) {
		f = &st->frames[id];
		if (f->dso == dso && f->name == name &&
		    f->sym.offset == offset && f->sym.kernel == !!kernel)
			return id;
	}
	if (st->nr_frames == NP_ID_NONE - 1 ||
	    np_grow((void **)&st->frames, &st->cap_frames, st->nr_frames + 1,
		    sizeof(*st->frames)))
		return NP_ID_NONE;
	id = st->nr_frames;
	if (np_idx_insert(&st->frame_idx, h, id))
		return NP_ID_NONE;
	f = &st->frames[id];
	f->dso = dso;
	f->name = name;
	f->sym.dso = st->strs[dso].p;
	f->sym.name = name == NP_ID_NONE ? NULL : st->strs[name].p;
	f->sym.offset = offset;
	f->sym.kernel = !!kernel;
	f->sym.build_id = st->strs[dso].bid == NP_ID_NONE ? NULL :
			  st->strs[st->strs[dso].bid].p;
	st->nr_frames++;
	return id;
}

int np_stacktab_set_build_id(struct np_stacktab *st, uint32_t dso,
			     uint32_t bid)
{
	if (dso >= st->nr_strs || (bid != NP_ID_NONE && bid >= st->nr_strs))
		return -1;
	if (st->strs[dso].bid != bid) {
		st->strs[dso].bid = bid;
		st->bid_stale = 1;
		st->bid_changes++;
	}
	return 0;
}

uint64_t np_stacktab_build_id_changes(const struct np_stacktab *st)
{
	return st->bid_changes;
}

uint32_t np_stacktab_build_id(const struct np_stacktab *st, uint32_t dso)
{
	return dso < st->nr_strs ? st->strs[dso].bid : NP_ID_NONE;
}

void np_stacktab_sync_build_ids(struct np_stacktab *st)
{
	if (!st->bid_stale)
		return;
	for (uint32_t i = 0; i < st->nr_frames; i++) {
		uint32_t b = st->strs[st->frames[i].dso].bid;

		st->frames[i].sym.build_id = b == NP_ID_NONE ? NULL : st->strs[b].p;
	}
	st->bid_stale = 0;
}

uint32_t np_stacktab_frame(struct np_stacktab *st, const struct np_sym *f)
{
	uint32_t dso = f->dso ? np_stacktab_str(st, f->dso, strlen(f->dso))
			      : st->unknown_dso;
	uint32_t name = NP_ID_NONE;

	if (dso == NP_ID_NONE)
		return NP_ID_NONE;
	/* Once per object: compared, interned only when it changes. */
	if (f->build_id && *f->build_id) {
		uint32_t b = st->strs[dso].bid;

		if (b == NP_ID_NONE || strcmp(st->strs[b].p, f->build_id)) {
			b = np_stacktab_str(st, f->build_id, strlen(f->build_id));
			if (b == NP_ID_NONE)
				return NP_ID_NONE;
			np_stacktab_set_build_id(st, dso, b);
			np_stacktab_sync_build_ids(st);
		}
	}
	if (f->name) {
		name = np_stacktab_str(st, f->name, strlen(f->name));
		if (name == NP_ID_NONE)
			return NP_ID_NONE;
	}
	return np_stacktab_frame_ids(st, dso, name, f->offset, f->kernel);
}

const struct np_sym *np_stacktab_frame_get(const struct np_stacktab *st,
					   uint32_t id)
{
	return id < st->nr_frames ? &st->frames[id].sym : NULL;
}

void np_stacktab_frame_strs(const struct np_stacktab *st, uint32_t id,
			    uint32_t *dso_id, uint32_t *name_id)
{
	*dso_id = st->frames[id].dso;
	*name_id = st->frames[id].name;
}

uint32_t np_stacktab_nr_frames(const struct np_stacktab *st)
{
	return st->nr_frames;
}

int np_stacktab_frame_unmapped(const struct np_stacktab *st, uint32_t id)
{
	return id < st->nr_frames && np_sym_unmapped(&st->frames[id].sym);
}

uint32_t np_stacktab_unmapped_run(struct np_stacktab *st)
{
	static const struct np_sym run = {
		.dso = NP_DSO_UNMAPPED,
		.name = NP_SYM_UNMAPPED_RUN,
	};

	return np_stacktab_frame(st, &run);
}

static uint32_t node_hash(uint32_t parent, uint32_t frame)
{
	return (uint32_t)(np_hash_u64(((uint64_t)parent << 32) | frame) >> 32);
}

static uint32_t branch_hash(const void *owner, uint32_t b)
{
	const struct np_stacktab *st = owner;

	return node_hash(st->branch[b].parent,
			 st->node_frame[st->branch[b].id]);
}

/* Parent of node id (not the root). */
static uint32_t node_parent(const struct np_stacktab *st, uint32_t id)
{
	uint32_t lo = 0, hi = st->nr_branch;

	if (node_is_chain(st, id))
		return id - 1;
	/* a branch node: binary search, branch[] ascends by id */
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (st->branch[mid].id < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return st->branch[lo].parent;
}

uint32_t np_stacktab_child(struct np_stacktab *st, uint32_t parent,
			   uint32_t frame)
{
	uint32_t pos, id, b, h;

	if (parent >= st->nr_nodes || frame >= st->nr_frames)
		return NP_ID_NONE;
	id = parent + 1;
	/* the chain child, if any, is the node right after its parent */
	if (id < st->nr_nodes && node_is_chain(st, id) &&
	    st->node_frame[id] == frame)
		return id;
	h = node_hash(parent, frame);
	pos = np_idx32_first(&st->node_idx, h);
	while ((b = np_idx32_next(&st->node_idx, &pos)) != NP_IDX_NONE)
		if (st->branch[b].parent == parent &&
		    st->node_frame[st->branch[b].id] == frame)
			return st->branch[b].id;
	id = st->nr_nodes;
	if (id == NP_ID_NONE - 1 || nodes_reserve(st, id + 1))
		return NP_ID_NONE;
	st->node_frame[id] = frame;
	if (parent + 1 == id) {
		/* the parent is the newest node: it has no child yet */
		st->node_chain[id / 64] |= 1ULL << (id % 64);
		st->nr_nodes++;
		return id;
	}
	if (np_grow((void **)&st->branch, &st->cap_branch, st->nr_branch + 1,
		    sizeof(*st->branch)))
		return NP_ID_NONE;
	b = st->nr_branch;
	st->branch[b].id = id;
	st->branch[b].parent = parent;
	if (np_idx32_insert(&st->node_idx, h, b, branch_hash, st))
		return NP_ID_NONE;
	st->nr_branch++;
	st->nr_nodes++;
	return id;
}

uint32_t np_stacktab_stack(struct np_stacktab *st, const struct np_sym *frames,
			   unsigned int n)
{
	uint32_t node = NP_STACK_EMPTY;

	while (n--) {
		uint32_t f = np_stacktab_frame(st, &frames[n]);

		if (f == NP_ID_NONE)
			return NP_ID_NONE;
		node = np_stacktab_child(st, node, f);
		if (node == NP_ID_NONE)
			return NP_ID_NONE;
	}
	return node;
}

int np_stacktab_node(const struct np_stacktab *st, uint32_t node,
		     uint32_t *parent, uint32_t *frame)
{
	if (node == NP_STACK_EMPTY || node >= st->nr_nodes)
		return -1;
	*parent = node_parent(st, node);
	*frame = st->node_frame[node];
	return 0;
}

uint32_t np_stacktab_nr_nodes(const struct np_stacktab *st)
{
	return st->nr_nodes;
}

unsigned int np_stacktab_depth(const struct np_stacktab *st, uint32_t stack)
{
	unsigned int d = 0;

	if (stack >= st->nr_nodes)
		return 0;
	/* parent < child always (parents are created first): terminates */
	for (; stack != NP_STACK_EMPTY; stack = node_parent(st, stack))
		d++;
	return d;
}

unsigned int np_stacktab_walk(const struct np_stacktab *st, uint32_t stack,
			      const struct np_sym **out, unsigned int max)
{
	unsigned int n = 0;

	if (stack >= st->nr_nodes)
		return 0;
	for (; stack != NP_STACK_EMPTY && n < max;
	     stack = node_parent(st, stack))
		out[n++] = &st->frames[st->node_frame[stack]].sym;
	return n;
}
