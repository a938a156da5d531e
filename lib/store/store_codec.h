/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Internal to the store: what the segment codec (store_seg.c) and the
 * stack dictionary (store_dict.c) share beyond np_buf.h's varints: the
 * table orderings and compression.
 * Formats: docs/store-format.md.
 */
#ifndef NP_STORE_CODEC_H
#define NP_STORE_CODEC_H

#include <stdint.h>
#include "np_buf.h"
#include "stacktab.h"

/* Order of a v3 segment's records (np_agg_entry): pid, comm, cpu, stack. */
int np_seg_rec_cmp(const void *a, const void *b);
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
struct np_seg_prefix;
struct np_seg_info;
struct np_agg_entry;

/* zstd level for a payload of len bytes (level 0 = by size). */
int np_seg_level(size_t len);
/*
 * zstd-compress b into a new buffer behind hdr_size bytes left for the
 * caller's header (level <= 0: np_seg_level()).  NULL on ENOMEM or a
 * zstd error; *clen is the compressed length.
 */
uint8_t *np_seg_compress(size_t hdr_size, const struct np_buf *b, int level,
			 size_t *clen);
/*
 * A segment of payload b: p's prefix fields (magic, raw and compressed
 * sizes and payload_crc filled in here) in a zeroed p->hdr_size-byte
 * header, then the compressed payload.  The caller sets its version's
 * fields and calls np_seg_seal().  NULL on ENOMEM or a zstd error.
 */
uint8_t *np_seg_pack(const struct np_buf *b, const struct np_seg_prefix *p,
		     int level, size_t *seglen);
/* Store the header's crc32c in its last 4 bytes. */
void np_seg_seal(uint8_t *seg, uint64_t period_ns);
/* 0 if the payload of a segment whose header np_seg_header() read into
 * in matches its checksum, else -EBADMSG with err. */
int np_seg_payload_check(const void *buf, const struct np_seg_info *in,
			 char *err, size_t errlen);
/* Its decompressed payload (in->raw_size bytes, malloc'ed), or NULL
 * with err and *ret. */
uint8_t *np_seg_payload(const void *buf, const struct np_seg_info *in,
			char *err, size_t errlen, int *ret);

/*
 * The record columns of every version, in segment ids: pid delta, comm,
 * cpu + 1 (0: any), zigzag stack delta, count.  recs sorted by pid.
 * Returns the NP_SEG_F_BY_CPU flag when a record has a cpu.
 */
uint32_t np_seg_put_records(struct np_buf *b, const struct np_agg_entry *recs,
			    uint32_t nr);

struct np_seg_recs {
	uint32_t nr;
	uint32_t *pid, *comm, *cpu, *stack;
	uint64_t *count;
};

int np_seg_recs_alloc(struct np_seg_recs *rc, uint32_t nr);
/*
 * The objects section (NP_SEG_F_OBJECTS, after the records; also after
 * a dictionary chunk's nodes): a count, then a column of dso string ids
 * and one of their build-id string ids.  *objs (malloc'ed) holds the
 * dsos, then the build-ids: 2 * *nr ids.  -ENOMEM, else 0 (r->bad on
 * a malformed section).
 */
int np_seg_get_objects(struct np_rd *r, uint32_t nr_strings, uint32_t **objs,
		       uint32_t *nr);
void np_seg_recs_free(struct np_seg_recs *rc);
/* Read rc->nr records; comm ids must be below nr_strs, stacks at most
 * nr_nodes, or r->bad latches. */
void np_seg_get_records(struct np_rd *r, struct np_seg_recs *rc,
			uint32_t nr_strs, uint32_t nr_nodes);

#endif /* NP_STORE_CODEC_H */
