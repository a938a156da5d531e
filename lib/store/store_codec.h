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
