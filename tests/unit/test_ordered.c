// SPDX-License-Identifier: GPL-2.0
/*
 * lib/backend/ordered.c: records pushed ring by ring come out in time order, only
 * up to the horizon, ties in push order, a stopping callback keeps the
 * rest, and everything held is freed.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include "ordered.h"

#include "check.h"

struct seen {
	uint64_t t[64];
	int v[64];
	int n, stop_at;
};

static int collect(const struct np_ordered_entry *e, void *arg)
{
	struct seen *s = arg;
	int v;

	memcpy(&v, e->rec, sizeof(v));
	s->t[s->n] = e->time;
	s->v[s->n++] = v;
	return s->n == s->stop_at;
}

static void push(struct np_ordered *oe, uint64_t t, uint32_t cpu, int v)
{
	CHECK(np_ordered_push(oe, t, cpu, 0, &v, sizeof(v)) == 0);
}

/* nothing pushed yet: no records, and no qsort() of NULL */
static void test_empty(void)
{
	struct np_ordered oe = { 0 };
	struct seen s = { 0 };

	CHECK(np_ordered_flush(&oe, UINT64_MAX, collect, &s) == 0 && s.n == 0);
	CHECK(np_ordered_pending(&oe) == 0);
	np_ordered_free(&oe);
}

static void test_order(void)
{
	struct np_ordered oe = { 0 };
	struct seen s = { 0 };

	/* ring 0 then ring 1, as a drain reads them: FORK(20) after COMM(30) */
	push(&oe, 30, 0, 3);	/* child's exec COMM, CPU 0 */
	push(&oe, 40, 0, 4);
	push(&oe, 20, 1, 2);	/* FORK, CPU 1 */
	push(&oe, 10, 1, 1);	/* (a ring out of order is sorted too) */
	push(&oe, 55, 1, 6);	/* after the horizon */
	CHECK(np_ordered_flush(&oe, 50, collect, &s) == 4);
	CHECK(s.n == 4 && s.v[0] == 1 && s.v[1] == 2 && s.v[2] == 3 && s.v[3] == 4);
	CHECK(np_ordered_pending(&oe) == 1);

	/* the next drain: the held record merges with newer ones */
	push(&oe, 52, 0, 5);
	push(&oe, 55, 0, 7);	/* same time: push order */
	push(&oe, 90, 0, 9);
	s.stop_at = 6;		/* the consumer stops after two */
	CHECK(np_ordered_flush(&oe, 60, collect, &s) == 2);
	CHECK(s.n == 6 && s.v[4] == 5 && s.v[5] == 6);
	CHECK(np_ordered_pending(&oe) == 2);
	s.stop_at = 0;
	CHECK(np_ordered_flush(&oe, UINT64_MAX, collect, &s) == 2);
	CHECK(s.n == 8 && s.v[6] == 7 && s.v[7] == 9);
	for (int i = 1; i < s.n; i++)
		CHECK(s.t[i - 1] <= s.t[i]);
	CHECK(np_ordered_pending(&oe) == 0 && oe.bytes == 0);
	np_ordered_free(&oe);
}

/* growth past the first allocation, then free with records held */
static void test_growth(void)
{
	struct np_ordered oe = { 0 };

	for (int i = 0; i < 1000; i++)
		push(&oe, 1000 - i, i % 2, i);
	CHECK(np_ordered_pending(&oe) == 1000 && !np_ordered_full(&oe));
	np_ordered_free(&oe);
	CHECK(oe.v == NULL && oe.nr == 0);
}

static const struct np_test_case cases[] = {
	NP_CASE(test_empty),
	NP_CASE(test_order),
	NP_CASE(test_growth),
	{ 0 }
};

int main(int argc, char **argv)
{
	return np_test_main(argc, argv, cases);
}
