/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The growable byte buffer and varint codec every writer in lib/ uses:
 * store segments and dictionaries, protocol buffers, control-protocol
 * lines.  Appends latch oom instead of failing, so a writer checks once
 * at the end (as perf's strbuf).  Readers over untrusted bytes latch bad
 * on any overrun.
 */
#ifndef NP_BUF_H
#define NP_BUF_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

struct np_buf {
	uint8_t *p;
	size_t len, cap;
	int oom;		/* an append failed: the contents are unusable */
};

static inline void np_buf_init(struct np_buf *b)
{
	memset(b, 0, sizeof(*b));
}

static inline void np_buf_free(struct np_buf *b)
{
	free(b->p);
	np_buf_init(b);
}

/* Empty, keeping the memory. */
static inline void np_buf_reset(struct np_buf *b)
{
	b->len = 0;
}

/* Text view of a buffer filled through np_buf_puts() (NUL-terminated). */
static inline char *np_buf_str(const struct np_buf *b)
{
	return (char *)b->p;
}

/* Room for more bytes after len; 0, or -1 with oom latched. */
int np_buf_grow(struct np_buf *b, size_t more);

static inline int np_buf_reserve(struct np_buf *b, size_t more)
{
	if (b->oom)
		return -1;
	if (more <= b->cap - b->len)
		return 0;
	return np_buf_grow(b, more);
}

static inline void np_put_bytes(struct np_buf *b, const void *p, size_t len)
{
	if (np_buf_reserve(b, len))
		return;
	if (len)
		memcpy(b->p + b->len, p, len);
	b->len += len;
}

/* Append text and keep a NUL after it (not counted in len). */
static inline void np_buf_puts(struct np_buf *b, const char *s, size_t len)
{
	if (np_buf_reserve(b, len + 1))
		return;
	memcpy(b->p + b->len, s, len);
	b->len += len;
	b->p[b->len] = '\0';
}

/* Unsigned LEB128. */
static inline void np_put_var(struct np_buf *b, uint64_t v)
{
	if (np_buf_reserve(b, 10))
		return;
	while (v >= 0x80) {
		b->p[b->len++] = (uint8_t)v | 0x80;
		v >>= 7;
	}
	b->p[b->len++] = (uint8_t)v;
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

#endif /* NP_BUF_H */
