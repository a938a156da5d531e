/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Internal to the store: the segment header as laid out on disk and the
 * helpers store.c and store_seg.c share.  See docs/store-format.md.
 */
#ifndef NP_STORE_SEG_H
#define NP_STORE_SEG_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include "store.h"
#include "np_fileio.h"

#define NP_SEG_MAGIC	"NMIPSEG\n"	/* 8 bytes, no NUL on disk */
/*
 * 4: records only; strings, frames and stacks live in the epoch's stack
 *    dictionary (store_dict.c), which the 128-byte header names.  Written
 *    by the directory store.
 * 3: self-contained (own tables), frames sorted by content with the name
 *    and offset columns delta-coded.  Still written to standalone files
 *    (np_seg_encode), which have no dictionary.
 * 2: nodes in preorder with an "up" column, frame offsets delta-coded in
 *    (dso, offset) order.  1: id - parent, absolute offsets.
 * Every version from 1 is read.
 */
#define NP_SEG_VERSION		3	/* np_seg_encode (self-contained) */
#define NP_SEG_VERSION_DICT	4	/* store segments */
#define NP_SEG_VERSION_MIN	1
/* A header that passes its CRC but claims more than this is rejected
 * before anything is allocated. */
#define NP_SEG_MAX_PAYLOAD	(256ULL << 20)

/*
 * Every version's header starts with these fields, little-endian and
 * naturally aligned, so one reader takes them from any version.
 */
#define NP_SEG_PREFIX_FIELDS						\
	char magic[8];							\
	uint16_t version;						\
	uint16_t hdr_size;						\
	uint32_t flags;							\
	uint64_t start_ns, end_ns;					\
	uint64_t samples, lost;						\
	uint32_t nr_strings, nr_frames, nr_nodes, nr_records;		\
	uint64_t raw_size, comp_size;					\
	uint32_t payload_crc;	/* crc32c of the comp_size payload bytes */

struct np_seg_prefix {
	NP_SEG_PREFIX_FIELDS
};

/* Versions 1-3: 96 bytes. */
struct np_seg_hdr {
	NP_SEG_PREFIX_FIELDS
	uint32_t period_ns[2];	/* u64 at offset 84 (np_seg_seal), 0: unknown */
	uint32_t hdr_crc;	/* crc32c of the 92 bytes before it */
};

_Static_assert(sizeof(struct np_seg_hdr) == 96, "segment header layout");

/* Version 4: the prefix, then the dictionary the records' ids refer to.
 * nr_strings/nr_frames/nr_nodes are the sizes of the dictionary's tables
 * at dict_len (ids are below them). */
struct np_seg_hdr4 {
	NP_SEG_PREFIX_FIELDS
	uint32_t dict_crc;	/* crc32c of the dictionary's first dict_len bytes */
	uint64_t epoch;		/* profile/dict-<epoch>.npd */
	uint64_t dict_len;	/* bytes of it this segment needs */
	uint64_t period_ns;	/* as in version 3 */
	uint32_t reserved[3];
	uint32_t hdr_crc;	/* crc32c of the 124 bytes before it */
};

_Static_assert(sizeof(struct np_seg_hdr4) == 128, "v4 segment header layout");

#define NP_SEG_PAYLOAD_CRC_OFF	offsetof(struct np_seg_prefix, payload_crc)
_Static_assert(offsetof(struct np_seg_hdr, payload_crc) == 80 &&
	       offsetof(struct np_seg_hdr4, payload_crc) == 80 &&
	       offsetof(struct np_seg_hdr4, dict_crc) == 84,
	       "the prefix is the same in every version");
/* The sampling period's place: reserved (0) before it was written. */
#define NP_SEG_PERIOD_OFF(hdr_size)	\
	((hdr_size) == sizeof(struct np_seg_hdr4) ?	\
	 offsetof(struct np_seg_hdr4, period_ns) : offsetof(struct np_seg_hdr, period_ns))
_Static_assert(offsetof(struct np_seg_hdr4, period_ns) == 104 &&
	       offsetof(struct np_seg_hdr, period_ns) == 84, "period offsets");

/* The longest header of any version: what a reader fetches first. */
#define NP_SEG_HDR_MAX	sizeof(struct np_seg_hdr4)

/* One chunk of a stack dictionary file (profile/dict-<epoch>.npd):
 * this header and a zstd frame with the tables' new rows. */
