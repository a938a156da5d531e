// SPDX-License-Identifier: GPL-2.0
/*
 * nmiprof_ia32: a 32-bit (ia32) program for the module's compat user
 * stack walk.  Built -m32 -static with frame pointers (tests/progs/
 * progs.cmake); nmiprof_ringcheck -m runs it and requires its samples in
 * ia32_leaf to walk back through ia32_mid and ia32_outer to main.
 *
 *   nmiprof_ia32 SECS       spin for SECS seconds (default 3)
 */
#include <stdlib.h>
#include <time.h>

static volatile unsigned int sink;

__attribute__((noinline)) void ia32_leaf(long n)
{
	unsigned int x = sink;

	for (long i = 0; i < n; i++)
		x = x * 1664525u + 1013904223u;
	sink = x;
}

__attribute__((noinline)) void ia32_mid(long n)
{
	ia32_leaf(n);
	sink++;		/* not a tail call: keep this frame */
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

__attribute__((noinline)) void ia32_outer(double secs)
{
	double end = now() + secs;

	do {
		ia32_mid(1000000);
	} while (now() < end);
}

int main(int argc, char **argv)
{
	ia32_outer(argc > 1 ? atof(argv[1]) : 3);
	return 0;
}
