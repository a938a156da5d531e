// SPDX-License-Identifier: GPL-2.0
/*
 * unwind_split: a known split between two callers of one leaf, built
 * without frame pointers (progs.cmake), for the table unwinder's tests.
 *
 *   unwind_split SECONDS     (SECONDS of CPU time)
 *
 * main -> caller_a -> mid_a -> work(3 units) and main -> caller_b ->
 * mid_b -> work(1 unit): work is all the self time, so only a walk that
 * gets past it (and past frames that keep no frame pointer) can tell the
 * callers apart.  Prints the split it measured with its thread CPU
 * clock: "caller_a 0.7502 caller_b 0.2498 total 3.00".
 */
#include "split_main.h"

#define UNIT 200000

static volatile uint64_t sink;

/* Locals that live on the stack give every frame a CFA offset of its own. */
__attribute__((noinline)) void work(int units)
{
	volatile uint64_t x[4] = { sink, 1, 2, 3 };

	for (long i = 0; i < (long)units * UNIT; i++)
		x[i & 3] = x[(i + 1) & 3] * 6364136223846793005ULL + 1442695040888963407ULL;
	sink = x[0] + x[3];
}

__attribute__((noinline)) void mid_a(int units)
{
	volatile char pad[40] = { 1 };

	work(units + pad[0] - 1);
	__asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) void mid_b(int units)
{
	volatile char pad[200] = { 1 };

	work(units + pad[0] - 1);
	__asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) void caller_a(void)
{
	volatile int n = 3;

	mid_a(n);
	__asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) void caller_b(void)
{
	volatile long n[3] = { 1 };

	mid_b(n[0]);
	__asm__ volatile("" ::: "memory");
}

int main(int argc, char **argv)
{
	return split_main(argc, argv, "caller_a", caller_a, "caller_b", caller_b);
}
