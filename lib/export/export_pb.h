/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A minimal protocol-buffers writer: varints, tags, length-delimited
 * fields and packed repeated varints, into a growable buffer.  Enough
 * for profile.proto; nested messages are built in their own buffer and
 * appended with np_pb_msg, so lengths are always known up front.
 */
#ifndef NP_EXPORT_PB_H
#define NP_EXPORT_PB_H

#include <stddef.h>
#include <stdint.h>

enum np_pb_wire {
	NP_PB_VARINT = 0,
	NP_PB_LEN = 2,
};

struct np_pb {
	uint8_t *data;
	size_t len, cap;
	int oom;		/* an append failed; the buffer is unusable */
};

void np_pb_init(struct np_pb *b);
void np_pb_free(struct np_pb *b);
void np_pb_reset(struct np_pb *b);	/* len = 0, keeps memory */
void np_pb_raw(struct np_pb *b, const void *p, size_t n);
void np_pb_varint(struct np_pb *b, uint64_t v);
void np_pb_tag(struct np_pb *b, uint32_t field, enum np_pb_wire wire);
/* field = v as a varint (int64 fields take the two's complement). */
void np_pb_uint(struct np_pb *b, uint32_t field, uint64_t v);
void np_pb_bytes(struct np_pb *b, uint32_t field, const void *p, size_t n);
void np_pb_str(struct np_pb *b, uint32_t field, const char *s);
void np_pb_msg(struct np_pb *b, uint32_t field, const struct np_pb *sub);
void np_pb_packed(struct np_pb *b, uint32_t field, const uint64_t *v, size_t n);

#endif /* NP_EXPORT_PB_H */
