// SPDX-License-Identifier: GPL-2.0
/* Protocol-buffers wire encoding (see export_pb.h). */
#include <stdlib.h>
#include <string.h>

#include "export_pb.h"

void np_pb_init(struct np_pb *b)
{
	memset(b, 0, sizeof(*b));
}

void np_pb_free(struct np_pb *b)
{
	free(b->data);
	np_pb_init(b);
}

void np_pb_reset(struct np_pb *b)
{
	b->len = 0;
}

void np_pb_raw(struct np_pb *b, const void *p, size_t n)
{
	if (b->oom)
		return;
	if (b->len + n > b->cap) {
		size_t cap = b->cap ? b->cap : 256;
		uint8_t *d;

		while (cap < b->len + n)
			cap *= 2;
		d = realloc(b->data, cap);
		if (!d) {
			b->oom = 1;
			return;
		}
		b->data = d;
		b->cap = cap;
	}
	if (n)
		memcpy(b->data + b->len, p, n);
	b->len += n;
}

void np_pb_varint(struct np_pb *b, uint64_t v)
{
	uint8_t tmp[10];
	size_t n = 0;

	/* Little-endian base 128, high bit set on all but the last byte. */
	do {
		tmp[n] = v & 0x7f;
		v >>= 7;
		if (v)
			tmp[n] |= 0x80;
		n++;
	} while (v);
	np_pb_raw(b, tmp, n);
}

void np_pb_tag(struct np_pb *b, uint32_t field, enum np_pb_wire wire)
{
	np_pb_varint(b, ((uint64_t)field << 3) | wire);
}

void np_pb_uint(struct np_pb *b, uint32_t field, uint64_t v)
{
	np_pb_tag(b, field, NP_PB_VARINT);
	np_pb_varint(b, v);
}

void np_pb_bytes(struct np_pb *b, uint32_t field, const void *p, size_t n)
{
	np_pb_tag(b, field, NP_PB_LEN);
	np_pb_varint(b, n);
	np_pb_raw(b, p, n);
}

void np_pb_str(struct np_pb *b, uint32_t field, const char *s)
{
	np_pb_bytes(b, field, s, strlen(s));
}

void np_pb_msg(struct np_pb *b, uint32_t field, const struct np_pb *sub)
{
	if (sub->oom)
		b->oom = 1;
	np_pb_bytes(b, field, sub->data, sub->len);
}

void np_pb_packed(struct np_pb *b, uint32_t field, const uint64_t *v, size_t n)
{
	size_t len = 0;

	if (!n)
		return;
	for (size_t i = 0; i < n; i++) {
		uint64_t x = v[i];

		do {
			len++;
			x >>= 7;
		} while (x);
	}
	np_pb_tag(b, field, NP_PB_LEN);
	np_pb_varint(b, len);
	for (size_t i = 0; i < n; i++)
		np_pb_varint(b, v[i]);
}
