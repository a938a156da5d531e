/* SPDX-License-Identifier: GPL-2.0 */
/*
 * topview: the symbol-level hot-spot model behind `nmiprof top` and
 * `nmiprof report`.
 *
 * Samples come in already symbolized (a stack of dso/symbol names).  The
 * model keeps them as weighted buckets (cpu, pid, comm, stack), which is
 * the ground truth, and derives from them
 *   rows:  one per (pid, comm, dso, symbol) with self and children weight
 *   edges: caller -> callee row pairs, for the call-graph view.
 * Rows and edges are maintained incrementally as samples arrive; a filter
 * change (cpu, pid, comm, kernel/user frames) rebuilds them from the
 * buckets, so nothing collected is lost by filtering.
 *
 * Weights are doubles so that decay (perf top's 7/8 per refresh) keeps
 * fractions; a weight is a sample count when decay is off.
 *
 * Not thread-safe: one owner drives it (the top loop or report).
 */
#ifndef NP_TOPVIEW_H
#define NP_TOPVIEW_H

#include <stdint.h>
#include <stddef.h>

/* A symbolized frame; strings are copied (interned) by the model. */
struct np_frame {
	const char *dso;	/* "[kernel.kallsyms]", "/usr/bin/x", "[unknown]" */
	const char *sym;	/* symbol name, or a printable address */
	int kernel;		/* shown as [k], else [.] */
};

struct tv_sample {
	uint32_t cpu, pid;
	const char *comm;
	const struct np_frame *frames;	/* innermost first */
	unsigned nr_frames;
	double weight;			/* usually 1 or a stored count */
};

enum tv_sort {
	TV_SORT_SELF = 0,
	TV_SORT_CHILDREN,
	TV_SORT_COMM,
	TV_SORT_DSO,
	TV_SORT_SYMBOL,
	TV_SORT_PID,
	TV_SORT_NR,
};

#define TV_COMM_MAX	16
#define TV_SEARCH_MAX	64

struct tv_filter {
	int cpu;			/* -1: every CPU */
	int64_t pid;			/* -1: every process */
	char comm[TV_COMM_MAX];		/* "": every comm; else exact match */
	int kernel, user;		/* keep kernel / user frames */
	char search[TV_SEARCH_MAX];	/* "": all rows; else symbol substring */
};

struct tv_row {
	double self, children;
	uint32_t pid;
	int kernel;
	const char *comm, *dso, *sym;
};

struct tv_edge {
	const struct tv_row *row;	/* the caller or the callee */
	double weight;
};

struct topview;

struct topview *topview_new(void);
void topview_free(struct topview *tv);

void tv_filter_init(struct tv_filter *f);
/* Parses "self", "children", "comm", "dso", "symbol"/"sym", "pid"; -1 if unknown. */
int tv_sort_parse(const char *name);
const char *tv_sort_name(enum tv_sort s);

/* Returns 0, or -ENOMEM (the sample is then not counted anywhere). */
int topview_add(struct topview *tv, const struct tv_sample *s);
/* Replaces the filter; rebuilds rows from the buckets when it matters. */
int topview_set_filter(struct topview *tv, const struct tv_filter *f);
const struct tv_filter *topview_filter(const struct topview *tv);
/* Multiplies every weight by factor (0 < factor < 1), dropping dust. */
void topview_decay(struct topview *tv, double factor);
void topview_zero(struct topview *tv);

/*
 * Builds the sorted view: rows passing the search filter with weight left,
 * ordered by key (ties: self, then symbol name, then pid: deterministic).
 * Returns the number of rows in the view.
 */
size_t topview_sort(struct topview *tv, enum tv_sort key);
size_t topview_nr_rows(const struct topview *tv);	/* in the view */
/*
 * The i-th row of the view.  Row pointers (also those in tv_edge) stay
 * valid only until the next add, filter change, decay or zero: rows live
 * in one growable array.
 */
const struct tv_row *topview_row(const struct topview *tv, size_t i);
/* Weight of the samples the filter accepted: the 100% of the view. */
double topview_total(const struct topview *tv);
/* Every bucket, before filtering. */
double topview_total_raw(const struct topview *tv);

/*
 * Direct callers (or callees) of a row, heaviest first, up to max.
 * Returns how many were written.
 */
size_t topview_callers(const struct topview *tv, const struct tv_row *row,
		       struct tv_edge *out, size_t max);
size_t topview_callees(const struct topview *tv, const struct tv_row *row,
		       struct tv_edge *out, size_t max);

/*
 * Every filtered stack (after kernel/user frame stripping), innermost
 * first, with its weight; for exporters.  Order: insertion order of the
 * buckets, so output is deterministic for a given input.  Stops and
 * returns fn's value when it is non-zero.
 */
typedef int (*tv_stack_fn)(const struct np_frame *frames, unsigned nr,
			   uint32_t pid, const char *comm, double weight,
			   void *arg);
int topview_foreach_stack(struct topview *tv, tv_stack_fn fn, void *arg);

#endif /* NP_TOPVIEW_H */
