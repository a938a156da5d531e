/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The harness of the unwinder's split workloads: run two callers in turn
 * for SECONDS of thread CPU time and print the split measured with the
 * same clock, "<a> 0.7502 <b> 0.2498 total 3.00", for the checks to
 * compare the profile with.
 */
#ifndef NMIPROF_TESTS_SPLIT_MAIN_H
#define NMIPROF_TESTS_SPLIT_MAIN_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

/* CPU time: what a sampling profiler's samples are proportional to */
static inline uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + ts.tv_nsec;
}

static inline int split_main(int argc, char **argv,
			     const char *name_a, void (*a)(void),
			     const char *name_b, void (*b)(void))
{
	double secs = argc > 1 ? atof(argv[1]) : 3.0;
	uint64_t ta = 0, tb = 0, t0, t1, t2, cpu0 = now_ns();

	do {
		t0 = now_ns();
		a();
		t1 = now_ns();
		b();
		t2 = now_ns();
		ta += t1 - t0;
		tb += t2 - t1;
	} while (t2 - cpu0 < (uint64_t)(secs * 1e9));
	printf("%s %.4f %s %.4f total %.2f\n", name_a, (double)ta / (ta + tb),
	       name_b, (double)tb / (ta + tb), (t2 - cpu0) / 1e9);
	return 0;
}

#endif
