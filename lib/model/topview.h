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

struct topview_sample {
	uint32_t cpu, pid;
	const char *comm;
	const struct np_frame *frames;	/* innermost first */
	unsigned nr_frames;
	double weight;			/* usually 1 or a stored count */
};

enum topview_sort {
	TOPVIEW_SORT_SELF = 0,
	TOPVIEW_SORT_CHILDREN,
	TOPVIEW_SORT_COMM,
	TOPVIEW_SORT_DSO,
	TOPVIEW_SORT_SYMBOL,
	TOPVIEW_SORT_PID,
	TOPVIEW_SORT_NR,
};

#define TOPVIEW_COMM_MAX	16
#define TOPVIEW_SEARCH_MAX	64

struct topview_filter {
	int cpu;			/* -1: every CPU */
	int64_t pid;			/* -1: every process */
	char comm[TOPVIEW_COMM_MAX];		/* "": every comm; else exact match */
	int kernel, user;		/* keep kernel / user frames */
	char search[TOPVIEW_SEARCH_MAX];	/* "": all rows; else symbol substring */
};

struct topview_row {
	double self, children;
	uint32_t pid;
	int kernel;
	const char *comm, *dso, *sym;
};

struct topview_edge {
	const struct topview_row *row;	/* the caller or the callee */
	double weight;
};

struct topview;

struct topview *topview_new(void);
void topview_free(struct topview *tv);

void topview_filter_init(struct topview_filter *f);
/* Parses "self", "children", "comm", "dso", "symbol"/"sym", "pid"; -1 if unknown. */
int topview_sort_parse(const char *name);
const char *topview_sort_name(enum topview_sort s);

/* Returns 0, or -ENOMEM (the sample is then not counted anywhere). */
int topview_add(struct topview *tv, const struct topview_sample *s);
/* Replaces the filter; rebuilds rows from the buckets when it matters. */
int topview_set_filter(struct topview *tv, const struct topview_filter *f);
const struct topview_filter *topview_filter(const struct topview *tv);
/* Multiplies every weight by factor (0 < factor < 1), dropping dust. */
void topview_decay(struct topview *tv, double factor);
void topview_zero(struct topview *tv);

/*
 * Builds the sorted view: rows passing the search filter with weight left,
 * ordered by key (ties: self, then symbol name, then pid: deterministic).
 * Returns the number of rows in the view.
 */
size_t topview_sort(struct topview *tv, enum topview_sort key);
size_t topview_nr_rows(const struct topview *tv);	/* in the view */
/*
 * The i-th row of the view.  Row pointers (also those in topview_edge) stay
 * valid only until the next add, filter change, decay or zero: rows live
 * in one growable array.
 */
const struct topview_row *topview_row(const struct topview *tv, size_t i);
/* Weight of the samples the filter accepted: the 100% of the view. */
double topview_total(const struct topview *tv);
/* Every bucket, before filtering. */
double topview_total_raw(const struct topview *tv);

/*
 * Direct callers (or callees) of a row, heaviest first, up to max.
 * Returns how many were written.
 */
size_t topview_callers(const struct topview *tv, const struct topview_row *row,
		       struct topview_edge *out, size_t max);
size_t topview_callees(const struct topview *tv, const struct topview_row *row,
		       struct topview_edge *out, size_t max);

/*
 * Every filtered stack (after kernel/user frame stripping), innermost
 * first, with its weight; for exporters.  Order: insertion order of the
 * buckets, so output is deterministic for a given input.  Stops and
 * returns fn's value when it is non-zero.
 */
typedef int (*topview_stack_fn)(const struct np_frame *frames, unsigned nr,
			   uint32_t pid, const char *comm, double weight,
			   void *arg);
int topview_foreach_stack(struct topview *tv, topview_stack_fn fn, void *arg);

#endif /* NP_TOPVIEW_H */
