/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The one open-addressing index: maps 32 bits of a key's hash (np_hash.h)
 * to candidate ids of the owner's array; the owner compares the real key.
 * Linear probing; np_idx deletes by shifting back the rest of the run
 * (no tombstones), np_idx32 only grows or is cleared whole.
 *
 * Two slot layouts, one probing scheme:
 *   struct np_idx    8-byte slots (hash, id + 1): a probe skips other keys
 *                    without touching the owner's array, and a resize
 *                    needs no keys.  Power-of-two size, load <= 1/2.
 *   struct np_idx32  4-byte slots (id + 1): half the memory, for the
 *                    tables that are most of a profile's; a probe
 *                    compares each candidate, and a resize asks the owner
 *                    for each id's hash.  Load at most 3/4, grows by 1.5x
 *                    (doubling left it 3/8 full on average).
 */
#ifndef NP_IDX_H
#define NP_IDX_H

#include <stddef.h>
#include <stdint.h>
#include "np_hash.h"

#define NP_IDX_NONE	UINT32_MAX

struct np_idx {
	uint64_t *slot;		/* (hash << 32) | (id + 1), 0 free */
	uint32_t mask;		/* size - 1, size 0 when slot == NULL */
	uint32_t used;
};

static inline uint32_t np_idx_first(const struct np_idx *x, uint32_t h)
{
	return h & x->mask;
}

/* Candidates: start with pos = np_idx_first(); each call returns the next
 * id whose hash matches, or NP_IDX_NONE at the end of the probe run. */
static inline uint32_t np_idx_next(const struct np_idx *x, uint32_t h,
				   uint32_t *pos)
{
	if (!x->slot)
		return NP_IDX_NONE;
	for (;; *pos = (*pos + 1) & x->mask) {
		uint64_t s = x->slot[*pos];

		if (!s)
			return NP_IDX_NONE;
		if ((uint32_t)(s >> 32) == h) {
			*pos = (*pos + 1) & x->mask;
			return (uint32_t)s - 1;
		}
	}
}

/* 0, or -1 on ENOMEM.  The caller has checked the key is new. */
int np_idx_insert(struct np_idx *x, uint32_t h, uint32_t id);
/* Remove id, inserted with hash h: 0, or -1 if it is not there. */
int np_idx_remove(struct np_idx *x, uint32_t h, uint32_t id);
/* Room for n ids in all without a resize: 0 or -1 on ENOMEM. */
int np_idx_reserve(struct np_idx *x, uint32_t n);
void np_idx_clear(struct np_idx *x);
void np_idx_free(struct np_idx *x);

static inline size_t np_idx_mem(const struct np_idx *x)
{
	return x->slot ? ((size_t)x->mask + 1) * sizeof(*x->slot) : 0;
}

/* The hash np_idx32 keys id by, for a resize. */
typedef uint32_t (*np_idx32_hash_fn)(const void *owner, uint32_t id);

struct np_idx32 {
	uint32_t *slot;		/* id + 1, 0 free */
	uint32_t size;		/* slots; 0 when slot == NULL */
	uint32_t used;
};

/* The hash scaled to [0, size): the size need not be a power of two. */
static inline uint32_t np_idx32_first(const struct np_idx32 *x, uint32_t h)
{
	return (uint32_t)(((uint64_t)h * x->size) >> 32);
}

/* Every id of the probe run from *pos, or NP_IDX_NONE at its end. */
static inline uint32_t np_idx32_next(const struct np_idx32 *x, uint32_t *pos)
{
	uint32_t s;

	if (!x->slot || !(s = x->slot[*pos]))
		return NP_IDX_NONE;
	*pos = *pos + 1 == x->size ? 0 : *pos + 1;
	return s - 1;
}

/* 0, or -1 on ENOMEM.  The caller has checked the key is new; ids
 * already in the index must hash the same through hash(owner, id). */
int np_idx32_insert(struct np_idx32 *x, uint32_t h, uint32_t id,
		    np_idx32_hash_fn hash, const void *owner);
void np_idx32_clear(struct np_idx32 *x);
void np_idx32_free(struct np_idx32 *x);

static inline size_t np_idx32_mem(const struct np_idx32 *x)
{
	return (size_t)x->size * sizeof(*x->slot);
}

#endif /* NP_IDX_H */
