/* SPDX-License-Identifier: GPL-2.0 */
/*
 * topview: the symbol-level hot-spot model behind `nmiprof top` and
 * `nmiprof report`.
 *
 * Samples come in already symbolized (a stack of dso/symbol names).  The
 * model keeps them as weighted buckets (cpu, pid, tid, comm, stack), which
 * is the ground truth, and derives from them
 *   rows:  the groups of the sort keys (perf's -s/--sort: comm,dso,sym by
 *          default, also pid, tid, cpu), each with self and children
 *          weight: a sample's frames each fall in one row, the innermost
 *          one's row gets self, every row it touches children (once)
 *   edges: caller -> callee row pairs, for the call-graph view.
 * Rows and edges are maintained incrementally as samples arrive; a filter
 * or key change rebuilds them from the buckets, so nothing collected is
 * lost by filtering or regrouping.
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
	const char *build_id;	/* the dso's GNU build-id in hex, NULL: none */
};

struct topview_sample {
	uint32_t cpu, pid;
	const char *comm;
	const struct np_frame *frames;	/* innermost first */
	unsigned nr_frames;
	double weight;			/* usually 1 or a stored count */
	uint32_t tid;			/* 0: not known, taken as pid */
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

/* What rows group by (perf's sort keys). */
enum topview_key {
	TOPVIEW_KEY_COMM = 0,
	TOPVIEW_KEY_PID,
	TOPVIEW_KEY_TID,
	TOPVIEW_KEY_CPU,
	TOPVIEW_KEY_DSO,
	TOPVIEW_KEY_SYM,	/* a symbol of its object: implies the dso */
	TOPVIEW_KEY_NR,
};

/* The keys in the order given, each at most once. */
struct topview_keys {
	unsigned nr;
	enum topview_key key[TOPVIEW_KEY_NR];
};

#define TOPVIEW_KEYS_DEFAULT	"comm,dso,sym"

/*
 * Parses a -s/--sort list ("comm,dso,sym", also "pid", "tid", "cpu",
 * "symbol").  "self"/"overhead" and "children" name the order instead
 * (*order, left alone if absent); a list of only those keeps the
 * default keys.  0, or -1 with *bad pointing at the unknown word's start.
 */
int topview_keys_parse(const char *list, struct topview_keys *k,
		       enum topview_sort *order, const char **bad);
int topview_keys_has(const struct topview_keys *k, enum topview_key key);
const char *topview_key_name(enum topview_key key);

#define TOPVIEW_COMM_MAX	16
#define TOPVIEW_SEARCH_MAX	64

struct topview_filter {
	int cpu;			/* -1: every CPU */
	int64_t pid;			/* -1: every process */
	char comm[TOPVIEW_COMM_MAX];		/* "": every comm; else exact match */
	int kernel, user;		/* keep kernel / user frames */
	char search[TOPVIEW_SEARCH_MAX];	/* "": all rows; else symbol substring */
};

/* Fields of keys the rows do not group by are 0 or "". */
struct topview_row {
	double self, children;
	uint32_t pid, tid, cpu;
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
/*
 * A row summed elsewhere (a server ranked it), for a view of rows only:
 * no samples stand behind it, so it has no call-graph edges or stacks,
 * and a filter or key change (a rebuild from the samples) drops it.  Its
 * fields as topview_row's, strings copied; shown is added to the view's
 * 100 % (the weight of the samples with a frame kept).  0 or -ENOMEM.
 */
int topview_add_row(struct topview *tv, const struct topview_row *r);
void topview_add_shown(struct topview *tv, double shown);
/* Regroups rows by k (default: TOPVIEW_KEYS_DEFAULT). */
int topview_set_keys(struct topview *tv, const struct topview_keys *k);
const struct topview_keys *topview_keys(const struct topview *tv);
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

/* The same walk with the row each frame falls in, for views per row. */
struct topview_stack {
	const struct np_frame *frames;		/* innermost first */
	const struct topview_row *const *rows;	/* rows[i]: frames[i]'s */
	unsigned nr;
	uint32_t cpu, pid, tid;
	const char *comm;
	double weight;
};
typedef int (*topview_rows_fn)(const struct topview_stack *s, void *arg);
int topview_foreach_row_stack(struct topview *tv, topview_rows_fn fn, void *arg);

#endif /* NP_TOPVIEW_H */
