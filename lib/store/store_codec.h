/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Internal to the store: the varint column writer and bounds-checked
 * reader shared by the segment codec (store_seg.c) and the stack
 * dictionary (store_dict.c), and the table orderings both use.
 * Formats: docs/store-format.md.
 */
#ifndef NP_STORE_CODEC_H
#define NP_STORE_CODEC_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "stacktab.h"

/* Growing output buffer; oom latches so callers check once at the end. */
struct np_buf {
	uint8_t *p;
	size_t len, cap;
	int oom;
};

static inline void np_buf_reserve(struct np_buf *b, size_t more)
{
	size_t nc;
	uint8_t *n;

	if (b->oom || b->len + more <= b->cap)
		return;
	nc = b->cap ? b->cap : 4096;
	while (nc < b->len + more)
		nc *= 2;
	n = realloc(b->p, nc);
	if (!n) {
		b->oom = 1;
		return;
	}
	b->p = n;
	b->cap = nc;
}

/* Unsigned LEB128. */
static inline void np_put_var(struct np_buf *b, uint64_t v)
{
	np_buf_reserve(b, 10);
	if (b->oom)
		return;
	while (v >= 0x80) {
		b->p[b->len++] = (uint8_t)v | 0x80;
		v >>= 7;
	}
	b->p[b->len++] = (uint8_t)v;
}

static inline void np_put_bytes(struct np_buf *b, const void *p, size_t len)
{
	np_buf_reserve(b, len);
	if (b->oom)
		return;
	memcpy(b->p + b->len, p, len);
	b->len += len;
}

static inline uint64_t np_zigzag(int64_t v)
{
	return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
}

static inline int64_t np_unzigzag(uint64_t v)
{
	return (int64_t)(v >> 1) ^ -(int64_t)(v & 1);
}

/* Reader over untrusted bytes: bad latches on any overrun. */
struct np_rd {
	const uint8_t *p, *end;
	int bad;
};

static inline uint64_t np_get_var(struct np_rd *r)
{
	uint64_t v = 0;

	for (int shift = 0; shift < 64; shift += 7) {
		uint8_t c;

		if (r->p >= r->end)
			break;
		c = *r->p++;
		v |= (uint64_t)(c & 0x7f) << shift;
		if (!(c & 0x80))
			return v;
	}
	r->bad = 1;
	return 0;
}

/* An id read from disk indexes tables: reject it unless below limit. */
static inline uint32_t np_get_id(struct np_rd *r, uint32_t limit)
{
	uint64_t v = np_get_var(r);

	if (v >= limit) {
		r->bad = 1;
		return 0;
	}
	return (uint32_t)v;
}

/* Sort frame ids of st by content: (dso, kernel, name, offset), strings
 * compared bytewise, "no name" first (store_seg.c). */
void np_seg_sort_frames(const struct np_stacktab *st, uint32_t *ids, uint32_t n);
/*
 * The nodes of st marked nonzero in mark[0..nr_nodes) (every ancestor of
 * a marked node must be marked), in depth-first preorder, siblings in
 * creation order: *order (malloc'ed, *nr entries) lists global ids.
 * mark is overwritten.  0 or -ENOMEM.
 */
int np_seg_preorder(const struct np_stacktab *st, uint32_t *mark,
		    uint32_t **order, uint32_t *nr);
/* zstd level for a payload of len bytes (level 0 = by size). */
int np_seg_level(size_t len);
/*
 * zstd-compress b into a new buffer behind hdr_size bytes left for the
 * caller's header (level <= 0: np_seg_level()).  NULL on ENOMEM or a
 * zstd error; *clen is the compressed length.  store_seg.c.
 */
uint8_t *np_seg_compress(size_t hdr_size, const struct np_buf *b, int level,
			 size_t *clen);

#endif /* NP_STORE_CODEC_H */
