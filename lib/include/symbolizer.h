/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Symbolizer: turns kernel and user addresses into (dso, symbol, offset).
 * Kernel: /proc/kallsyms (modules included).  User: per-process maps fed
 * by NP_EV_MMAP/COMM/FORK/EXIT events (or /proc/PID/maps on first sight),
 * ELF .symtab/.dynsym through libelf cached per build-id, perf-PID.map.
 * A frame that cannot be resolved still gets a dso and offset, or
 * "[unknown]": it is never dropped.
 *
 * An address outside every executable mapping of a process whose mappings
 * are known is "[unmapped]": it is not code, so it is no return address
 * either.  Frame-pointer walks through code built without frame pointers
 * find such words (stack contents, text, zeroes) at the outer end of user
 * stacks; the aggregator folds that run into one frame (see agg.h).
 */
#ifndef NP_SYMBOLIZER_H
#define NP_SYMBOLIZER_H

#include <stdint.h>
#include <stddef.h>
#include <string.h>
#include "np_event.h"

#define NP_DSO_UNMAPPED		"[unmapped]"
/* The one frame that stands for an outermost run of unmapped frames. */
#define NP_SYM_UNMAPPED_RUN	"[unmapped frames]"

struct np_symbolizer;

struct np_sym {
	const char *dso;	/* "[kernel.kallsyms]", "[nmiprof]", "/usr/lib/...", "[unknown]" */
	const char *name;	/* symbol, or NULL when unknown */
	uint64_t offset;	/* from symbol start, or from dso start when name == NULL */
	int kernel;		/* 1 for kernel frames: shown as [k], else [.] */
	const char *build_id;	/* the object's GNU build-id in hex, or NULL */
};

/* An unnamed user frame in no executable mapping (see above). */
static inline int np_sym_unmapped(const struct np_sym *s)
{
	return !s->kernel && !s->name && s->dso &&
	       !strcmp(s->dso, NP_DSO_UNMAPPED);
}

/* Room for a name from np_sym_unnamed(). */
#define NP_SYM_UNNAMED_MAX	96
/*
 * The one name of a frame without a symbol, in every view and export:
 * "object+0xoffset", object being the dso's file name ("libc.so.6",
 * "[anon]", "[unknown]"), so that each address stays its own row and
 * says where it is.  Returns buf.
 */
const char *np_sym_unnamed(char *buf, size_t len, const char *dso,
			   uint64_t offset);

struct np_symbolizer *np_symbolizer_new(char *err, size_t errlen);
/* User mappings only (no kallsyms): what the unwinder keeps per process. */
struct np_symbolizer *np_symbolizer_new_maps(char *err, size_t errlen);
/* pid's executable mapping holding addr, or NULL (see np_symtab.h). */
struct np_map;
const struct np_map *np_symbolizer_map(struct np_symbolizer *s, uint32_t pid,
				       uint64_t addr);
/* pid's executable mappings, sorted by address (*nr of them), or NULL. */
const struct np_map *np_symbolizer_maps(struct np_symbolizer *s, uint32_t pid,
					size_t *nr);
void np_symbolizer_free(struct np_symbolizer *s);
/* Feed side-band events (MMAP, COMM, FORK, EXIT); samples are ignored. */
/*
 * Returns 1 when a mapping replaced other code at the same addresses:
 * addresses resolved before may now mean something else, so caches of
 * resolved stacks must be dropped (np_agg_maps_changed).
 */
int np_symbolizer_event(struct np_symbolizer *s, const struct np_event *ev);
/* Strings in *out stay valid until np_symbolizer_free. Returns 0 if named. */
int np_symbolize(struct np_symbolizer *s, uint32_t pid, uint64_t addr,
		 int kernel, struct np_sym *out);
/*
 * Heap bytes held: symbol tables (kernel, every ELF object seen, JIT
 * maps), their names, and the processes' maps.
 */
size_t np_symbolizer_mem(const struct np_symbolizer *s);
/* One line for the user when kallsyms addresses are hidden, else NULL. */
const char *np_symbolizer_warning(const struct np_symbolizer *s);

#endif /* NP_SYMBOLIZER_H */
