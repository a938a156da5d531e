/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Per-time-slice aggregation: samples in, counts out.
 *
 * The daemon feeds every NP_EV_SAMPLE of the current slice (60 s) to
 * np_agg_sample(); at the slice's end it hands the aggregator to the
 * store (np_store_write) and calls np_agg_reset().
 *
 * Key: (pid, comm, cpu, stack id).  cpu is kept because `top --cpu` and
 * per-CPU reports filter on it; it multiplies the records of a process
 * that migrates (measured: see docs/store-format.md), so it can be turned
 * off with by_cpu = 0, which stores cpu as NP_CPU_ANY.
 *
 * Raw stacks are symbolized once per (pid, comm, raw stack) and slice:
 * a cache keyed by a 96-bit hash of the raw addresses maps repeats
 * straight to (stack id, comm id), so the hot path is one hash over the
 * frames and two table probes.  The cache is dropped at every reset so a
 * pid that execs or remaps is symbolized afresh within one slice.  Two
 * different raw keys colliding on 96 bits is ~n^2/2^97 (10^-19 for
 * 10^5 stacks) and is accepted as impossible.
 */
#ifndef NP_AGG_H
#define NP_AGG_H

#include <stddef.h>
#include <stdint.h>
#include "np_event.h"
#include "symbolizer.h"
#include "stacktab.h"

#define NP_CPU_ANY	UINT32_MAX

/*
 * Symbolize one address of pid.  Must fill out->dso (or leave it NULL for
 * "[unknown]"), out->name (NULL if unknown), out->offset, out->kernel.
 * Strings need to stay valid only until the call returns: they are
 * copied.  np_symbolize() of lib/include/symbolizer.h fits with a one-line
 * wrapper.  The return value is ignored.
 */
typedef int (*np_symbolize_fn)(void *arg, uint32_t pid, uint64_t addr,
			       int kernel, struct np_sym *out);

struct np_agg_opts {
	int by_cpu;			/* default 1 */
	np_symbolize_fn symbolize;	/* NULL: dso "[kernel.kallsyms]" or
					 * "[unknown]", offset = raw address */
	void *symbolize_arg;
	size_t stacktab_cap;		/* bytes; past it np_agg_reset() also
					 * clears the stack table (default
					 * 8 MiB) */
	uint64_t period_ns;		/* CPU time one sample stands for
					 * (1e9 / Hz), written into segments;
					 * 0: unknown */
};

struct np_agg_entry {
	uint32_t pid, cpu;
	uint32_t comm;		/* string id in np_agg_stacktab() */
	uint32_t stack;		/* stack id in np_agg_stacktab() */
	uint64_t count;
};

struct np_agg;

void np_agg_opts_init(struct np_agg_opts *o);
struct np_agg *np_agg_new(const struct np_agg_opts *o);	/* NULL: ENOMEM */
void np_agg_free(struct np_agg *a);

/* Hot path.  0, or -ENOMEM (the sample is counted as lost). */
int np_agg_sample(struct np_agg *a, const struct np_ev_sample *s);
/* Add count to an explicit key (readers merging segments). */
int np_agg_add(struct np_agg *a, uint32_t pid, uint32_t cpu, uint32_t comm,
	       uint32_t stack, uint64_t count);
void np_agg_lost(struct np_agg *a, uint64_t lost);
/*
 * Code at some addresses changed (np_symbolizer_event said so): stacks
 * resolved so far are not reused for raw stacks seen from now on.
 */
void np_agg_maps_changed(struct np_agg *a);

struct np_stacktab *np_agg_stacktab(const struct np_agg *a);
/* Entries in no particular order; valid until the next add or reset. */
const struct np_agg_entry *np_agg_entries(const struct np_agg *a,
					  uint32_t *nr);
uint64_t np_agg_samples(const struct np_agg *a);	/* sum of counts */
uint64_t np_agg_lost_count(const struct np_agg *a);
/* opts.period_ns; the setter for a frequency changed while running. */
uint64_t np_agg_period_ns(const struct np_agg *a);
void np_agg_set_period_ns(struct np_agg *a, uint64_t ns);
size_t np_agg_mem(const struct np_agg *a);
/* Start a new slice. */
void np_agg_reset(struct np_agg *a);

#endif /* NP_AGG_H */
