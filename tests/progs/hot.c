// SPDX-License-Identifier: GPL-2.0
/*
 * hot: a workload with a known profile for the end-to-end tests.
 *
 *   hot SECONDS [--wait]     (SECONDS of CPU time)
 *
 * Alternates hot_a (3 units of work) and hot_b (1 unit), so about 75% and
 * 25% of its CPU time; it also measures the real split with its own
 * thread CPU-time clock, because frequency scaling or a noisy neighbour
 * can skew the ratio, and prints it on exit with the CPU seconds used:
 *   "hot_a 0.7512 hot_b 0.2488 total 2.98".
 * With --wait it prints "ready" and waits for a line on stdin first, so a
 * test can attach the profiler before the work starts.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define UNIT 200000	/* ~0.1-0.3 ms: many switches per sampling period */

static volatile uint64_t sink;

static uint64_t clock_ns(clockid_t clk)
{
	struct timespec ts;

	clock_gettime(clk, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + ts.tv_nsec;
}

/* CPU time: what a sampling profiler's samples are proportional to */
static uint64_t now_ns(void)
{
	return clock_ns(CLOCK_THREAD_CPUTIME_ID);
}

__attribute__((noinline)) void hot_a(int units)
{
	volatile uint64_t x = sink;	/* a stack slot: forces a frame */

	for (long i = 0; i < (long)units * UNIT; i++)
		x = x * 6364136223846793005ULL + 1442695040888963407ULL;
	sink = x;
}

__attribute__((noinline)) void hot_b(int units)
{
	volatile uint64_t x = sink;	/* a stack slot: forces a frame */

	for (long i = 0; i < (long)units * UNIT; i++)
		x = x * 6364136223846793005ULL + 1442695040888963407ULL;
	sink = x;
}

int main(int argc, char **argv)
{
	double secs = argc > 1 ? atof(argv[1]) : 3.0;
	uint64_t ta = 0, tb = 0, start, end, t0, t1, t2, cpu0;
	char line[16];

	if (argc > 2 && !strcmp(argv[2], "--wait")) {
		printf("ready\n");
		fflush(stdout);
		if (!fgets(line, sizeof(line), stdin))
			return 1;
	}
	/*
	 * Runs until it has used SECONDS of CPU, so that a test gets the
	 * samples it needs however busy the machine is; but never longer
	 * than 20x that in wall time.
	 */
	start = clock_ns(CLOCK_MONOTONIC);
	end = start + (uint64_t)(20 * secs * 1e9);
	cpu0 = now_ns();
	do {
		t0 = now_ns();
		hot_a(3);
		t1 = now_ns();
		hot_b(1);
		t2 = now_ns();
		ta += t1 - t0;
		tb += t2 - t1;
	} while (t2 - cpu0 < (uint64_t)(secs * 1e9) &&
		 clock_ns(CLOCK_MONOTONIC) < end);
	printf("hot_a %.4f hot_b %.4f total %.2f\n", (double)ta / (ta + tb),
	       (double)tb / (ta + tb), (t2 - cpu0) / 1e9);
	return 0;
}
