/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Fleet profiles in ClickHouse: the schema (docs/fleet.md), one stored
 * slice as rows, and the queries `--cluster` runs.
 *
 * A stack is stored once per day and shard, keyed by a content hash of
 * its symbolized frames that every host computes alike; samples rows
 * name it.  Each attempt to ship a slice carries a fresh random batch id;
 * the slice's row in `slices`, inserted last, commits the batch.  Queries
 * count only the first committed batch of each (host, slice start), so
 * an attempt cut short, or one repeated after a crash before the cursor
 * was written, is never counted twice.
 */
#ifndef NP_FLEET_H
#define NP_FLEET_H

#include <stddef.h>
#include <stdint.h>

#include "agg.h"
#include "np_ch.h"
#include "np_idx.h"

/* ---- schema (fleet_schema.c) --------------------------------------- */

/*
 * Create the database, the local tables and the Distributed tables over
 * cluster (a <remote_servers> name of the server's configuration) on
 * the server c talks to; IF NOT EXISTS throughout, so it is idempotent.
 */
int np_fleet_schema_create(struct np_ch *c, const char *cluster,
			   char *err, size_t errlen);
/*
 * 1 if table (of c's database) has column on c's server, 0 if not (a
 * server made by an older schema), -1 (err set).
 */
int np_fleet_has_column(struct np_ch *c, const char *table, const char *column,
			char *err, size_t errlen);
/*
 * Server-side retention: drop the day partitions older than before_ns
 * of the local tables on c's server (one shard).  18.16 has no TTL.
 * *dropped counts the partitions dropped.
 */
int np_fleet_prune(struct np_ch *c, uint64_t before_ns, unsigned int *dropped,
		   char *err, size_t errlen);
/* Per-day rollups of this shard's days before before_ns: *made of them. */
int np_fleet_rollup(struct np_ch *c, uint64_t before_ns, unsigned int *made,
		    char *err, size_t errlen);

/* ---- one slice as rows (fleet_rows.c) ------------------------------ */

/* Content hash of a symbolized stack, innermost frame first. */
uint64_t np_fleet_stack_hash(const struct np_sym *const *frames,
			     unsigned int nr);
/*
 * Content hash of one frame: its id in the frames table.  It covers the
 * object's build-id when the frame has one (another build of a library
 * at the same path is another frame), so frames without one keep the
 * ids of the first schema.
 */
uint64_t np_fleet_frame_hash(const struct np_sym *f);

struct np_fleet_slice {
	const char *host;
	const char *labels;	/* "k=v,k=v" or "" */
	uint64_t start_ns, end_ns, batch;
	uint64_t samples, lost;
};

/*
 * Stacks and frames the server already has, so a slice does not send
 * them again: known(arg, hash) returns 1 to skip.  May be NULL.  What
 * it said yes to is remembered by stack and frame id while
 * np_fleet_rows.known_gen stays the same (0: not remembered): the
 * caller changes it whenever known() forgets.
 */
typedef int (*np_fleet_known_fn)(void *arg, uint64_t hash);

struct np_fleet_rows {
	struct np_buf samples, stacks, frames, slice;	/* RowBinary bodies */
	uint64_t *new_ids;	/* stacks and frames in the bodies: remember */
	uint32_t nr_new, cap_new;	/* them once sent */
	struct np_idx new_idx;		/* over new_ids */
	size_t nr_samples_rows;
	int build_ids;		/* frames rows carry build_id (the server's
				 * frames table has it: set by the caller) */
	uint64_t known_gen;	/* set by the caller, see np_fleet_known_fn */
	/* kept from slice to slice (fleet_rows.c); known: the known_gen
	 * in which known() had it */
	struct np_fleet_memo { uint32_t stack; uint64_t hash, known; } *memo;
	uint32_t nr_memo, cap_memo;
	struct np_fleet_fmemo {		/* by frame id */
		uint64_t hash, known;
		uint32_t len[3];	/* its strings' (fleet_rows.c), 0: not yet */
	} *fmemo;
	uint32_t cap_fmemo;
	uint32_t *walk_ids;
	struct np_idx memo_idx;		/* over memo, by stack id */
	uint64_t memo_gen;		/* the stack table memo's ids are of */
	uint64_t memo_bids;		/* its build-id changes then */
	const struct np_sym **walk;
	unsigned int cap_walk;
};

/*
 * Append the rows of the slice merged into a to r: several slices may go
 * in one insert (a backlog is sent in batches).  0 or -ENOMEM.
 */
void np_fleet_rows_reset(struct np_fleet_rows *r);
int np_fleet_rows_build(struct np_fleet_rows *r, const struct np_agg *a,
			const struct np_fleet_slice *s,
			np_fleet_known_fn known, void *known_arg);
void np_fleet_rows_free(struct np_fleet_rows *r);

/* Insert statements for the bodies (Distributed tables of the database). */
int np_fleet_insert(struct np_ch *c, const struct np_fleet_rows *r,
		    char *err, size_t errlen);
/* 1 if the server holds a committed batch of (host, start_ns), 0 if not, -1. */
int np_fleet_committed(struct np_ch *c, const char *host, uint64_t start_ns,
		       char *err, size_t errlen);

/* ---- queries (fleet_query.c) --------------------------------------- */

