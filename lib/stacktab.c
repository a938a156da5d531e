// SPDX-License-Identifier: GPL-2.0
/* Deduplicated symbolized stack table: strings, frames, call trie. */
#include <stdlib.h>
#include <string.h>
#include "stacktab.h"
#include "store_hash.h"

#define ARENA_CHUNK	(64 * 1024)

struct st_str {
	const char *p;
	uint32_t len;
};

struct st_frame {
	struct np_sym sym;	/* strings point into the arena */
	uint32_t dso, name;	/* string ids; name NP_ID_NONE if unknown */
};

struct st_node {
	uint32_t parent, frame;
};

struct arena_chunk {
	struct arena_chunk *next;
	size_t used, size;
	char data[];
};

struct np_stacktab {
	struct arena_chunk *arena;	/* strings: stable addresses */
	size_t arena_bytes;
	struct st_str *strs;
	uint32_t nr_strs, cap_strs;
	struct np_idx str_idx;
	struct st_frame *frames;
	uint32_t nr_frames, cap_frames;
	struct np_idx frame_idx;
	struct st_node *nodes;
	uint32_t nr_nodes, cap_nodes;
	/* Node index: just ids (+1, 0 free); the hash is recomputed from
	 * nodes[] on resize.  Nodes dominate memory with many stacks, and
	 * only a raw-cache miss ever probes here, so 4 bytes a slot. */
	uint32_t *node_slot;
	uint32_t node_size;		/* slots; 0 if node_slot NULL */
	uint32_t unknown_dso;		/* string id of "[unknown]" */
};

static const char *arena_put(struct np_stacktab *st, const char *s, size_t len)
{
	struct arena_chunk *c = st->arena;
	char *p;

	if (!c || c->size - c->used < len + 1) {
		size_t size = len + 1 > ARENA_CHUNK ? len + 1 : ARENA_CHUNK;

		c = malloc(sizeof(*c) + size);
		if (!c)
			return NULL;
		c->next = st->arena;
		c->used = 0;
		c->size = size;
		st->arena = c;
		st->arena_bytes += sizeof(*c) + size;
	}
	p = c->data + c->used;
	memcpy(p, s, len);
	p[len] = '\0';
	c->used += len + 1;
	return p;
}

static void arena_free(struct np_stacktab *st)
{
	while (st->arena) {
		struct arena_chunk *n = st->arena->next;

		free(st->arena);
		st->arena = n;
	}
	st->arena_bytes = 0;
}

static int st_init(struct np_stacktab *st)
{
	/* Node 0 is the root; its fields are never read. */
	if (np_grow((void **)&st->nodes, &st->cap_nodes, 1, sizeof(*st->nodes)))
		return -1;
	st->nodes[0].parent = NP_ID_NONE;
	st->nodes[0].frame = NP_ID_NONE;
	st->nr_nodes = 1;
	st->unknown_dso = np_stacktab_str(st, "[unknown]", 9);
	return st->unknown_dso == NP_ID_NONE ? -1 : 0;
}

struct np_stacktab *np_stacktab_new(void)
{
	struct np_stacktab *st = calloc(1, sizeof(*st));

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
	arena_free(st);
	free(st->strs);
	free(st->frames);
	free(st->nodes);
	np_idx_free(&st->str_idx);
	np_idx_free(&st->frame_idx);
	free(st->node_slot);
	free(st);
}

void np_stacktab_clear(struct np_stacktab *st)
{
	arena_free(st);
	st->nr_strs = st->nr_frames = st->nr_nodes = 0;
	np_idx_clear(&st->str_idx);
	np_idx_clear(&st->frame_idx);
	if (st->node_slot)
		memset(st->node_slot, 0,
		       (size_t)st->node_size * sizeof(*st->node_slot));
	st_init(st);	/* cannot fail: capacity and index slots remain */
}

size_t np_stacktab_mem(const struct np_stacktab *st)
{
	return sizeof(*st) + st->arena_bytes +
	       (size_t)st->cap_strs * sizeof(*st->strs) +
	       (size_t)st->cap_frames * sizeof(*st->frames) +
	       (size_t)st->cap_nodes * sizeof(*st->nodes) +
	       np_idx_mem(&st->str_idx) + np_idx_mem(&st->frame_idx) +
	       (size_t)st->node_size * sizeof(*st->node_slot);
}

