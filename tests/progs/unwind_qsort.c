// SPDX-License-Identifier: GPL-2.0
/*
 * unwind_qsort: hot code reached through libc's qsort(), which Debian
 * builds without frame pointers; this program keeps them (progs.cmake).
 *
 *   unwind_qsort SECONDS     (SECONDS of CPU time)
 *
 * run_a sorts three times as often as run_b, both through qsort() with
 * the same slow comparator, so a walk that gets back out of libc credits
 * run_a with ~75% and run_b with ~25% of the time.  Prints the split it
 * measured: "run_a 0.7490 run_b 0.2510 total 3.00".
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define N 2000

static volatile uint64_t sink;
static int v[N];

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + ts.tv_nsec;
}

__attribute__((noinline)) static int cmp(const void *a, const void *b)
{
	uint64_t x = sink;

	for (int i = 0; i < 40; i++)
		x = x * 6364136223846793005ULL + 1442695040888963407ULL;
	sink = x;
	return *(const int *)a - *(const int *)b;
}

__attribute__((noinline)) static void sort_once(unsigned int seed)
{
	for (int i = 0; i < N; i++)
		v[i] = (int)((seed + i) * 2654435761u % 100003);
	qsort(v, N, sizeof(v[0]), cmp);
	__asm__ volatile("" ::: "memory");	/* a call, not a tail jump */
}

__attribute__((noinline)) void run_a(void)
{
	for (int i = 0; i < 3; i++)
		sort_once(i);
	__asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) void run_b(void)
{
	sort_once(7);
	__asm__ volatile("" ::: "memory");
}

int main(int argc, char **argv)
{
	double secs = argc > 1 ? atof(argv[1]) : 3.0;
	uint64_t ta = 0, tb = 0, t0, t1, t2, cpu0 = now_ns();

	do {
		t0 = now_ns();
		run_a();
		t1 = now_ns();
		run_b();
		t2 = now_ns();
		ta += t1 - t0;
		tb += t2 - t1;
	} while (t2 - cpu0 < (uint64_t)(secs * 1e9));
	printf("run_a %.4f run_b %.4f total %.2f\n", (double)ta / (ta + tb),
	       (double)tb / (ta + tb), (t2 - cpu0) / 1e9);
	return 0;
}