#define NP_FLEET_MAX_MATCH	32

/*
 * samples.comm_hash, computed by the server (the column's DEFAULT): the
 * key of a (comm, stack) row is one number, bitXor(stack, comm_hash)
 * (18.16 groups by it 4x faster than by the pair), and hashing comm at
 * query time was 40 % of the fleet top-50's scan.
 */
#define NP_FLEET_COMM_HASH	"cityHash64(comm)"

struct np_fleet_filter {
	uint64_t since_ns, until_ns;	/* 0: unbounded */
	const char *hosts[NP_FLEET_MAX_MATCH];	/* globs, any of them */
	unsigned int nr_hosts;
	const char *labels[NP_FLEET_MAX_MATCH];	/* "k=v", all of them */
	unsigned int nr_labels;
	int64_t pid;			/* -1: any */
	int cpu;			/* -1: any */
	const char *comm;		/* NULL: any */
	int by_host, by_pid;		/* GROUP BY them too */
	/*
	 * Counts: only the stacks with a frame of this name (np_sym_unnamed()'s
	 * when it has none), on a server that keeps stacks in the frame
	 * dictionary only; else, and NULL: every stack.
	 */
	const char *symbol;
};

void np_fleet_filter_init(struct np_fleet_filter *f);

struct np_fleet_count {
	const char *host;	/* "" unless by_host */
	uint32_t pid;		/* 0 unless by_pid */
	const char *comm;
	uint64_t stack, count;
};
typedef int (*np_fleet_count_fn)(const struct np_fleet_count *c, void *arg);

/* Sample counts per (host, pid, comm, stack), summed by the server. */
int np_fleet_query_counts(struct np_ch *c, const struct np_fleet_filter *f,
			  np_fleet_count_fn fn, void *arg,
			  char *err, size_t errlen);

/* Sample counts per host, summed by the server, in no order. */
typedef int (*np_fleet_host_fn)(const char *host, uint64_t count, void *arg);
int np_fleet_query_hosts(struct np_ch *c, const struct np_fleet_filter *f,
			 np_fleet_host_fn fn, void *arg, char *err, size_t errlen);

/*
 * Frames of the given stacks; fn gets each stack's frames, innermost
 * first (valid during the call), and may get a stack twice (keep the
 * first).
 */
typedef int (*np_fleet_stack_fn)(uint64_t stack, const struct np_sym *frames,
				 unsigned int nr, void *arg);
int np_fleet_query_stacks(struct np_ch *c, const uint64_t *stacks, size_t nr,
			  np_fleet_stack_fn fn, void *arg,
			  char *err, size_t errlen);

struct np_fleet_totals {
	uint64_t slices, samples, lost, hosts;
	uint64_t first_ns, last_ns;
};
int np_fleet_query_totals(struct np_ch *c, const struct np_fleet_filter *f,
			  struct np_fleet_totals *t, char *err, size_t errlen);

/*
 * report's rows ranked by the server, no stack downloaded: per row, the
 * samples whose innermost kept frame falls in it (self) and those with
 * any kept frame in it (children, once a sample), over the frames kept.
 * The order is topview_sort()'s, ties included, so the first limit rows
 * are the same as a view of every sample would show.
 */
struct np_fleet_top {
	int by_comm, by_pid, by_dso, by_sym;	/* what rows group by */
	int kernel, user;			/* the frames kept */
	int by_children;			/* else by self */
	size_t limit;				/* rows; 0: all */
	uint64_t slices;			/* np_fleet_query_totals()'
						 * count, 0 if not known */
};
struct np_fleet_top_row {
	const char *comm, *dso, *sym;		/* "" unless grouped by */
	uint32_t pid;				/* 0 unless by_pid */
	int kernel;
	uint64_t self, children;
};
typedef int (*np_fleet_top_fn)(const struct np_fleet_top_row *r, void *arg);
/*
 * fn gets the rows in order; *shown is the count of samples with a frame
 * kept (the 100 %).  0; 1 when the database keeps frames only inline (the
 * first schema): read the stacks then; -1 with err.
 */
int np_fleet_query_top(struct np_ch *c, const struct np_fleet_filter *f,
		       const struct np_fleet_top *t, np_fleet_top_fn fn,
		       void *arg, uint64_t *shown, char *err, size_t errlen);

/*
 * Hard lockups the hosts sent (one row each): of the filter's hosts
 * (globs; labels: hosts whose slices carry them) and times, oldest
 * first; only the one named id if not NULL, and then with its frames.
 * Registers stay in each host's store.
 */
struct np_fleet_lockup {
	const char *host, *id, *comm;
	uint64_t time_s, stuck_ns;
	uint32_t cpu, pid, tid;
	int64_t flags;			/* NMIPROF_LF_*, -1: sent without */
	unsigned int nr_frames;		/* with id only */
	const struct np_sym *frames;	/* innermost first */
};
typedef int (*np_fleet_lockup_fn)(const struct np_fleet_lockup *l, void *arg);
int np_fleet_query_lockups(struct np_ch *c, const struct np_fleet_filter *f,
			   const char *id, np_fleet_lockup_fn fn, void *arg,
			   char *err, size_t errlen);

#endif /* NP_FLEET_H */
