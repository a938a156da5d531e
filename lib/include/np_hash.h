/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The one hash function (wyhash's multiply-fold) every table in lib/,
 * daemon/ and cli/ uses; np_idx.h is the one index over it.
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

#endif /* NP_HASH_H */
