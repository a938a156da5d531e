/* SPDX-License-Identifier: GPL-2.0 */
/*
 * One interface over the two ways of getting samples:
 *   kmod:    the /dev/nmiprof per-CPU rings (nmiprof.ko)
 *   libperf: perf_event_open on every online CPU, through libperf
 */
#ifndef NP_BACKEND_H
#define NP_BACKEND_H

#include <stdint.h>
#include "np_event.h"
#include <nmiprof/nmiprof_unwind.h>

enum np_backend_kind {
	NP_BACKEND_AUTO = 0,	/* kmod if /dev/nmiprof exists, else libperf */
	NP_BACKEND_KMOD,
	NP_BACKEND_PERF,
};

struct np_backend_opts {
	enum np_backend_kind kind;
	uint32_t freq_hz;	/* per CPU; default 99 */
	uint32_t kstack_depth, ustack_depth;	/* default NMIPROF_DEFAULT_FRAMES */
	int user_stacks;	/* default on */
	int pid;		/* -1: system wide; else only this process */
	const char *cpus;	/* NULL: all online; else a list such as "0,2-3" */
	/*
	 * libperf: bytes of user stack copied with each sample and unwound
	 * with compiled CFI tables (lib/unwind); 0 follows frame pointers
	 * in the kernel instead.  NP_USTACK_COPY_AUTO (the default):
	 * NP_USTACK_COPY_DEFAULT for one process, 0 system wide, where
	 * ~8 KiB samples from every CPU overflowed the rings of a loaded
	 * 2-CPU machine at 2 kHz (test_backend_perf).
	 */
	uint32_t ustack_copy;
	const char *unwind_cache;	/* NULL: $NMIPROF_UNWIND_CACHE, else
					 * /var/cache/nmiprof/unwind; "": none */
	/* libperf: data pages of each CPU's ring, a power of two (perf's
	 * -m); 0: sized by the backend.  The kmod backend refuses it: the
	 * module sizes its rings when loaded (ring_kb). */
	uint32_t mmap_pages;
	/*
	 * kmod: bytes of unwind tables nmiprof.ko keeps (its unwind_budget_kb
	 * parameter, set when the backend opens); 0 leaves the module's.
	 */
	uint64_t unwind_budget;
};

#define NP_UNWIND_BUDGET_MIN	(64ULL << 10)
#define NP_UNWIND_BUDGET_MAX	(1ULL << 40)	/* a u32 of KiB holds 4 TiB */

#define NP_MMAP_PAGES_MAX	(1U << 18)	/* 1 GiB of 4 KiB pages */
#define NP_KMOD_NO_MMAP_PAGES	"-m/--mmap-pages sizes perf's rings (--backend perf); " \
	"nmiprof.ko sizes its own when loaded: modprobe nmiprof ring_kb=KIB"

#define NP_USTACK_COPY_DEFAULT	8192
#define NP_USTACK_COPY_AUTO	UINT32_MAX
#define NP_USTACK_COPY_MAX	65528	/* perf's limit: u16 record size */

struct np_backend_stats {
	const char *backend;	/* "kmod" or "libperf" */
	const char *source;	/* "pmu", "ipi", "external", "cycles", "cpu-clock" */
	const char *note;	/* one line: what is left out and why, or NULL */
	int kernel_excluded;	/* user space only (perf_event_paranoid) */
	uint64_t samples, lost;
	uint64_t lockups_dropped;	/* kmod: the module's queue was full */
	uint32_t nr_cpus;
	uint64_t ring_bytes;	/* data bytes of each CPU's ring */
	int nested_nmi_safe;	/* kmod only; -1 when unknown */
	uint64_t cost_min_ns, cost_avg_ns, cost_max_ns;	/* kmod only */
	/* user stacks unwound with tables (libperf): why each walk ended */
	uint64_t unwind_walks;
	uint64_t unwind_stops[NMIPROF_UW_STOP_NR];
	uint64_t unwind_tables, unwind_table_bytes;
};

struct np_backend;

void np_backend_opts_init(struct np_backend_opts *o);
/*
 * What the user asked to sample exists: the process of o->pid, every CPU
 * of o->cpus (valid list, online).  0, or -ESRCH / -EINVAL with err.
 */
int np_backend_check_target(const struct np_backend_opts *o, char *err,
			    size_t errlen);
/* The backend np_backend_open() would use for o (auto resolved). */
enum np_backend_kind np_backend_pick(const struct np_backend_opts *o);
/* Returns NULL and fills err (one line) on failure. */
struct np_backend *np_backend_open(const struct np_backend_opts *o,
				   char *err, size_t errlen);
int np_backend_start(struct np_backend *b);
int np_backend_stop(struct np_backend *b);
/*
 * Wait up to timeout_ms for data; >0 ready, 0 timeout, <0 -errno.
 * -ESRCH: the process followed with opts.pid has exited (drain once more).
 */
int np_backend_poll(struct np_backend *b, int timeout_ms);
/* Deliver every pending event in order per CPU; returns events or -errno. */
int np_backend_drain(struct np_backend *b, np_event_fn fn, void *arg);
int np_backend_stats(struct np_backend *b, struct np_backend_stats *st);
/*
 * A lockup event with a qid was stored durably: the module may forget
 * it.  Until then it hands it out again, to this backend's next drain
 * and to the next process that opens one.  0 or -errno.
 */
int np_backend_ack_lockup(struct np_backend *b, uint64_t qid);
const char *np_backend_name(const struct np_backend *b);
void np_backend_close(struct np_backend *b);

#endif /* NP_BACKEND_H */
