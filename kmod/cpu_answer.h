/* SPDX-License-Identifier: GPL-2.0 */
#ifndef _NMIPROF_CPU_ANSWER_H
#define _NMIPROF_CPU_ANSWER_H

/* NMIPROF_IOC_CPUS_ANSWER, NMIPROF_IOC_PARK_PERF_FD */
long np_ans_ioctl(unsigned int cmd, void __user *arg);
void np_ans_init(void);
void np_ans_exit(void);

#endif /* _NMIPROF_CPU_ANSWER_H */
