// SPDX-License-Identifier: GPL-2.0
/*
 * The library unwind_dlopen loads and unloads: built twice (progs.cmake),
 * as libdlhot_a.so with HOT=hot_in_a and libdlhot_b.so with HOT=hot_in_b,
 * so that the two take turns at the same addresses.
 */
#include <stdint.h>

static volatile uint64_t sink;

__attribute__((noinline)) void HOT(long n)
{
	volatile uint64_t x = sink;

	for (long i = 0; i < n; i++)
		x = x * 6364136223846793005ULL + 1442695040888963407ULL;
	sink = x;
}
