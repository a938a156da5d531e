/* SPDX-License-Identifier: GPL-2.0 */
/*
 * nmiprof:lockup, emitted by kmod/watchdog.c (which has CREATE_TRACE_POINTS)
 * from hrtimer context, never from NMI: once per episode with recovered=0,
 * by a healthy buddy CPU as soon as the stuck CPU's report is written, or
 * by the CPU itself when it comes back first; and with recovered=1, by the
 * CPU that came back, stuck_ns then being the whole episode.
 */
#undef TRACE_SYSTEM
#define TRACE_SYSTEM nmiprof

#if !defined(_NMIPROF_TRACE_LOCKUP_H) || defined(TRACE_HEADER_MULTI_READ)
#define _NMIPROF_TRACE_LOCKUP_H

#include <linux/sched.h>
#include <linux/tracepoint.h>

TRACE_EVENT(lockup,

	TP_PROTO(int cpu, int pid, const char *comm, unsigned long ip,
		 u64 stuck_ns, bool recovered),

	TP_ARGS(cpu, pid, comm, ip, stuck_ns, recovered),

	TP_STRUCT__entry(
		__field(int,		cpu)
		__field(int,		pid)
		__array(char,		comm,	TASK_COMM_LEN)
		__field(unsigned long,	ip)
		__field(u64,		stuck_ns)
		__field(bool,		recovered)
	),

	TP_fast_assign(
		__entry->cpu = cpu;
		__entry->pid = pid;
		memcpy(__entry->comm, comm, TASK_COMM_LEN);
		__entry->ip = ip;
		__entry->stuck_ns = stuck_ns;
		__entry->recovered = recovered;
	),

	TP_printk("cpu=%d pid=%d comm=%s ip=%pS stuck_ms=%llu recovered=%d",
		  __entry->cpu, __entry->pid, __entry->comm,
		  (void *)__entry->ip, __entry->stuck_ns / NSEC_PER_MSEC,
		  __entry->recovered)
);

#endif /* _NMIPROF_TRACE_LOCKUP_H */

/* Out of tree: Kbuild adds -I$(src) for watchdog.o. */
#undef TRACE_INCLUDE_PATH
#define TRACE_INCLUDE_PATH .
#undef TRACE_INCLUDE_FILE
#define TRACE_INCLUDE_FILE trace_lockup
#include <trace/define_trace.h>
