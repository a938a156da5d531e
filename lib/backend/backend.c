// SPDX-License-Identifier: GPL-2.0
/*
 * Backend selection and dispatch.  "auto" prefers nmiprof.ko when its
 * device exists: NMI sampling sees irqs-off regions that perf's
 * cpu-clock fallback cannot.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "np_backend_impl.h"

void np_backend_opts_init(struct np_backend_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->kind = NP_BACKEND_AUTO;
	o->freq_hz = 99;
	o->kstack_depth = NMIPROF_DEFAULT_FRAMES;
	o->ustack_depth = NMIPROF_DEFAULT_FRAMES;
	o->user_stacks = 1;
	o->pid = -1;
	o->cpus = NULL;
	o->ustack_copy = NP_USTACK_COPY_AUTO;
}

int np_backend_check_target(const struct np_backend_opts *o, char *err,
			    size_t errlen)
{
	/* the ABI's limit (nmiprof_config.cpumask), perf's is larger */
	enum { NBITS = sizeof(((struct nmiprof_config *)0)->cpumask) * 8 };
	uint64_t mask[NBITS / 64], online[NBITS / 64];
	char path[32];

	if (o->pid > 0) {
		snprintf(path, sizeof(path), "/proc/%d", o->pid);
		if (access(path, F_OK)) {
			snprintf(err, errlen, "no process %d", o->pid);
			return -ESRCH;
		}
	}
	if (!o->cpus)
		return 0;
	if (np_cpulist_parse(o->cpus, mask, NBITS, err, errlen) < 0 ||
	    np_cpulist_online(online, NBITS, err, errlen) < 0)
		return -EINVAL;
	for (unsigned int c = 0; c < NBITS; c++) {
		if (mask[c / 64] & ~online[c / 64] & (1ULL << (c % 64))) {
			snprintf(err, errlen, "CPU %u (in '%s') is not online", c,
				 o->cpus);
			return -EINVAL;
		}
	}
	return 0;
}

enum np_backend_kind np_backend_pick(const struct np_backend_opts *o)
{
	if (o->kind != NP_BACKEND_AUTO)
		return o->kind;
	return access(NMIPROF_DEVICE, F_OK) == 0 ? NP_BACKEND_KMOD
						 : NP_BACKEND_PERF;
}

struct np_backend *np_backend_open(const struct np_backend_opts *o,
				   char *err, size_t errlen)
{
	enum np_backend_kind kind = np_backend_pick(o);

	if (errlen)
		err[0] = '\0';
	if (o->freq_hz == 0 || o->freq_hz > NMIPROF_MAX_FREQ) {
		snprintf(err, errlen, "sampling frequency %u Hz out of range 1..%u",
			 o->freq_hz, NMIPROF_MAX_FREQ);
		return NULL;
	}
	if (o->kstack_depth > NMIPROF_MAX_FRAMES ||
	    o->ustack_depth > NMIPROF_MAX_FRAMES) {
		snprintf(err, errlen, "stack depth above the maximum of %d frames",
			 NMIPROF_MAX_FRAMES);
		return NULL;
	}
	if (o->ustack_copy > NP_USTACK_COPY_MAX &&
	    o->ustack_copy != NP_USTACK_COPY_AUTO) {
		snprintf(err, errlen, "user stack copy of %u bytes above perf's "
			 "maximum of %d", o->ustack_copy, NP_USTACK_COPY_MAX);
		return NULL;
	}
	if (o->mmap_pages > NP_MMAP_PAGES_MAX ||
	    (o->mmap_pages & (o->mmap_pages - 1))) {
		snprintf(err, errlen, "ring of %u pages: not a power of two up "
			 "to the maximum of %u", o->mmap_pages, NP_MMAP_PAGES_MAX);
		return NULL;
	}
	switch (kind) {
	case NP_BACKEND_KMOD:
		return np_backend_kmod_open(o, err, errlen);
	case NP_BACKEND_PERF:
		return np_backend_perf_open(o, err, errlen);
	default:
		snprintf(err, errlen, "unknown backend %d", (int)kind);
		return NULL;
	}
}

int np_backend_start(struct np_backend *b)
{
	return b->ops->start(b);
}

int np_backend_stop(struct np_backend *b)
{
	return b->ops->stop(b);
}

int np_backend_poll(struct np_backend *b, int timeout_ms)
{
	return b->ops->poll(b, timeout_ms);
}

int np_backend_drain(struct np_backend *b, np_event_fn fn, void *arg)
{
	return b->ops->drain(b, fn, arg);
}

int np_backend_stats(struct np_backend *b, struct np_backend_stats *st)
{
	memset(st, 0, sizeof(*st));
	st->nested_nmi_safe = -1;
	st->backend = b->ops->name;
	return b->ops->stats(b, st);
}

int np_backend_ack_lockup(struct np_backend *b, uint64_t qid)
{
	return b->ops->ack_lockup ? b->ops->ack_lockup(b, qid) : -EOPNOTSUPP;
}

const char *np_backend_name(const struct np_backend *b)
{
	return b->ops->name;
}

void np_backend_close(struct np_backend *b)
{
	if (b)
		b->ops->close(b);
}
