// SPDX-License-Identifier: GPL-2.0
/*
 * deep: a fixed amount of CPU work done at the bottom of a deep user call
 * chain, for the overhead benchmark (tests/qemu/scenarios/bench_kmod.sh).
 *
 *   deep DEPTH ROUNDS      (DEPTH frames of descend(), ROUNDS work units)
 *
 * Every sample of it carries a user stack at least DEPTH frames deep, so
 * the handler's cost is measured with full-depth frame-pointer walks.
 * The work is fixed (not timed), so wall time measures the slowdown a
 * profiler causes; it prints "deep wall SECONDS".
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define UNIT 1000000

static volatile uint64_t sink;

__attribute__((noinline)) static void work(void)
{
	volatile uint64_t x = sink;	/* a stack slot: forces a frame */

	for (long i = 0; i < UNIT; i++)
		x = x * 6364136223846793005ULL + 1442695040888963407ULL;
	sink = x;
}

static int descend(int depth, long rounds);
/*
 * Called through a volatile pointer: gcc -O2 otherwise turns the
 * recursion (even "+ 1" after it) into a loop, and the frames vanish.
 */
static int (*volatile descend_p)(int, long) = descend;

__attribute__((noinline)) static int descend(int depth, long rounds)
{
	if (depth > 0)
		return descend_p(depth - 1, rounds) + 1;
	for (long r = 0; r < rounds; r++)
		work();
	return 0;
}

int main(int argc, char **argv)
{
	int depth = argc > 1 ? atoi(argv[1]) : 40;
	long rounds = argc > 2 ? atol(argv[2]) : 1000;
	struct timespec t0, t1;

	if (depth < 0 || depth > 10000 || rounds < 1) {
		fprintf(stderr, "usage: deep DEPTH ROUNDS\n");
		return 2;
	}
	clock_gettime(CLOCK_MONOTONIC, &t0);
	sink += descend(depth, rounds);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	printf("deep wall %.3f\n", (t1.tv_sec - t0.tv_sec) +
	       (t1.tv_nsec - t0.tv_nsec) / 1e9);
	return 0;
}
