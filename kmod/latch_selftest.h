/* SPDX-License-Identifier: GPL-2.0 */
#ifndef _NMIPROF_LATCH_SELFTEST_H
#define _NMIPROF_LATCH_SELFTEST_H

void np_latch_selftest_cpu_start(int cpu);
void np_latch_selftest_cpu_stop(int cpu);

#endif /* _NMIPROF_LATCH_SELFTEST_H */
