/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Deduplicated, symbolized stack table.
 *
 * Three interned tables, each id dense from 0:
 *   strings  DSO paths, symbol names, comms
 *   frames   (dso string, symbol string or none, offset, kernel flag)
 *   nodes    a call trie: node = (parent node, frame), rooted at node 0
 *
 * A stack id is the trie node of its innermost frame; walking parents
 * to the root yields the frames innermost first.  Stacks are inserted
 * outermost first, so stacks of one program share their common callers
 * (_start .. main .., entry_SYSCALL_64 ..): on a real system this keeps
 * ~100k distinct 30-frame stacks in a few MB instead of 12 MB of flat
 * frame arrays, and the same trie is what a store segment serialises.
 *
 * The table holds frames that are already symbolized, so it never needs
 * process state; raw addresses are mapped to stack ids by the caller's
 * cache (np_agg).  Node 0 is the empty stack.  Ids are never reused while
 * the table lives; np_stacktab_clear() drops everything.
 *
 * Not thread safe: one table per ingest thread or reader.
 */
#ifndef NP_STACKTAB_H
#define NP_STACKTAB_H

#include <stddef.h>
#include <stdint.h>
#include "symbolizer.h"

#define NP_STACK_EMPTY	0U		/* root node: a sample without frames */
#define NP_ID_NONE	UINT32_MAX	/* allocation failure / not found */

struct np_stacktab;

struct np_stacktab *np_stacktab_new(void);
void np_stacktab_free(struct np_stacktab *st);
void np_stacktab_clear(struct np_stacktab *st);
/*
 * Changes with every clear, and no two tables of the process share one:
 * ids cached under another generation are void.
 */
uint64_t np_stacktab_gen(const struct np_stacktab *st);
/* Bytes of heap held, for the daemon's memory cap. */
size_t np_stacktab_mem(const struct np_stacktab *st);
/*
 * Bytes its rows take (indexes at half load): what a clear gives back
 * for reuse.  The capacity np_stacktab_mem() counts stays after a clear.
 */
size_t np_stacktab_mem_used(const struct np_stacktab *st);

/* Strings: returns the id, or NP_ID_NONE on ENOMEM.  Pointers returned by
 * np_stacktab_str_get stay valid until clear/free. */
uint32_t np_stacktab_str(struct np_stacktab *st, const char *s, size_t len);
const char *np_stacktab_str_get(const struct np_stacktab *st, uint32_t id);
uint32_t np_stacktab_nr_strs(const struct np_stacktab *st);

/* Frames: f->name may be NULL (unknown symbol); f->dso NULL reads as
 * "[unknown]".  The returned np_sym points into the table and is valid
 * until the next insertion of any kind. */
uint32_t np_stacktab_frame(struct np_stacktab *st, const struct np_sym *f);
/* Same, from already interned strings (name_id NP_ID_NONE: no name). */
uint32_t np_stacktab_frame_ids(struct np_stacktab *st, uint32_t dso_id,
			       uint32_t name_id, uint64_t offset, int kernel);
const struct np_sym *np_stacktab_frame_get(const struct np_stacktab *st,
					   uint32_t id);
void np_stacktab_frame_strs(const struct np_stacktab *st, uint32_t id,
			    uint32_t *dso_id, uint32_t *name_id);
uint32_t np_stacktab_nr_frames(const struct np_stacktab *st);
/*
 * Build-ids are kept per object (dso string), not per frame: a frame's
 * np_sym.build_id is its dso's.  np_stacktab_frame() sets it from
 * f->build_id (the latest one seen wins: a library replaced at the same
 * path).  np_stacktab_set_build_id() sets dso's to string bid
 * (NP_ID_NONE: none) and np_stacktab_sync_build_ids() then brings the
 * frames up to date (one pass, after a batch of sets).
 */
int np_stacktab_set_build_id(struct np_stacktab *st, uint32_t dso,
			     uint32_t bid);
uint32_t np_stacktab_build_id(const struct np_stacktab *st, uint32_t dso);
/* Grows with every change of a build-id: what hashed frames before
 * may hash otherwise now. */
uint64_t np_stacktab_build_id_changes(const struct np_stacktab *st);
void np_stacktab_sync_build_ids(struct np_stacktab *st);
/*
 * The outermost run of unmapped user frames of a stack folds into the one
 * frame np_stacktab_unmapped_run() (symbolizer.h); the innermost frame is
 * always kept.  np_stacktab_frame_unmapped() tells such a frame (an
 * unnamed user frame in NP_DSO_UNMAPPED; 0 for NP_ID_NONE).
 */
int np_stacktab_frame_unmapped(const struct np_stacktab *st, uint32_t id);
uint32_t np_stacktab_unmapped_run(struct np_stacktab *st);

/* Nodes: the child of parent for frame, created if new. */
uint32_t np_stacktab_child(struct np_stacktab *st, uint32_t parent,
			   uint32_t frame);
/* A whole stack, frames[0] innermost.  Returns the stack id. */
uint32_t np_stacktab_stack(struct np_stacktab *st, const struct np_sym *frames,
			   unsigned int n);
/* Parent and frame of a node (node 0 has neither: returns -1). */
int np_stacktab_node(const struct np_stacktab *st, uint32_t node,
		     uint32_t *parent, uint32_t *frame);
uint32_t np_stacktab_nr_nodes(const struct np_stacktab *st);	/* incl. root */
unsigned int np_stacktab_depth(const struct np_stacktab *st, uint32_t stack);
/* Fill out[] innermost first with up to max frames; returns how many. */
unsigned int np_stacktab_walk(const struct np_stacktab *st, uint32_t stack,
			      const struct np_sym **out, unsigned int max);

#endif /* NP_STACKTAB_H */
