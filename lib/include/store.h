/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The continuous on-disk profile store and the standalone profile file.
 * Format: docs/store-format.md.
 *
 * Writers (nmiprofd, `nmiprof record -o`) hand over one aggregated time
 * slice (struct np_agg) at a time; each becomes one zstd-compressed,
 * checksummed segment.  A directory store keeps one segment per file
 * whose strings, frames and stacks live in the epoch's stack dictionary,
 * an index, retention by size and age, and lockup reports (lockstore.h)
 * beside them.  A standalone file is self-contained segments (their own
 * tables) back to back.
 *
 * Readers merge every segment overlapping [since, until] into one
 * np_agg (whose stack table is then the merged, symbolized view) and
 * walk it with np_profile_foreach().  A corrupt, truncated or foreign
 * file is reported in one line through the warn callback and skipped.
 *
 * Times are CLOCK_REALTIME nanoseconds (a profile outlives the boot).
 */
#ifndef NP_STORE_H
#define NP_STORE_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include "agg.h"

#define NP_STORE_DEFAULT_DIR		"/var/lib/nmiprof"
#define NP_STORE_DEFAULT_MAX_BYTES	(1ULL << 30)
#define NP_STORE_DEFAULT_MAX_AGE_NS	(7ULL * 24 * 3600 * 1000000000ULL)
#define NP_STORE_DEFAULT_SLICE_NS	(60ULL * 1000000000ULL)
/* zstd level; 0 (the default) picks one by payload size: np_seg_encode() */
#define NP_STORE_DEFAULT_LEVEL		0

/* One line describing a skipped file or segment, without newline. */
typedef void (*np_warn_fn)(void *arg, const char *msg);

/* ---- segment codec (store_seg.c) ---------------------------------- */

struct np_seg_info {
	uint64_t start_ns, end_ns;	/* CLOCK_REALTIME */
	uint64_t samples, lost;
	uint32_t nr_strings, nr_frames, nr_nodes, nr_records;
	uint32_t flags;			/* NP_SEG_F_* */
	uint32_t version;
	uint64_t raw_size, comp_size;	/* payload bytes */
	uint64_t size;			/* header + payload */
	/* version 4: the stack dictionary the segment needs (0: none) */
	uint64_t epoch, dict_len;
	uint32_t dict_crc;
	uint64_t period_ns;		/* CPU time per sample, 0: unknown */
};

#define NP_SEG_F_BY_CPU		(1U << 0)
/* The payload ends with the objects' build-ids (docs/store-format.md). */
#define NP_SEG_F_OBJECTS	(1U << 1)

/* Encode a's current slice.  *out is malloc'ed.  0 or -errno.
 * level: zstd level, or 0 to pick one by payload size. */
int np_seg_encode(const struct np_agg *a, uint64_t start_ns, uint64_t end_ns,
		  int level, void **out, size_t *outlen);
/* Validate a segment header at buf (len bytes available, >= header).
 * 0, or -EAGAIN if len is too short, -EBADMSG with a reason in err. */
int np_seg_header(const void *buf, size_t len, struct np_seg_info *info,
		  char *err, size_t errlen);
/* Check and merge a whole segment (header + payload) into a. */
int np_seg_decode(const void *buf, size_t len, struct np_agg *a, int64_t pid,
		  char *err, size_t errlen);

/* ---- readers (store_read.c, profile.c, store.c) ------------------- */

struct np_read_opts {
	uint64_t since_ns, until_ns;	/* 0: unbounded */
	int64_t pid;			/* -1: every process */
	np_warn_fn warn;		/* NULL: "nmiprof: ..." on stderr */
	void *warn_arg;
};

struct np_read_stats {
	uint32_t segments;		/* merged */
	uint32_t skipped;		/* corrupt / unreadable, reported */
	uint64_t samples, lost;
	uint64_t first_ns, last_ns;	/* span of the merged segments */
	uint64_t period_ns;		/* the merged segments' sampling period,
					 * 0: none known */
	int period_mixed;		/* they differ: period_ns is the first */
};

void np_read_opts_init(struct np_read_opts *o);
/* Segments of a store directory (NP_STORE_DEFAULT_DIR layout) or of a
 * standalone file, overlapping [since, until], merged into a (create it
 * with np_agg_new(NULL)).  0, or -errno if dir/file cannot be read at
 * all (err filled).  Damaged segments do not make it fail. */
int np_store_read(const char *dir, const struct np_read_opts *o,
		  struct np_agg *a, struct np_read_stats *st,
		  char *err, size_t errlen);
int np_profile_read(const char *path, const struct np_read_opts *o,
		 struct np_agg *a, struct np_read_stats *st,
		 char *err, size_t errlen);

