/* SPDX-License-Identifier: GPL-2.0 */
/* Clocks, in nanoseconds or milliseconds since the clock's epoch. */
#ifndef NP_CLOCK_H
#define NP_CLOCK_H

#include <stdint.h>
#include <time.h>

#define NP_NSEC_PER_SEC		((uint64_t)1000000000)
#define NP_NSEC_PER_MSEC	((uint64_t)1000000)

static inline uint64_t np_clock_ns(clockid_t clk)
{
	struct timespec ts;

	clock_gettime(clk, &ts);
	return (uint64_t)ts.tv_sec * NP_NSEC_PER_SEC + (uint64_t)ts.tv_nsec;
}

/* CLOCK_MONOTONIC: intervals, timeouts, pacing. */
static inline uint64_t np_mono_ns(void)
{
	return np_clock_ns(CLOCK_MONOTONIC);
}

static inline uint64_t np_mono_ms(void)
{
	return np_mono_ns() / NP_NSEC_PER_MSEC;
}

/* CLOCK_REALTIME: what the store and lockup records are stamped with. */
static inline uint64_t np_real_ns(void)
{
	return np_clock_ns(CLOCK_REALTIME);
}

#endif /* NP_CLOCK_H */
