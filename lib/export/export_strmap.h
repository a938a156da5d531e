/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Strings -> dense ids (0, 1, ...) in insertion order, each with a
 * 64-bit payload: the folded writer merges stack lines with it (payload:
 * the count), the pprof writer interns its string table, functions and
 * mappings (the id is the table index).  An np_idx over the ids; keys
 * are copied.
 */
#ifndef NP_EXPORT_STRMAP_H
#define NP_EXPORT_STRMAP_H

#include <stddef.h>
#include <stdint.h>
#include "np_idx.h"

struct np_strmap {
	char **keys;		/* keys[id] */
	uint64_t *val;		/* val[id], 0 when inserted */
	size_t nr, cap, cap_val;
	struct np_idx idx;
};

/* The id of key, inserted if new (*is_new = 1); -ENOMEM. */
int64_t np_strmap_get(struct np_strmap *m, const char *key, int *is_new);
/* Frees the keys too, unless the caller took them (keys set to NULL). */
void np_strmap_free(struct np_strmap *m);

#endif /* NP_EXPORT_STRMAP_H */
