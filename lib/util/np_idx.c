// SPDX-License-Identifier: GPL-2.0
#include <stdlib.h>
#include <string.h>
#include "np_idx.h"

static void idx_put(uint64_t *slot, uint32_t mask, uint64_t v)
{
	/* Position from the stored hash bits, so a resize can rehash
	 * without the keys; np_idx_first() probes from the same bits. */
	uint32_t pos = (uint32_t)(v >> 32) & mask;

	while (slot[pos])
		pos = (pos + 1) & mask;
	slot[pos] = v;
}

static int idx_full(uint64_t n, uint64_t size)
{
	return n * 2 > size;
}

static int idx_resize(struct np_idx *x, uint64_t n)
{
	uint64_t size = x->slot ? (uint64_t)x->mask + 1 : 64;
	uint64_t *ns;

	while (idx_full(n, size))
		size *= 2;
	if (size > (uint64_t)1 << 32)
		return -1;
	if (x->slot && size == (uint64_t)x->mask + 1)
		return 0;
	ns = calloc(size, sizeof(*ns));
	if (!ns)
		return -1;
	if (x->slot) {
		for (uint32_t i = 0; i <= x->mask; i++)
			if (x->slot[i])
				idx_put(ns, (uint32_t)(size - 1), x->slot[i]);
		free(x->slot);
	}
	x->slot = ns;
	x->mask = (uint32_t)(size - 1);
	return 0;
}

int np_idx_reserve(struct np_idx *x, uint32_t n)
{
	return idx_resize(x, n);
}

int np_idx_insert(struct np_idx *x, uint32_t h, uint32_t id)
{
	if ((!x->slot || idx_full((uint64_t)x->used + 1, (uint64_t)x->mask + 1)) &&
	    idx_resize(x, (uint64_t)x->used + 1))
		return -1;
	idx_put(x->slot, x->mask, ((uint64_t)h << 32) | ((uint64_t)id + 1));
	x->used++;
	return 0;
}

int np_idx_remove(struct np_idx *x, uint32_t h, uint32_t id)
{
	uint64_t v = ((uint64_t)h << 32) | ((uint64_t)id + 1);
	uint32_t i, j;

	if (!x->slot)
		return -1;
	for (i = h & x->mask; x->slot[i] != v; i = (i + 1) & x->mask)
		if (!x->slot[i])
			return -1;
	/*
	 * Fill the hole from the rest of its run: an entry moves back unless
	 * its home lies cyclically in (hole, itself], where a probe from its
	 * home would no longer pass the hole.
	 */
	for (j = (i + 1) & x->mask; x->slot[j]; j = (j + 1) & x->mask) {
		uint32_t home = (uint32_t)(x->slot[j] >> 32) & x->mask;

		if (((j - home) & x->mask) < ((j - i) & x->mask))
			continue;
		x->slot[i] = x->slot[j];
		i = j;
	}
	x->slot[i] = 0;
	x->used--;
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
	*x = (struct np_idx){ 0 };
}

static void idx32_put(struct np_idx32 *x, uint32_t h, uint32_t id)
{
	uint32_t pos = np_idx32_first(x, h);

	while (x->slot[pos])
		pos = pos + 1 == x->size ? 0 : pos + 1;
	x->slot[pos] = id + 1;
}

int np_idx32_insert(struct np_idx32 *x, uint32_t h, uint32_t id,
		    np_idx32_hash_fn hash, const void *owner)
{
	if (!x->slot || ((uint64_t)x->used + 1) * 4 > (uint64_t)x->size * 3) {
		uint64_t want = x->size ? (uint64_t)x->size * 3 / 2 : 1024;
		struct np_idx32 n = { .used = x->used };

		if (want > UINT32_MAX)
			return -1;
		n.size = (uint32_t)want;
		n.slot = calloc(n.size, sizeof(*n.slot));
		if (!n.slot)
			return -1;
		for (uint32_t i = 0; i < x->size; i++)
			if (x->slot[i])
				idx32_put(&n, hash(owner, x->slot[i] - 1),
					  x->slot[i] - 1);
		free(x->slot);
		*x = n;
	}
	idx32_put(x, h, id);
	x->used++;
	return 0;
}

void np_idx32_clear(struct np_idx32 *x)
{
	if (x->slot)
		memset(x->slot, 0, (size_t)x->size * sizeof(*x->slot));
	x->used = 0;
}

void np_idx32_free(struct np_idx32 *x)
{
	free(x->slot);
	*x = (struct np_idx32){ 0 };
}
