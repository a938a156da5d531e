/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Private to lib/backend*.c: the operations each backend implements and
 * the perf side-band helper both backends share.  Consumers use
 * np_backend.h only.
 */
#ifndef NP_BACKEND_IMPL_H
#define NP_BACKEND_IMPL_H

#include <stddef.h>
#include <sys/types.h>
#include "np_backend.h"

struct np_backend_ops {
	const char *name;
	int (*start)(struct np_backend *b);
	int (*stop)(struct np_backend *b);
	int (*poll)(struct np_backend *b, int timeout_ms);
	int (*drain)(struct np_backend *b, np_event_fn fn, void *arg);
	int (*stats)(struct np_backend *b, struct np_backend_stats *st);
	int (*ack_lockup)(struct np_backend *b, uint64_t qid);	/* optional */
	void (*close)(struct np_backend *b);
};

/* Every backend embeds this first. */
struct np_backend {
	const struct np_backend_ops *ops;
};

struct np_backend *np_backend_perf_open(const struct np_backend_opts *o,
					char *err, size_t errlen);
struct np_backend *np_backend_kmod_open(const struct np_backend_opts *o,
					char *err, size_t errlen);

/*
 * The device calls of the kmod backend, so that tests can stand in for
 * nmiprof.ko (tests/unit/test_backend_kmod.c).  Same contracts as the
 * system calls (-1 and errno on failure).
 */
struct pollfd;
struct np_kmod_sys {
	int (*open)(const char *path, int flags);
	int (*ioctl)(int fd, unsigned long req, void *arg);
	void *(*mmap)(void *addr, size_t len, int prot, int flags, int fd,
		      off_t off);
	int (*munmap)(void *addr, size_t len);
	int (*poll)(struct pollfd *fds, unsigned long nfds, int timeout);
	int (*close)(int fd);
	/* write one of nmiprof.ko's parameters (/sys/module/nmiprof/parameters) */
	int (*set_param)(const char *name, const char *val);
};
struct np_backend *np_backend_kmod_open_sys(const struct np_backend_opts *o,
					    const struct np_kmod_sys *sys,
					    char *err, size_t errlen);

/*
 * Side-band only perf events (PERF_COUNT_SW_DUMMY with mmap2, comm and
 * task records), as perf record uses: the kmod backend needs them to
 * symbolize user frames; the libperf backend uses the same helper so
 * that side-band is always drained before the samples it explains.
 */
struct np_perf_sideband;
struct np_perf_sideband *np_perf_sideband_open(const struct np_backend_opts *o,
					       char *err, size_t errlen);
int np_perf_sideband_enable(struct np_perf_sideband *sb, int on);
int np_perf_sideband_drain(struct np_perf_sideband *sb, np_event_fn fn,
			   void *arg, uint64_t *lost);
void np_perf_sideband_close(struct np_perf_sideband *sb);
/* Open the side-band on more CPUs (o->cpus), enabled if the rest is. */
int np_perf_sideband_add_cpus(struct np_perf_sideband *sb,
			      const struct np_backend_opts *o, char *err,
			      size_t errlen);
/*
 * Never disable the side-band's events (a cross call to each CPU) at
 * stop or close: for a caller that hands them to nmiprof.ko to drop.
 */
void np_perf_sideband_keep_enabled(struct np_perf_sideband *sb);

/* lib/util/cpulist.c: "0,2-5" -> bitmask; returns CPUs set or -1 (err filled). */
int np_cpulist_parse(const char *list, uint64_t *mask, unsigned int nbits,
		     char *err, size_t errlen);
/* Online CPUs as a bitmask (from /sys), same return convention. */
int np_cpulist_online(uint64_t *mask, unsigned int nbits, char *err,
		      size_t errlen);
/* The list string of mask into out; returns CPUs set, or -1 if out is short. */
int np_cpulist_format(const uint64_t *mask, unsigned int nbits, char *out,
		      size_t len);

#endif /* NP_BACKEND_IMPL_H */
