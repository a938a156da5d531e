/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A minimal protocol-buffers writer: tags, length-delimited fields and
 * packed repeated varints into an np_buf (varints: np_put_var()).
 * Enough for profile.proto; nested messages are built in their own buffer and
 * appended with np_pb_msg, so lengths are always known up front.
 */
#ifndef NP_EXPORT_PB_H
#define NP_EXPORT_PB_H

#include <stddef.h>
#include <stdint.h>
#include "np_buf.h"

enum np_pb_wire {
	NP_PB_VARINT = 0,
	NP_PB_LEN = 2,
};

void np_pb_tag(struct np_buf *b, uint32_t field, enum np_pb_wire wire);
/* field = v as a varint (int64 fields take the two's complement). */
void np_pb_uint(struct np_buf *b, uint32_t field, uint64_t v);
void np_pb_bytes(struct np_buf *b, uint32_t field, const void *p, size_t n);
void np_pb_str(struct np_buf *b, uint32_t field, const char *s);
void np_pb_msg(struct np_buf *b, uint32_t field, const struct np_buf *sub);
void np_pb_packed(struct np_buf *b, uint32_t field, const uint64_t *v, size_t n);

#endif /* NP_EXPORT_PB_H */
