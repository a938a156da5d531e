// SPDX-License-Identifier: GPL-2.0
/*
 * Ordered events (ordered.h).  Records arrive per ring, each ring in
 * time order; the pending set is re-sorted at each flush, which costs
 * little because it is only what one drain read plus the few records
 * newer than the previous horizon.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "ordered.h"

int np_ordered_push(struct np_ordered *oe, uint64_t time, uint32_t cpu, int src,
	       const void *rec, size_t len)
{
	struct np_ordered_entry *e;
	void *copy;

	if (oe->nr == oe->cap) {
		size_t cap = oe->cap ? oe->cap * 2 : 256;
		struct np_ordered_entry *v;

		/* reclaim the flushed prefix before growing */
		if (oe->head) {
			memmove(oe->v, oe->v + oe->head,
				(oe->nr - oe->head) * sizeof(*oe->v));
			oe->nr -= oe->head;
			oe->head = 0;
		}
		if (oe->nr == oe->cap) {
			v = realloc(oe->v, cap * sizeof(*v));
			if (!v)
				return -ENOMEM;
			oe->v = v;
			oe->cap = cap;
		}
	}
	copy = malloc(len);
	if (!copy)
		return -ENOMEM;
	memcpy(copy, rec, len);
	e = &oe->v[oe->nr++];
	e->time = time;
	e->seq = oe->seq++;
	e->cpu = cpu;
	e->src = src;
	e->rec = copy;
	e->len = len;
	oe->bytes += len;
	return 0;
}

static int cmp_entry(const void *a, const void *b)
{
	const struct np_ordered_entry *x = a, *y = b;

	if (x->time != y->time)
		return x->time < y->time ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

int np_ordered_flush(struct np_ordered *oe, uint64_t horizon, np_ordered_fn fn, void *arg)
{
	int n = 0, stop = 0;

	/* qsort() must not be given NULL, which oe->v is until a push */
	if (oe->head < oe->nr)
		qsort(oe->v + oe->head, oe->nr - oe->head, sizeof(*oe->v),
		      cmp_entry);
	while (!stop && oe->head < oe->nr && oe->v[oe->head].time <= horizon) {
		struct np_ordered_entry *e = &oe->v[oe->head++];

		stop = fn(e, arg);
		oe->bytes -= e->len;
		free(e->rec);
		e->rec = NULL;
		n++;
	}
	if (oe->head == oe->nr)
		oe->head = oe->nr = 0;
	return n;
}

size_t np_ordered_pending(const struct np_ordered *oe)
{
	return oe->nr - oe->head;
}

void np_ordered_free(struct np_ordered *oe)
{
	for (size_t i = oe->head; i < oe->nr; i++)
		free(oe->v[i].rec);
	free(oe->v);
	memset(oe, 0, sizeof(*oe));
}
