// SPDX-License-Identifier: GPL-2.0
#include <stdlib.h>
#include "np_hash.h"

static void idx_put(uint64_t *slot, uint32_t mask, uint64_t v)
{
	uint32_t pos = (uint32_t)(v >> 32) & mask;

	/* Position from the stored hash bits, so a resize can rehash
	 * without the keys; np_idx_first() probes from the same bits. */
	while (slot[pos])
		pos = (pos + 1) & mask;
	slot[pos] = v;
}

int np_idx_insert(struct np_idx *x, uint64_t h, uint32_t id)
{
	if (!x->slot || (x->used + 1) * 2 > x->mask + 1) {
		uint32_t size = x->slot ? (x->mask + 1) * 2 : 64;
		uint64_t *ns = calloc(size, sizeof(*ns));

		if (!ns)
			return -1;
		if (x->slot) {
			for (uint32_t i = 0; i <= x->mask; i++)
				if (x->slot[i])
					idx_put(ns, size - 1, x->slot[i]);
			free(x->slot);
		}
		x->slot = ns;
		x->mask = size - 1;
	}
	idx_put(x->slot, x->mask, ((uint64_t)np_idx_h32(h) << 32) | (id + 1));
	x->used++;
	return 0;
}

void np_idx_clear(struct np_idx *x)
{
	if (x->slot)
		memset(x->slot, 0, ((size_t)x->mask + 1) * sizeof(*x->slot));
	x->used = 0;
}

void np_idx_free(struct np_idx *x)
{
	free(x->slot);
	x->slot = NULL;
	x->mask = 0;
	x->used = 0;
}