uint32_t np_stacktab_str(struct np_stacktab *st, const char *s, size_t len)
{
	uint64_t h = np_hash_bytes(s, len, 0);
	uint32_t pos = np_idx_first(&st->str_idx, h), id;
	const char *p;

	while ((id = np_idx_next(&st->str_idx, h, &pos)) != NP_ID_NONE)
		if (st->strs[id].len == len && !memcmp(st->strs[id].p, s, len))
			return id;
	if (len > UINT32_MAX - 1 || st->nr_strs == NP_ID_NONE - 1 ||
	    np_grow((void **)&st->strs, &st->cap_strs, st->nr_strs + 1,
		    sizeof(*st->strs)))
		return NP_ID_NONE;
	p = arena_put(st, s, len);
	if (!p)
		return NP_ID_NONE;
	id = st->nr_strs;
	if (np_idx_insert(&st->str_idx, h, id))
		return NP_ID_NONE;
	st->strs[id].p = p;
	st->strs[id].len = (uint32_t)len;
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
	uint64_t h = frame_hash(dso, name, offset, kernel);
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
	st->nr_frames++;
	return id;
}

uint32_t np_stacktab_frame(struct np_stacktab *st, const struct np_sym *f)
{
	uint32_t dso = f->dso ? np_stacktab_str(st, f->dso, strlen(f->dso))
			      : st->unknown_dso;
	uint32_t name = NP_ID_NONE;

	if (dso == NP_ID_NONE)
		return NP_ID_NONE;
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

/* The home slot of (parent, frame) in a table of size slots: the hash
 * scaled to [0, size), so the size need not be a power of two. */
static uint32_t node_home(uint32_t parent, uint32_t frame, uint32_t size)
{
	uint64_t h = np_hash_u64(((uint64_t)parent << 32) | frame) >> 32;

	return (uint32_t)((h * size) >> 32);
}

static uint32_t node_next(uint32_t pos, uint32_t size)
{
	return pos + 1 == size ? 0 : pos + 1;
}

/*
 * Load factor <= 3/4: linear probing stays short, slots stay small.  The
 * index grows by 1.5x, not 2x: with millions of nodes it is a third of
 * the table's memory, and doubling left it at 3/8 full on average.
 */
static int node_idx_grow(struct np_stacktab *st)
{
	uint64_t want = st->node_size ? (uint64_t)st->node_size * 3 / 2 : 1024;
	uint32_t size, *ns;

	if (want > UINT32_MAX)
		return -1;
	size = (uint32_t)want;
	ns = calloc(size, sizeof(*ns));
	if (!ns)
		return -1;
	for (uint32_t id = 1; id < st->nr_nodes; id++) {
		uint32_t pos = node_home(st->nodes[id].parent,
					 st->nodes[id].frame, size);

		while (ns[pos])
			pos = node_next(pos, size);
		ns[pos] = id + 1;
	}
	free(st->node_slot);
	st->node_slot = ns;
	st->node_size = size;
	return 0;
}

uint32_t np_stacktab_child(struct np_stacktab *st, uint32_t parent,
			   uint32_t frame)
{
	uint32_t pos, id;

	if (parent >= st->nr_nodes || frame >= st->nr_frames)
		return NP_ID_NONE;
	if (st->node_slot) {
		for (pos = node_home(parent, frame, st->node_size);
		     st->node_slot[pos]; pos = node_next(pos, st->node_size)) {
			id = st->node_slot[pos] - 1;
			if (st->nodes[id].parent == parent &&
			    st->nodes[id].frame == frame)
				return id;
		}
	}
	if (st->nr_nodes == NP_ID_NONE - 1 ||
	    np_grow((void **)&st->nodes, &st->cap_nodes, st->nr_nodes + 1,
		    sizeof(*st->nodes)))
		return NP_ID_NONE;
	id = st->nr_nodes;
	st->nodes[id].parent = parent;
	st->nodes[id].frame = frame;
	if (!st->node_slot ||
	    (uint64_t)id * 4 >= (uint64_t)st->node_size * 3) {
		/* the rehash includes the new node once nr_nodes counts it */
		st->nr_nodes++;
		if (node_idx_grow(st)) {
			st->nr_nodes--;
			return NP_ID_NONE;
		}
		return id;
	}
	pos = node_home(parent, frame, st->node_size);
	while (st->node_slot[pos])
		pos = node_next(pos, st->node_size);
	st->node_slot[pos] = id + 1;
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
	*parent = st->nodes[node].parent;
	*frame = st->nodes[node].frame;
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
	for (; stack != NP_STACK_EMPTY; stack = st->nodes[stack].parent)
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
	     stack = st->nodes[stack].parent)
		out[n++] = &st->frames[st->nodes[stack].frame].sym;
	return n;
}