#define NP_DICT_MAGIC	"NMIPDCT\n"
#define NP_DICT_VERSION	1
/* The payload ends with build-ids of objects, new or changed. */
#define NP_DICT_F_OBJECTS	(1U << 0)
struct np_dict_hdr {
	char magic[8];
	uint16_t version;
	uint16_t hdr_size;	/* 72 */
	uint32_t flags;		/* NP_DICT_F_OBJECTS */
	uint64_t epoch;		/* the file's epoch */
	uint64_t offset;	/* file offset of this chunk */
	uint32_t base_strings, base_frames, base_nodes;	/* rows before it */
	uint32_t nr_strings, nr_frames, nr_nodes;	/* rows it adds */
	uint32_t raw_size, comp_size;
	uint32_t payload_crc;	/* crc32c of the comp_size bytes */
	uint32_t hdr_crc;	/* crc32c of the 68 bytes before it */
};

_Static_assert(sizeof(struct np_dict_hdr) == 72, "dictionary chunk layout");

/* Format one line and pass it to warn (or stderr). */
void np_store_warnf(np_warn_fn warn, void *arg, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* ---- stack dictionaries (store_dict.c) ---------------------------- */

/* The writer's open epoch: a mirror of the dictionary file's tables. */
struct np_epoch {
	uint64_t id;
	int fd;			/* dict file, appended to; -1: none open */
	uint64_t len;		/* bytes written and synced */
	uint32_t crc;		/* crc32c of those bytes */
	uint32_t segs;		/* segments written against it */
	struct np_stacktab *tab;	/* what the file holds, interned */
	uint32_t nstr, nfr, nnode;	/* rows in the file (nodes without root) */
	uint32_t *objs;		/* the next chunk's objects: dso, build-id */
	uint32_t nr_objs, cap_objs;	/* (pairs of epoch string ids) */
};

/*
 * Encode a's slice against ep: new strings, frames and stack nodes are
 * added to ep->tab and returned as one dictionary chunk (*chunk, or NULL
 * when nothing is new), the counts as a version-4 segment that needs the
 * dictionary up to the end of that chunk.  ep->tab is changed even when
 * the chunk is not written afterwards: the caller then abandons the epoch.
 * np_epoch_commit() records a chunk as written.  0 or -errno.
 */
int np_epoch_encode(struct np_epoch *ep, const struct np_agg *a,
		    uint64_t start_ns, uint64_t end_ns, int level,
		    void **chunk, size_t *chunklen, void **seg, size_t *seglen);
void np_epoch_commit(struct np_epoch *ep, const void *chunk, size_t chunklen);
/* Distinct stack nodes a's entries use (UINT32_MAX: out of memory). */
uint32_t np_slice_nodes(const struct np_agg *a);
/* Close the file and drop the tables. */
void np_epoch_reset(struct np_epoch *ep);

/* A reader's view of the dictionaries: one epoch loaded at a time. */
struct np_dict_rd;
struct np_dict_rd *np_dict_rd_new(const char *pdir);
void np_dict_rd_free(struct np_dict_rd *rd);
/* Check and merge one version-4 segment, loading its dictionary. */
int np_seg_decode_dict(struct np_dict_rd *rd, const void *buf, size_t len,
		       struct np_agg *a, int64_t pid, char *err, size_t errlen);

/*
 * Merge every segment of buf (len bytes, named name in warnings) into a;
 * resynchronises on the magic after damage, so one bad segment does not
 * hide the ones after it.  rd: the store's dictionaries (NULL: a file).
 * 0, or the -errno np_store_err_transient() names (damage is no error).
 */
int np_seg_read_buf(const char *name, const uint8_t *buf, size_t len,
		    const struct np_read_opts *o, struct np_agg *a,
		    struct np_read_stats *st, struct np_dict_rd *rd);
/* Merge one segment file of a store directory; damage is reported
 * through o->warn and counted in st->skipped.  rd resolves version-4
 * segments (NULL: they are skipped as needing a dictionary).
 * 0, -errno, or -EBADMSG (damage). */
int np_seg_read_one(const char *path, const struct np_read_opts *o,
		    struct np_agg *a, struct np_read_stats *st,
		    struct np_dict_rd *rd);

#endif /* NP_STORE_SEG_H */
