// SPDX-License-Identifier: GPL-2.0
/*
 * Symbol tables for the symbolizer: a sorted array searched by address,
 * and the arena their names live in.
 */
#include <stdlib.h>
#include <string.h>
#include "np_symtab.h"

#define ARENA_CHUNK	(256 * 1024)

struct np_arena_chunk {
	struct np_arena_chunk *next;
	size_t used, size;
	char data[];
};

const char *np_arena_strdup(struct np_arena *a, const char *s, size_t len)
{
	struct np_arena_chunk *c = a->head;
	char *p;

	if (!c || c->size - c->used < len + 1) {
		size_t size = len + 1 > ARENA_CHUNK ? len + 1 : ARENA_CHUNK;

		c = malloc(sizeof(*c) + size);
		if (!c)
			return NULL;
		c->used = 0;
		c->size = size;
		c->next = a->head;
		a->head = c;
	}
	p = c->data + c->used;
	memcpy(p, s, len);
	p[len] = '\0';
	c->used += len + 1;
	return p;
}

void np_arena_free(struct np_arena *a)
{
	while (a->head) {
		struct np_arena_chunk *c = a->head;

		a->head = c->next;
		free(c);
	}
}

int np_symtab_add(struct np_symtab *t, uint64_t start, uint64_t size,
		  const char *name, const char *dso, int prio)
{
	if (t->nr == t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 256;
		struct np_symdef *v = realloc(t->v, cap * sizeof(*v));

		if (!v)
			return -1;
		t->v = v;
		t->cap = cap;
	}
	t->v[t->nr++] = (struct np_symdef){
		.start = start, .end = size ? start + size : 0,
		.name = name, .dso = dso, .prio = prio,
	};
	return 0;
}

void np_symtab_limit_last(struct np_symtab *t, uint64_t limit)
{
	if (t->nr && !t->v[t->nr - 1].end)
		t->v[t->nr - 1].limit = limit;
}

static int cmp_sym(const void *a, const void *b)
{
	const struct np_symdef *x = a, *y = b;

	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	if (x->prio != y->prio)
		return y->prio - x->prio;
	/* sized before size-less, then by name for a stable choice */
	if ((x->end != 0) != (y->end != 0))
		return x->end ? -1 : 1;
	return strcmp(x->name, y->name);
}

void np_symtab_finish(struct np_symtab *t)
{
	size_t i, n = 0;

	if (!t->nr)
		return;
	qsort(t->v, t->nr, sizeof(*t->v), cmp_sym);
	for (i = 0; i < t->nr; i++) {
		if (n && t->v[n - 1].start == t->v[i].start)
			continue;	/* an alias of the preferred name */
		t->v[n++] = t->v[i];
	}
	t->nr = n;
	for (i = 0; i < n; i++) {
		uint64_t next = i + 1 < n ? t->v[i + 1].start : t->v[i].start + 4096;

		if (!t->v[i].end || t->v[i].end <= t->v[i].start)
			t->v[i].end = next;
		/* e.g. _init must not swallow the .plt that follows it */
		if (t->v[i].limit > t->v[i].start && t->v[i].end > t->v[i].limit)
			t->v[i].end = t->v[i].limit;
	}
}

const struct np_symdef *np_symtab_find(const struct np_symtab *t, uint64_t addr)
{
	size_t lo = 0, hi = t->nr;

	/* last symbol with start <= addr */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (t->v[mid].start <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo)
		return NULL;
	return addr < t->v[lo - 1].end ? &t->v[lo - 1] : NULL;
}

void np_symtab_free(struct np_symtab *t)
{
	free(t->v);
	memset(t, 0, sizeof(*t));
}
