// SPDX-License-Identifier: GPL-2.0
/* String arena (np_arena.h). */
#include <stdlib.h>
#include <string.h>
#include "np_arena.h"

/*
 * Chunks double from ARENA_MIN_CHUNK up to the arena's max_chunk (default
 * ARENA_CHUNK): every ELF object has an arena of its own, and most hold a
 * few hundred names.
 */
#define ARENA_MIN_CHUNK	(4 * 1024)
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
		size_t max = a->max_chunk ? a->max_chunk : ARENA_CHUNK;
		size_t size = a->bytes < ARENA_MIN_CHUNK ? ARENA_MIN_CHUNK :
			      a->bytes < max ? a->bytes : max;

		if (size < len + 1)
			size = len + 1;

		c = malloc(sizeof(*c) + size);
		if (!c)
			return NULL;
		c->used = 0;
		c->size = size;
		c->next = a->head;
		a->head = c;
		a->bytes += sizeof(*c) + size;
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
	a->bytes = 0;
}
