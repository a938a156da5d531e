/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Internal to the store: the segment header as laid out on disk and the
 * helpers store.c and store_seg.c share.  See docs/store-format.md.
 */
#ifndef NP_STORE_SEG_H
#define NP_STORE_SEG_H

#include <stdarg.h>
#include <stdint.h>
#include "store.h"

#define NP_SEG_MAGIC	"NMIPSEG\n"	/* 8 bytes, no NUL on disk */
/* 3: frame name column delta-coded, node frame column predicted from the
 * parent's and previous sibling's frames.  2: nodes in preorder with an
 * "up" column, frame offsets delta-coded in (dso, offset) order.
 * 1 (id - parent, absolute offsets) and 2 are still read. */
#define NP_SEG_VERSION	3
#define NP_SEG_VERSION_MIN	1
/* A header that passes its CRC but claims more than this is rejected
 * before anything is allocated. */
#define NP_SEG_MAX_PAYLOAD	(256ULL << 20)

/* Little-endian, naturally aligned, 96 bytes. */
struct np_seg_hdr {
	char magic[8];
	uint16_t version;
	uint16_t hdr_size;
	uint32_t flags;
	uint64_t start_ns, end_ns;
	uint64_t samples, lost;
	uint32_t nr_strings, nr_frames, nr_nodes, nr_records;
	uint64_t raw_size, comp_size;
	uint32_t payload_crc;	/* crc32c of the comp_size payload bytes */
	uint32_t reserved[2];
	uint32_t hdr_crc;	/* crc32c of the 92 bytes before it */
};

_Static_assert(sizeof(struct np_seg_hdr) == 96, "segment header layout");

/* Format one line and pass it to warn (or stderr). */
void np_store_warnf(np_warn_fn warn, void *arg, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Read a whole regular file (at most max bytes) into *buf. */
int np_read_file(const char *path, size_t max, void **buf, size_t *len);
/* write(2) all of buf, retrying short writes and EINTR. */
int np_write_all(int fd, const void *buf, size_t len);
/* Write path atomically: temp file in the same dir, fsync, rename, fsync
 * dir.  0 or -errno. */
int np_write_atomic(const char *dir, const char *name, const void *buf,
		    size_t len);

/* Merge one segment file of a store directory; damage is reported
 * through o->warn and counted in st->skipped.  0 or -errno. */
int np_seg_read_one(const char *path, const struct np_read_opts *o,
		    struct np_agg *a, struct np_read_stats *st);

#endif /* NP_STORE_SEG_H */
