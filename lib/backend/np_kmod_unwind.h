/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The kmod backend's unwind tables (kmod_unwind.c): what nmiprof.ko needs
 * to walk the user stacks of the processes it samples without frame
 * pointers, compiled and cached by lib/unwind and loaded through
 * NMIPROF_IOC_UW_*.
 */
#ifndef NP_KMOD_UNWIND_H
#define NP_KMOD_UNWIND_H

#include <stdint.h>
#include "np_backend_impl.h"
#include "np_event.h"

struct np_kmod_unwind;

/*
 * NULL (and err) if tables cannot be used; samples then keep frame
 * pointers.  abi_minor: the module's, from HELLO; paced: system-wide,
 * compiles are paced (unwinder.c).
 */
struct np_kmod_unwind *np_kmod_unwind_new(int fd, const struct np_kmod_sys *sys,
					  unsigned int abi_minor,
					  const char *cache_dir, int paced,
					  char *err, size_t errlen);
/*
 * Every drained event, side-band and samples, in drain order, before the
 * consumer gets it: a sample of a process whose set is new or changed
 * sends the set at once.
 */
void np_kmod_unwind_event(struct np_kmod_unwind *k, const struct np_event *ev);
/* After a drain: send the mapping sets of processes that changed. */
void np_kmod_unwind_flush(struct np_kmod_unwind *k);
/* The module's table counters, and the tables this side loaded. */
void np_kmod_unwind_stats(struct np_kmod_unwind *k, struct np_backend_stats *st);
void np_kmod_unwind_free(struct np_kmod_unwind *k);

#endif /* NP_KMOD_UNWIND_H */
