/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Userspace side of the unwind tables (include/nmiprof/nmiprof_unwind.h),
 * private to lib/ (np_unwind.h is what cli/ and daemon/ see):
 *   unwind_compile.c  an ELF object's CFI (through libdw) -> a table
 *   unwind_cache.c    tables on disk, keyed by build-id
 *   unwinder.c        per-process mappings -> tables, and the walk over
 *                     a sample's copied user stack (unwind_walk.c)
 */
#ifndef NP_UNWIND_IMPL_H
#define NP_UNWIND_IMPL_H

#include <stddef.h>
#include <stdint.h>
#include <nmiprof/nmiprof_unwind.h>
#include "np_unwind.h"

struct np_event;
struct np_symbolizer;
struct np_uw_regs;		/* lib/unwind/np_unwind_walk.h */

/* What an object's executable PT_LOADs map: file offset -> vaddr. */
struct np_uw_seg {
	uint64_t off, vaddr, filesz;
};
#define NP_UW_MAX_SEGS	4

/* One object's table in memory with what maps file offsets into it. */
struct np_uw_obj {
	struct nmiprof_uw_table *t;	/* validated */
	size_t bytes;			/* of t */
	struct np_uw_seg segs[NP_UW_MAX_SEGS];
	int nr_segs;
	int cached;			/* read from the cache, not compiled */
	int head_only;			/* t is the header: rows in the cache */
	const char *cache_dir;		/* where, for np_uw_obj_rows() */
};

struct np_uw_compile_stats {
	uint64_t eh_frame_bytes, debug_frame_bytes;
	uint64_t rows_cfa, rows_fp, rows_other;
};

/*
 * Compile the table of the ELF file open at fd (path for messages and
 * for finding a debug file under debug_root by build-id; NULL debug_root:
 * none).  Returns a malloc'd, validated table and its size, or NULL with
 * err filled.
 */
struct nmiprof_uw_table *np_uw_compile(int fd, const char *path,
				       const char *debug_root, size_t *len,
				       struct np_uw_compile_stats *st,
				       char *err, size_t errlen);

/* The cache: <dir>/<build-id hex>.uw; written to a temp file, renamed. */
struct nmiprof_uw_table *np_uw_cache_read(const char *dir, const uint8_t *bid,
					  int bid_size, size_t *len);
int np_uw_cache_write(const char *dir, const struct nmiprof_uw_table *t,
		      size_t len);
#define NP_UW_CACHE_DIR		"/var/cache/nmiprof/unwind"
/* Part of a cache file's name: bump when the compiler's output changes. */
#define NP_UW_COMPILER_REV	1

/*
 * Load the object open at fd: its build-id and segments from the ELF,
 * its table from cache_dir when there and valid, else compiled (and
 * written back) if flags has NP_UW_LOAD_COMPILE, else NULL with *deferred
 * set.  NULL with err filled when it has no usable CFI.
 */
#define NP_UW_LOAD_COMPILE	1	/* may compile a table not cached */
/*
 * The table goes to nmiprof.ko only, which validates it at load: of a
 * cached one only the header is read (head_only), and its rows, when
 * np_uw_obj_rows() reads them, are checked by their crc32c (the table
 * was validated before it was written), not validated here again.
 */
#define NP_UW_LOAD_KERNEL	2
struct np_uw_obj *np_uw_obj_load(int fd, const char *path,
				 const char *cache_dir, const char *debug_root,
				 int flags, int *deferred,
				 char *err, size_t errlen);
/*
 * A head_only object's rows, read from its cache file: 0, or -1 when the
 * file is gone or bad (removed then, to be compiled again).
 */
int np_uw_obj_rows(struct np_uw_obj *o);
void np_uw_obj_free(struct np_uw_obj *o);

/* ---- unwinder.c ---------------------------------------------------- */

struct np_unwinder_opts {
	const char *cache_dir;		/* NULL: NP_UW_CACHE_DIR; "": no cache */
	const char *debug_root;		/* NULL: "/usr/lib/debug" */
	int for_kernel;			/* tables for nmiprof.ko only
					 * (NP_UW_LOAD_KERNEL) */
	int paced;			/* system-wide: compiles paced */
};

struct np_unwinder_stats {
	uint64_t walks;
	uint64_t stops[NMIPROF_UW_STOP_NR];	/* per enum nmiprof_uw_stop */
	uint64_t tables, table_bytes, objects_without;
	uint64_t compiled, cache_hits, deferred;
};

struct np_unwinder;
struct np_unwinder *np_unwinder_new(const struct np_unwinder_opts *o,
				    char *err, size_t errlen);
/* Side-band events (MMAP, COMM, FORK, EXIT), in time order. */
void np_unwinder_event(struct np_unwinder *u, const struct np_event *ev);
/*
 * Unwind pid's user stack: regs at the sample, stack the bytes copied
 * from regs->sp upwards.  Writes at most max frames (innermost first);
 * returns enum nmiprof_uw_stop.
 */
int np_unwinder_walk(struct np_unwinder *u, uint32_t pid,
		     const struct np_uw_regs *regs, const void *stack,
		     size_t stack_len, uint64_t *frames, unsigned int max,
		     unsigned int *nr);
/*
 * pid's executable code as nmiprof.ko's mapping sets want it: [start, end)
 * of the process's addresses at ELF vaddr addr - bias of obj (NULL: no
 * table there), sorted and disjoint.  Tables come from the cache, or are
 * compiled within the unwinder's budget; *deferred counts objects whose
 * compile was put off (ask again later).  Returns the spans written, at
 * most max, or -1 if pid is unknown.
 */
struct np_uw_span {
	uint64_t start, end, bias;
	struct np_uw_obj *obj;
};
int np_unwinder_spans(struct np_unwinder *u, uint32_t pid,
		      struct np_uw_span *out, int max, int *deferred);
void np_unwinder_stats(const struct np_unwinder *u, struct np_unwinder_stats *st);
void np_unwinder_free(struct np_unwinder *u);

#endif /* NP_UNWIND_IMPL_H */