/*
 * One segment at a time, by the name np_store_list() gave (the fleet
 * exporter ships each slice alone).  The reader keeps the stack
 * dictionary it last loaded, so consecutive segments of one epoch load it
 * once.  Read returns 0, -ENOENT if retention removed the segment, or
 * -errno / -EBADMSG (err filled) if it cannot be read; after an error
 * np_store_err_transient() names, a later read may succeed.
 */
struct np_store_reader;
struct np_store_reader *np_store_reader_open(const char *dir);
/* A read error a later attempt may not meet (memory, file descriptors):
 * the segment is not damaged, it was not read. */
static inline int np_store_err_transient(int err)
{
	return err == -ENOMEM || err == -EMFILE || err == -ENFILE;
}
int np_store_reader_read(struct np_store_reader *r, const char *name,
			 struct np_agg *a, struct np_read_stats *st,
			 char *err, size_t errlen);
void np_store_reader_close(struct np_store_reader *r);

/* Segment list of a store, oldest first (for `nmiprof status`). */
typedef int (*np_seg_fn)(const char *name, const struct np_seg_info *info,
			 void *arg);
int np_store_list(const char *dir, np_seg_fn fn, void *arg, np_warn_fn warn,
		  void *warn_arg, char *err, size_t errlen);
/* Total size and number of the stack dictionary files (format v4). */
int np_store_dict_bytes(const char *dir, uint64_t *bytes, uint64_t *files);

/* One merged tuple; frames innermost first, valid during the callback. */
struct np_prof_sample {
	uint32_t pid, cpu;		/* cpu NP_CPU_ANY if not recorded */
	const char *comm;
	uint32_t stack;			/* id in np_agg_stacktab(a) */
	uint64_t count;
	unsigned int nr_frames;
	const struct np_sym *const *frames;
};
typedef int (*np_prof_fn)(const struct np_prof_sample *s, void *arg);
/* Highest count first.  Stops early and returns fn's value if nonzero. */
int np_profile_foreach(const struct np_agg *a, np_prof_fn fn, void *arg);

/* ---- standalone file writer (`nmiprof record -o`): profile.c ------ */

struct np_profile;
/*
 * Starts a profile for path under a temporary name beside it (0600);
 * path itself is untouched until np_profile_commit().  NULL with err and
 * errno on failure.
 */
struct np_profile *np_profile_create(const char *path, int level,
			       char *err, size_t errlen);
/*
 * Gives the profile its name: a non-empty file already at path becomes
 * path.old.  Segments written before and after land in the same file.
 */
int np_profile_commit(struct np_profile *f, char *err, size_t errlen);
/* Append one segment and fdatasync: a crash keeps every earlier one. */
int np_profile_write(struct np_profile *f, const struct np_agg *a,
		  uint64_t start_ns, uint64_t end_ns, char *err, size_t errlen);
/* Commits (if not done yet) and closes. */
int np_profile_close(struct np_profile *f);
/* Closes; an uncommitted profile is removed, path left as it was. */
void np_profile_discard(struct np_profile *f);

/* ---- directory store writer (nmiprofd) ---------------------------- */

struct np_store_opts {
	const char *dir;		/* NP_STORE_DEFAULT_DIR */
	uint64_t max_bytes;		/* profiles + lockups, 0: unlimited */
	uint64_t max_age_ns;		/* 0: unlimited */
	int level;			/* zstd level, 0: by size */
	np_warn_fn warn;
	void *warn_arg;
};

struct np_store;

void np_store_opts_init(struct np_store_opts *o);
/* Creates the layout if needed, takes the writer lock (one daemon per
 * directory), deletes temp files a crash left, reconciles the index. */
struct np_store *np_store_open(const struct np_store_opts *o,
			       char *err, size_t errlen);
/* Write a's slice as one segment (crash-safe: temp, fdatasync, rename,
 * fsync dir), then apply retention against the realtime clock. */
int np_store_write(struct np_store *s, const struct np_agg *a,
		   uint64_t start_ns, uint64_t end_ns, char *err, size_t errlen);
/* Retention alone (also run by np_store_write); now_ns 0: read the
 * realtime clock. */
int np_store_prune(struct np_store *s, uint64_t now_ns);
/* The disk is full: drop the oldest segment (never the newest).  Bytes
 * freed, 0 when nothing is left to drop. */
uint64_t np_store_make_room(struct np_store *s);
/* Heap bytes the writer holds (its mirror of the open dictionary). */
size_t np_store_mem(const struct np_store *s);
/* Total bytes of segments and lockups the store holds. */
uint64_t np_store_bytes(const struct np_store *s);
const char *np_store_dir(const struct np_store *s);
void np_store_close(struct np_store *s);

#endif /* NP_STORE_H */
