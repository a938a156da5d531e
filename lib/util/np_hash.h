/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The one hash function (wyhash's multiply-fold) and the one
 * open-addressing index every table in lib/, daemon/ and cli/ uses.
 */
#ifndef NP_HASH_H
#define NP_HASH_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* 64x64->128 multiply folded to 64 bits (the wyhash "mum" step). */
static inline uint64_t np_mum(uint64_t a, uint64_t b)
{
	__uint128_t r = (__uint128_t)a * b;

	return (uint64_t)r ^ (uint64_t)(r >> 64);
}

#define NP_HK0 0xa0761d6478bd642fULL
#define NP_HK1 0xe7037ed1a0b428dbULL
#define NP_HK2 0x8ebc6af09c88c6e3ULL
#define NP_HK3 0x589965cc75374cc3ULL

static inline uint64_t np_hash_u64(uint64_t x)
{
	return np_mum(x ^ NP_HK0, NP_HK1);
}

static inline uint64_t np_hash_bytes(const void *p, size_t len, uint64_t seed)
{
	const unsigned char *b = p;
	uint64_t h = seed ^ NP_HK2 ^ len;

	while (len >= 8) {
		uint64_t w;

		memcpy(&w, b, 8);
		h = np_mum(w ^ NP_HK0, h ^ NP_HK1);
		b += 8;
		len -= 8;
	}
	if (len) {
		uint64_t w = 0;

		memcpy(&w, b, len);
		h = np_mum(w ^ NP_HK3, h ^ NP_HK1);
	}
	return np_mum(h, NP_HK3 ^ NP_HK0);
}

static inline uint64_t np_hash_str(const char *s)
{
	return np_hash_bytes(s, strlen(s), 0);
}

/* Chain one more 64-bit word into a running hash h. */
static inline uint64_t np_hash_add(uint64_t h, uint64_t x)
{
	return np_mum(x ^ NP_HK0, h ^ NP_HK1);
}

/*
 * Id index: maps a 64-bit hash to candidate ids; the owner compares the
 * real key.  Slots hold (hash high bits, id + 1); 0 marks a free slot.
 * Load factor <= 1/2, power-of-two size, linear probing, no deletion
 * (tables only grow or are cleared whole).
 */
struct np_idx {
	uint64_t *slot;		/* (hash32 << 32) | (id + 1) */
	uint32_t mask;		/* size - 1, size 0 when slot == NULL */
	uint32_t used;
};

static inline uint32_t np_idx_h32(uint64_t h)
{
	return (uint32_t)(h >> 32);
}

/* Iteration over candidates: start with pos = np_idx_first(); each call
 * to np_idx_next returns the next id whose hash matches, or NP_ID_NONE. */
static inline uint32_t np_idx_next(const struct np_idx *x, uint64_t h,
				   uint32_t *pos)
{
	if (!x->slot)
		return UINT32_MAX;
	for (;; *pos = (*pos + 1) & x->mask) {
		uint64_t s = x->slot[*pos];

		if (!s)
			return UINT32_MAX;
		if ((uint32_t)(s >> 32) == np_idx_h32(h)) {
			uint32_t id = (uint32_t)s - 1;

			*pos = (*pos + 1) & x->mask;
			return id;
		}
	}
}

static inline uint32_t np_idx_first(const struct np_idx *x, uint64_t h)
{
	return np_idx_h32(h) & x->mask;
}

/* Returns 0, or -1 on ENOMEM.  The caller has checked the key is new. */
int np_idx_insert(struct np_idx *x, uint64_t h, uint32_t id);
void np_idx_clear(struct np_idx *x);
void np_idx_free(struct np_idx *x);
static inline size_t np_idx_mem(const struct np_idx *x)
{
	return x->slot ? ((size_t)x->mask + 1) * sizeof(*x->slot) : 0;
}

#endif /* NP_HASH_H */
