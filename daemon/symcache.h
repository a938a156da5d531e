/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A memo in front of the symbolizer for the daemon's hot path.
 *
 * np_agg symbolizes each distinct raw stack once per slice, but distinct
 * stacks mostly share their frames: a loop sampled at ten addresses gives
 * ten stacks whose callers (main, __libc_start_main, ... or the whole
 * syscall path) are the same addresses.  Without a memo every one of
 * them is looked up again, each lookup a binary search or more (an
 * unresolved user address also checks /tmp/perf-PID.map).  This caches
 * (pid, address) -> np_sym in a direct-mapped table.
 *
 * Entries of a pid go stale when its address space changes: side-band
 * events (exec, mmap, exit) bump the generation of the pid's bucket,
 * which invalidates them all in one store.  Kernel entries are kept: the
 * kernel's text does not move under a running daemon.
 */
#ifndef NPD_SYMCACHE_H
#define NPD_SYMCACHE_H

#include <stdint.h>
#include "symbolizer.h"

struct npd_symcache;

/* NULL on ENOMEM.  sym outlives the cache (its strings are kept). */
struct npd_symcache *npd_symcache_new(struct np_symbolizer *sym);
void npd_symcache_free(struct npd_symcache *c);
/* np_symbolize_fn (agg.h): arg is the npd_symcache. */
int npd_symcache_lookup(void *arg, uint32_t pid, uint64_t addr, int kernel,
			struct np_sym *out);
void npd_symcache_invalidate(struct npd_symcache *c, uint32_t pid);
/* Lookups answered from the table, and those that were not. */
void npd_symcache_stats(const struct npd_symcache *c, uint64_t *hits,
			uint64_t *misses);

#endif /* NPD_SYMCACHE_H */
