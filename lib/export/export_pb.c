// SPDX-License-Identifier: GPL-2.0
/* Protocol-buffers wire encoding (see export_pb.h). */
#include <string.h>

#include "export_pb.h"

void np_pb_tag(struct np_buf *b, uint32_t field, enum np_pb_wire wire)
{
	np_put_var(b, ((uint64_t)field << 3) | wire);
}

void np_pb_uint(struct np_buf *b, uint32_t field, uint64_t v)
{
	np_pb_tag(b, field, NP_PB_VARINT);
	np_put_var(b, v);
}

void np_pb_bytes(struct np_buf *b, uint32_t field, const void *p, size_t n)
{
	np_pb_tag(b, field, NP_PB_LEN);
	np_put_var(b, n);
	np_put_bytes(b, p, n);
}

void np_pb_str(struct np_buf *b, uint32_t field, const char *s)
{
	np_pb_bytes(b, field, s, strlen(s));
}

void np_pb_msg(struct np_buf *b, uint32_t field, const struct np_buf *sub)
{
	if (sub->oom)
		b->oom = 1;
	np_pb_bytes(b, field, sub->p, sub->len);
}

void np_pb_packed(struct np_buf *b, uint32_t field, const uint64_t *v, size_t n)
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
	np_put_var(b, len);
	for (size_t i = 0; i < n; i++)
		np_put_var(b, v[i]);
}
