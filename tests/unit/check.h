/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The check of the C tests: a failed CHECK is reported with its place and
 * counted, and the test goes on, so one run shows every failure.  Each
 * test's main() returns non-zero when failures is.
 */
#ifndef NP_TEST_CHECK_H
#define NP_TEST_CHECK_H

#include <stdio.h>

static int failures;

#define CHECK(cond) do {						\
	if (!(cond)) {							\
		fprintf(stderr, "FAIL %s:%d: %s\n", __FILE__, __LINE__,	\
			#cond);						\
		failures++;						\
	}								\
} while (0)

#endif /* NP_TEST_CHECK_H */
