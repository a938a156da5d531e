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
#include "split_main.h"

#define N 2000

static volatile uint64_t sink;
static int v[N];

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
	return split_main(argc, argv, "run_a", run_a, "run_b", run_b);
}
