/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Ordered events, after perf's util/ordered-events.c: records copied out
 * of several per-CPU rings are held, then handed on in timestamp order up
 * to a horizon the caller knows is safe (no record still to be read from
 * any ring can be older).  Private to lib/backend/backend_perf.c.
 */
#ifndef NP_ORDERED_H
#define NP_ORDERED_H

#include <stddef.h>
#include <stdint.h>

struct np_ordered_entry {
	uint64_t time;		/* CLOCK_MONOTONIC ns, from the record */
	uint64_t seq;		/* read order: ties keep ring order */
	uint32_t cpu;		/* of the ring it was read from */
	int src;		/* the caller's tag: which event list */
	void *rec;		/* a copy of the record (the ring moves on) */
	size_t len;
};

struct np_ordered {
	struct np_ordered_entry *v;	/* v[head..nr) pending, sorted after flush */
	size_t head, nr, cap;
	size_t bytes;		/* of pending records, for the cap */
	uint64_t seq;
};

/* Bound on held record bytes: readers stop filling (rings hold the rest). */
#define NP_ORDERED_MAX_BYTES	(32u << 20)

static inline int np_ordered_full(const struct np_ordered *oe)
{
	return oe->bytes >= NP_ORDERED_MAX_BYTES;
}

/* Copy rec in.  0, or -ENOMEM (the record is dropped). */
int np_ordered_push(struct np_ordered *oe, uint64_t time, uint32_t cpu, int src,
	       const void *rec, size_t len);
typedef int (*np_ordered_fn)(const struct np_ordered_entry *e, void *arg);
/*
 * Hand on, oldest first, every held record with time <= horizon; a
 * callback returning non-zero stops after that record (the rest stay
 * held).  Returns the number handed on.
 */
int np_ordered_flush(struct np_ordered *oe, uint64_t horizon, np_ordered_fn fn, void *arg);
size_t np_ordered_pending(const struct np_ordered *oe);
void np_ordered_free(struct np_ordered *oe);

#endif /* NP_ORDERED_H */
