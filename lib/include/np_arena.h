/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Bump-allocated strings with stable addresses, freed all at once: the
 * symbolizer's names and the stack table's strings.
 */
#ifndef NP_ARENA_H
#define NP_ARENA_H

#include <stddef.h>

struct np_arena {
	struct np_arena_chunk *head;
	size_t bytes;		/* held in chunks */
	size_t max_chunk;	/* chunk size bound; 0: 256 KiB */
};

/* A NUL-terminated copy of s[0..len), or NULL on ENOMEM. */
const char *np_arena_strdup(struct np_arena *a, const char *s, size_t len);
/* Frees every string; the arena is empty and reusable (max_chunk kept). */
void np_arena_free(struct np_arena *a);

#endif /* NP_ARENA_H */
