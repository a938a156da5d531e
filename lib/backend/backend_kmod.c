// SPDX-License-Identifier: GPL-2.0
/*
 * kmod backend: nmiprof.ko's /dev/nmiprof (include/nmiprof/nmiprof_abi.h).
 *
 *   open -> HELLO (ABI check) -> GET_FORMAT per record type (decoded by
 *   field name, lib/backend/recfmt.c) -> CONFIGURE -> mmap each CPU's control
 *   page (RW) and data pages (RO) -> START -> poll + drain (lib/backend/kring.c).
 *
 * With a pid, a module of ABI 1.5 on samples only it and its descendants
 * (follow_pid), so the rest of the system, idle CPUs too, costs nothing;
 * samples of other processes, from an older module or of a descendant
 * the module lost track of, are still dropped here, so the output is
 * what the perf backend's inherited events see.  User frames are symbolized from a
 * perf side-band event (MMAP2/COMM/FORK/EXIT), drained before the rings;
 * the same events keep the module's unwind tables current (kmod_unwind.c).
 *
 * System wide, a module of ABI 1.7 on keeps the side-band off CPUs that
 * don't answer an IPI (a hard lockup), and drops our side-band events
 * at close, so neither waits for such a CPU (sideband_open).
 *
 * Lockups come from the module's lockup queue (ABI 1.3), not the rings:
 * every one it still holds, of any CPU, reported before we started too,
 * each drain, until the consumer acknowledges it (np_backend_ack_lockup).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>
#include "np_backend_impl.h"
#include "np_recfmt.h"
#include "np_kring.h"
#include "np_kmod_unwind.h"
#include "np_fileio.h"
#include "np_clock.h"

#define NR_MASK_BITS	(sizeof(((struct nmiprof_config *)0)->cpumask) * 8)
#define NOT_FOLLOWED_SLOTS	1024	/* remembered non-descendants */
#define MAX_ANCESTRY		64	/* /proc parent links walked */

struct kcpu {
	int mapped;
	void *ctrl;
	void *data;
	struct np_kring ring;
};

struct kmod_backend {
	struct np_backend base;
	const struct np_kmod_sys *sys;
	int fd;
	int pid;		/* -1: everything */
	struct nmiprof_hello hello;
	struct np_recfmt *fmt;
	struct np_perf_sideband *sb;	/* NULL if perf is unavailable */
	int sb_park;		/* the module drops the side-band at close */
	int started;
	uint64_t sb_missing[NR_MASK_BITS / 64];	/* CPUs that didn't answer */
	uint64_t sb_retry_ns;	/* when to ask them again */
	struct np_kmod_unwind *uw;	/* NULL: frame pointers only */
	np_event_fn ufn;		/* unwind tap trampoline */
	void *uarg;
	uint64_t mask[NR_MASK_BITS / 64];
	struct kcpu *cpus;	/* hello.nr_cpu_ids entries */
	uint64_t sb_lost, filtered;
	uint64_t lq_dropped;	/* the module's queue was full */
	uint64_t lq_rec[(sizeof(struct nmiprof_lockup) +
			 NMIPROF_MAX_FRAMES * 8) / 8];
	np_event_fn fn;		/* pid filter trampoline */
	void *arg;
	/* with a pid: its descendants seen so far, and pids known not to be */
	uint32_t *followed;
	size_t nr_followed, cap_followed;
	uint32_t not_followed[NOT_FOLLOWED_SLOTS];
	int target_gone;
};

static const char *source_name(uint32_t src)
{
	switch (src) {
	case NMIPROF_SRC_PMU: return "pmu";
	case NMIPROF_SRC_IPI: return "ipi";
	case NMIPROF_SRC_EXTERNAL: return "external";
	default: return "unknown";
	}
}

static int hello(struct kmod_backend *kb, char *err, size_t errlen)
{
	struct nmiprof_hello *h = &kb->hello;

	memset(h, 0, sizeof(*h));
	h->magic = NMIPROF_MAGIC;
	h->abi_version = NMIPROF_ABI_VERSION;
	h->abi_minor = NMIPROF_ABI_MINOR;
	/* any minor will do: records are decoded by their format text */
	if (kb->sys->ioctl(kb->fd, NMIPROF_IOC_HELLO, h) < 0) {
		if ((errno == EPROTO || errno == ENOTTY) &&
		    h->abi_version != NMIPROF_ABI_VERSION)
			snprintf(err, errlen, "nmiprof.ko speaks ABI v%u, this program v%u: "
				 "install matching nmiprof versions", h->abi_version,
				 NMIPROF_ABI_VERSION);
		else if (errno == EPROTO || errno == ENOTTY)
			snprintf(err, errlen, "nmiprof.ko rejected ABI v%u: install "
				 "matching nmiprof versions", NMIPROF_ABI_VERSION);
		else
			snprintf(err, errlen, "%s: HELLO: %s", NMIPROF_DEVICE, strerror(errno));
		return -1;
	}
	if (h->abi_version != NMIPROF_ABI_VERSION) {
		snprintf(err, errlen, "nmiprof.ko speaks ABI v%u, this program v%u: "
			 "install matching nmiprof versions", h->abi_version,
			 NMIPROF_ABI_VERSION);
		return -1;
	}
	if (!h->nr_cpu_ids || h->nr_cpu_ids > NR_MASK_BITS || !h->page_size ||
	    !h->ring_data_size || (h->ring_data_size & (h->ring_data_size - 1))) {
		snprintf(err, errlen, "nmiprof.ko HELLO: implausible reply (cpus %u, page %u, ring %llu)",
			 h->nr_cpu_ids, h->page_size,
			 (unsigned long long)h->ring_data_size);
		return -1;
	}
	return 0;
}

static int load_formats(struct kmod_backend *kb, char *err, size_t errlen)
{
	size_t cap = 8192;
	char *buf = malloc(cap);

	kb->fmt = np_recfmt_new();
	if (!buf || !kb->fmt) {
		free(buf);
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	for (uint32_t type = 1; type < NMIPROF_REC_MAX; type++) {
		struct nmiprof_format_req req = {
			.type = type, .len = cap, .buf = (uintptr_t)buf,
		};

		if (kb->sys->ioctl(kb->fd, NMIPROF_IOC_GET_FORMAT, &req) < 0) {
			if ((errno == ENOSPC || errno == E2BIG) && req.len > cap) {
				char *nb = realloc(buf, req.len);

				if (nb) {
					buf = nb;
					cap = req.len;
					type--;		/* retry with room */
					continue;
				}
			}
			if (type == NMIPROF_REC_LOCKUP && (errno == EINVAL || errno == ENOENT))
				continue;	/* a module without the watchdog */
			snprintf(err, errlen, "%s: GET_FORMAT(%u): %s", NMIPROF_DEVICE,
				 type, strerror(errno));
			free(buf);
			return -1;
		}
		if (req.len > cap) {
			char *nb = realloc(buf, req.len);

			if (!nb)
				break;
			buf = nb;
			cap = req.len;
			type--;
			continue;
		}
		buf[cap - 1] = '\0';
		if (np_recfmt_add(kb->fmt, buf, strnlen(buf, cap), err, errlen) < 0) {
			free(buf);
			return -1;
		}
	}
	free(buf);
	if (!np_recfmt_has(kb->fmt, NMIPROF_REC_SAMPLE) ||
	    !np_recfmt_has(kb->fmt, NMIPROF_REC_LOST)) {
		snprintf(err, errlen, "nmiprof.ko did not describe its sample and lost records");
		return -1;
	}
	return 0;
}

static int configure(struct kmod_backend *kb, const struct np_backend_opts *o,
		     char *err, size_t errlen)
{
	struct nmiprof_config c;

	memset(&c, 0, sizeof(c));
	c.freq_hz = o->freq_hz;
	c.source = NMIPROF_SRC_AUTO;
	c.kstack_depth = o->kstack_depth;
	c.ustack_depth = o->user_stacks ? o->ustack_depth : 0;
	c.flags = o->user_stacks ? NMIPROF_CF_USER_STACKS : 0;
	if (kb->pid > 0 && kb->hello.abi_minor >= 5)
		c.follow_pid = kb->pid;
	if (o->cpus) {
		if (np_cpulist_parse(o->cpus, kb->mask, NR_MASK_BITS, err, errlen) < 0)
			return -1;
		memcpy(c.cpumask, kb->mask, sizeof(c.cpumask));
	} else if (np_cpulist_online(kb->mask, NR_MASK_BITS, err, errlen) < 0) {
		return -1;
	}
	if (kb->sys->ioctl(kb->fd, NMIPROF_IOC_CONFIGURE, &c) < 0) {
		snprintf(err, errlen, "%s: CONFIGURE: %s", NMIPROF_DEVICE, strerror(errno));
		return -1;
	}
	return 0;
}

static int cpu_selected(const struct kmod_backend *kb, uint32_t cpu)
{
	return cpu < NR_MASK_BITS && (kb->mask[cpu / 64] >> (cpu % 64)) & 1;
}

/* Map every selected CPU's ring not mapped yet; -1 with err on failure. */
static int map_rings(struct kmod_backend *kb, int must, char *err, size_t errlen)
{
	size_t psz = kb->hello.page_size, dsz = kb->hello.ring_data_size;

	for (uint32_t cpu = 0; cpu < kb->hello.nr_cpu_ids; cpu++) {
		struct kcpu *kc = &kb->cpus[cpu];

		if (kc->mapped || !cpu_selected(kb, cpu))
			continue;
		kc->ctrl = kb->sys->mmap(NULL, psz, PROT_READ | PROT_WRITE, MAP_SHARED, kb->fd,
				NMIPROF_MMAP_OFFSET(cpu, NMIPROF_MAP_CTRL));
		if (kc->ctrl == MAP_FAILED)
			goto fail;
		kc->data = kb->sys->mmap(NULL, dsz, PROT_READ, MAP_SHARED, kb->fd,
				NMIPROF_MMAP_OFFSET(cpu, NMIPROF_MAP_DATA));
		if (kc->data == MAP_FAILED) {
			kb->sys->munmap(kc->ctrl, psz);
			goto fail;
		}
		if (np_kring_init(&kc->ring, kc->ctrl, kc->data, dsz, cpu, err, errlen) < 0) {
			kb->sys->munmap(kc->ctrl, psz);
			kb->sys->munmap(kc->data, dsz);
			return -1;
		}
		kc->mapped = 1;
		continue;
fail:
		if (must) {
			snprintf(err, errlen, "%s: mmap of CPU %u ring: %s",
				 NMIPROF_DEVICE, cpu, strerror(errno));
			return -1;
		}
	}
	return 0;
}

/*
 * The side-band on CPUs that don't answer (ABI 1.7).  Opening a per-CPU
 * perf event, and closing it, is a cross call its CPU must take: one
 * with interrupts off would hold us, spinning, until it is back.  So the
 * side-band is opened on the CPUs that answer now, and on the others
 * once they do (sideband_retry); meanwhile they run nothing but what
 * keeps them stuck, so there is no side-band to miss there.  At close
 * the module takes our events and drops them once their CPUs answer.
 */
#define ANSWER_OPEN_MS	200
#define ANSWER_RETRY_MS	20
#define ANSWER_RETRY_NS	1000000000ull

static int cpus_answering(struct kmod_backend *kb, uint32_t ms, uint64_t *ok)
{
	struct nmiprof_cpus_answer q = { .timeout_ms = ms };

	if (kb->sys->ioctl(kb->fd, NMIPROF_IOC_CPUS_ANSWER, &q) < 0)
		return -errno;
	memcpy(ok, q.cpumask, sizeof(q.cpumask));
	return 0;
}

static struct np_perf_sideband *sideband_new(struct kmod_backend *kb,
					     const struct np_backend_opts *o,
					     char *err, size_t errlen)
{
	struct np_perf_sideband *sb = np_perf_sideband_open(o, err, errlen);

	if (sb && kb->sb_park)
		np_perf_sideband_keep_enabled(sb);
	if (sb && kb->started)
		np_perf_sideband_enable(sb, 1);
	return sb;
}

static void sideband_open(struct kmod_backend *kb, const struct np_backend_opts *o)
{
	struct np_backend_opts so = *o;
	uint64_t ok[NR_MASK_BITS / 64];
	char list[4096], err[256];
	int missing = 0;

	if (kb->pid < 0 && kb->hello.abi_minor >= 7 &&
	    cpus_answering(kb, ANSWER_OPEN_MS, ok) == 0) {
		kb->sb_park = 1;
		for (size_t i = 0; i < NR_MASK_BITS / 64; i++) {
			kb->sb_missing[i] = kb->mask[i] & ~ok[i];
			ok[i] &= kb->mask[i];
			missing |= !!kb->sb_missing[i];
		}
		kb->sb_retry_ns = np_mono_ns() + ANSWER_RETRY_NS;
	}
	if (missing) {
		if (np_cpulist_format(ok, NR_MASK_BITS, list, sizeof(list)) <= 0)
			return;		/* none answers: all come later */
		so.cpus = list;
	}
	/* Without side-band, user frames fall back to /proc/PID/maps. */
	kb->sb = sideband_new(kb, &so, err, sizeof(err));
}

static void sideband_retry(struct kmod_backend *kb)
{
	struct np_backend_opts so = { .pid = -1 };
	uint64_t ok[NR_MASK_BITS / 64];
	char list[4096], err[256];
	int any = 0;

	kb->sb_retry_ns = np_mono_ns() + ANSWER_RETRY_NS;
	if (cpus_answering(kb, ANSWER_RETRY_MS, ok) < 0)
		return;
	for (size_t i = 0; i < NR_MASK_BITS / 64; i++) {
		ok[i] &= kb->sb_missing[i];
		any |= !!ok[i];
	}
	if (!any || np_cpulist_format(ok, NR_MASK_BITS, list, sizeof(list)) < 0)
		return;
	so.cpus = list;
	if (kb->sb ? np_perf_sideband_add_cpus(kb->sb, &so, err, sizeof(err)) < 0
		   : !(kb->sb = sideband_new(kb, &so, err, sizeof(err))))
		return;		/* again in a second */
	for (size_t i = 0; i < NR_MASK_BITS / 64; i++)
		kb->sb_missing[i] &= ~ok[i];
}

static int sideband_missing(const struct kmod_backend *kb)
{
	for (size_t i = 0; i < NR_MASK_BITS / 64; i++)
		if (kb->sb_missing[i])
			return 1;
	return 0;
}

/*
 * Every perf event we have open (the side-band's: this backend opens no
 * other) to the module, which drops each once its CPU answers: our close
 * then only drops our reference.
 */
static void sideband_park(struct kmod_backend *kb)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *de;
	char path[300], link[64];
	ssize_t n;

	if (!d)
		return;
	while ((de = readdir(d))) {
		int fd = atoi(de->d_name);

		snprintf(path, sizeof(path), "/proc/self/fd/%s", de->d_name);
		n = readlink(path, link, sizeof(link) - 1);
		if (n < 0 || de->d_name[0] < '0' || de->d_name[0] > '9')
			continue;
		link[n] = '\0';
		if (!strcmp(link, "anon_inode:[perf_event]"))
			kb->sys->ioctl(kb->fd, NMIPROF_IOC_PARK_PERF_FD, &fd);
	}
	closedir(d);
}

static int kmod_start(struct np_backend *b)
{
	struct kmod_backend *kb = (struct kmod_backend *)b;
	char err[128];

	kb->started = 1;
	if (kb->sb)
		np_perf_sideband_enable(kb->sb, 1);
	if (kb->sys->ioctl(kb->fd, NMIPROF_IOC_START, NULL) < 0)
		return -errno;
	/* rings a module allocates only at START */
	return map_rings(kb, 1, err, sizeof(err)) < 0 ? -ENOMEM : 0;
}

static int kmod_stop(struct np_backend *b)
{
	struct kmod_backend *kb = (struct kmod_backend *)b;
	int ret = kb->sys->ioctl(kb->fd, NMIPROF_IOC_STOP, NULL) < 0 ? -errno : 0;

	kb->started = 0;
	if (kb->sb)
		np_perf_sideband_enable(kb->sb, 0);
	return ret;
}

static int kmod_poll(struct np_backend *b, int timeout_ms)
{
	struct kmod_backend *kb = (struct kmod_backend *)b;
	struct pollfd pfd = { .fd = kb->fd, .events = POLLIN };
	int ret;

	/*
	 * As the perf backend: -ESRCH once the followed process is gone (its
	 * samples are in the rings for the caller's last drain).  A zombie
	 * still counts as there: its parent reaps it and sees the exit.
	 */
	if (kb->pid > 0 && !kb->target_gone && kill(kb->pid, 0) < 0 &&
	    errno == ESRCH) {
		kb->target_gone = 1;
		return -ESRCH;
	}
	ret = kb->sys->poll(&pfd, 1, timeout_ms);
	return ret < 0 ? -errno : ret;
}

static int is_listed(const struct kmod_backend *kb, uint32_t pid)
{
	for (size_t i = 0; i < kb->nr_followed; i++)
		if (kb->followed[i] == pid)
			return 1;
	return 0;
}

static void follow(struct kmod_backend *kb, uint32_t pid)
{
	if (is_listed(kb, pid))
		return;
	if (kb->nr_followed == kb->cap_followed) {
		size_t cap = kb->cap_followed ? 2 * kb->cap_followed : 16;
		uint32_t *n = realloc(kb->followed, cap * sizeof(*n));

		if (!n)
			return;		/* its samples get dropped: no crash */
		kb->followed = n;
		kb->cap_followed = cap;
	}
	kb->followed[kb->nr_followed++] = pid;
	/* a recycled pid may have been a stranger before */
	if (kb->not_followed[pid % NOT_FOLLOWED_SLOTS] == pid)
		kb->not_followed[pid % NOT_FOLLOWED_SLOTS] = 0;
}

/* The parent of a live process from /proc/PID/stat, or 0. */
static uint32_t parent_of(uint32_t pid)
{
	char path[64], state;
	unsigned int ppid;

	snprintf(path, sizeof(path), "/proc/%u/stat", pid);
	return np_proc_stat(path, &state, &ppid) ? 0 : ppid;
}

/*
 * Is pid the followed process or one of its descendants?  FORK side-band
 * records add children as they are born (and before their samples: side
 * band is drained first); a process that forked before we started, or
 * when side-band is unavailable, is looked up once through /proc.
 */
static int followed(struct kmod_backend *kb, uint32_t pid)
{
	uint32_t p = pid;

	if (pid == (uint32_t)kb->pid || is_listed(kb, pid))
		return 1;
	if (!pid || kb->not_followed[pid % NOT_FOLLOWED_SLOTS] == pid)
		return 0;
	for (int i = 0; i < MAX_ANCESTRY && p > 1; i++) {
		p = parent_of(p);
		if (p == (uint32_t)kb->pid) {
			follow(kb, pid);
			return 1;
		}
	}
	kb->not_followed[pid % NOT_FOLLOWED_SLOTS] = pid;
	return 0;
}

/* Drop samples of other processes when following one pid. */
static int pid_filter(const struct np_event *ev, void *arg)
{
	struct kmod_backend *kb = arg;

	if (ev->type == NP_EV_FORK && ev->task.pid != ev->task.ppid &&
	    followed(kb, ev->task.ppid))
		follow(kb, ev->task.pid);
	if (ev->type == NP_EV_SAMPLE && !followed(kb, ev->sample.pid)) {
		kb->filtered++;
		return 0;
	}
	return kb->fn(ev, kb->arg);
}

/* Every event the consumer gets also keeps the module's tables current. */
static int unwind_tap(const struct np_event *ev, void *arg)
{
	struct kmod_backend *kb = arg;

	np_kmod_unwind_event(kb->uw, ev);
	return kb->ufn(ev, kb->uarg);
}

struct lq_tap {
	np_event_fn fn;
	void *arg;
	uint64_t qid;
};

static int lq_tap(const struct np_event *ev, void *arg)
{
	struct lq_tap *t = arg;
	struct np_event e = *ev;

	if (e.type != NP_EV_LOCKUP)
		return 0;
	e.lockup.qid = t->qid;
	return t->fn(&e, t->arg);
}

/* Every lockup the module's queue holds, oldest first. */
static int drain_lockups(struct kmod_backend *kb, np_event_fn fn, void *arg)
{
	struct lq_tap tap = { .fn = fn, .arg = arg };
	struct nmiprof_lockup_read rd;
	int n = 0;

	if (kb->hello.abi_minor < 3)
		return 0;	/* an older module puts them in the rings */
	memset(&rd, 0, sizeof(rd));
	for (;;) {
		rd.buf = (uintptr_t)kb->lq_rec;
		rd.len = sizeof(kb->lq_rec);
		/* Sampling goes on; the queue keeps them for the next drain. */
		if (kb->sys->ioctl(kb->fd, NMIPROF_IOC_LOCKUP_READ, &rd) < 0 &&
		    errno != ENOSPC)
			return n;
		kb->lq_dropped = rd.dropped;
		if (!rd.id)
			return n;
		rd.after = rd.id;
		if (rd.len > sizeof(kb->lq_rec))
			continue;	/* more frames than the ABI allows */
		tap.qid = rd.id;
		if (np_recfmt_decode(kb->fmt, kb->lq_rec, rd.len, lq_tap, &tap) > 0)
			return n + 1;
		n++;
	}
}

static int kmod_drain(struct np_backend *b, np_event_fn fn, void *arg)
{
	struct kmod_backend *kb = (struct kmod_backend *)b;
	int n = 0, stopped = 0;

	if (kb->uw) {
		kb->ufn = fn;
		kb->uarg = arg;
		fn = unwind_tap;
		arg = kb;
	}
	if (kb->pid >= 0) {
		kb->fn = fn;
		kb->arg = arg;
		fn = pid_filter;
		arg = kb;
	}
	if (kb->sb_park && sideband_missing(kb) && np_mono_ns() >= kb->sb_retry_ns)
		sideband_retry(kb);
	/* side-band first: the mappings the samples refer to */
	if (kb->sb)
		n += np_perf_sideband_drain(kb->sb, fn, arg, &kb->sb_lost);
	for (uint32_t cpu = 0; cpu < kb->hello.nr_cpu_ids && !stopped; cpu++)
		if (kb->cpus[cpu].mapped)
			n += np_kring_drain(&kb->cpus[cpu].ring, kb->fmt, fn, arg,
					    &stopped);
	if (kb->uw)
		np_kmod_unwind_flush(kb->uw);
	if (!stopped)
		n += drain_lockups(kb, fn, arg);
	return n;
}

static int kmod_ack_lockup(struct np_backend *b, uint64_t qid)
{
	struct kmod_backend *kb = (struct kmod_backend *)b;

	return kb->sys->ioctl(kb->fd, NMIPROF_IOC_LOCKUP_ACK, &qid) < 0 ? -errno : 0;
}

static int kmod_stats(struct np_backend *b, struct np_backend_stats *st)
{
	struct kmod_backend *kb = (struct kmod_backend *)b;
	uint32_t n = kb->hello.nr_cpu_ids;
	struct nmiprof_cpu_stats *cs = calloc(n, sizeof(*cs));
	struct nmiprof_stats s = { .nr_cpus = n, .cpus = (uintptr_t)cs };
	uint64_t sum = 0;

	if (!cs)
		return -ENOMEM;
	if (kb->sys->ioctl(kb->fd, NMIPROF_IOC_GET_STATS, &s) < 0) {
		free(cs);
		return -errno;
	}
	st->source = source_name(s.source);
	st->ring_bytes = kb->hello.ring_data_size;
	st->nested_nmi_safe = s.nested_nmi_safe;
	st->cost_min_ns = UINT64_MAX;
	for (uint32_t i = 0; i < s.nr_cpus && i < n; i++) {
		if (!cpu_selected(kb, i))
			continue;
		st->nr_cpus++;
		st->samples += cs[i].samples;
		st->lost += cs[i].lost;
		sum += cs[i].cost_sum_ns;
		if (cs[i].samples && cs[i].cost_min_ns < st->cost_min_ns)
			st->cost_min_ns = cs[i].cost_min_ns;
		if (cs[i].cost_max_ns > st->cost_max_ns)
			st->cost_max_ns = cs[i].cost_max_ns;
	}
	if (st->cost_min_ns == UINT64_MAX)
		st->cost_min_ns = 0;
	st->cost_avg_ns = st->samples ? sum / st->samples : 0;
	st->lockups_dropped = kb->lq_dropped;
	if (kb->uw)
		np_kmod_unwind_stats(kb->uw, st);
	free(cs);
	return 0;
}

static void kmod_close(struct np_backend *b)
{
	struct kmod_backend *kb = (struct kmod_backend *)b;

	for (uint32_t cpu = 0; kb->cpus && cpu < kb->hello.nr_cpu_ids; cpu++) {
		if (!kb->cpus[cpu].mapped)
			continue;
		kb->sys->munmap(kb->cpus[cpu].ctrl, kb->hello.page_size);
		kb->sys->munmap(kb->cpus[cpu].data, kb->hello.ring_data_size);
	}
	free(kb->cpus);
	free(kb->followed);
	np_kmod_unwind_free(kb->uw);
	if (kb->sb && kb->sb_park)
		sideband_park(kb);
	np_perf_sideband_close(kb->sb);
	np_recfmt_free(kb->fmt);
	if (kb->fd >= 0)
		kb->sys->close(kb->fd);
	free(kb);
}

static const struct np_backend_ops kmod_ops = {
	.name = "kmod",
	.start = kmod_start,
	.stop = kmod_stop,
	.poll = kmod_poll,
	.drain = kmod_drain,
	.stats = kmod_stats,
	.ack_lockup = kmod_ack_lockup,
	.close = kmod_close,
};

/*
 * The tables' budget is the module's, for every reader: a parameter, not
 * a session setting, so the daemon sets it as the administrator would.
 */
static int set_unwind_budget(struct kmod_backend *kb,
			     const struct np_backend_opts *o,
			     char *err, size_t errlen)
{
	char kb_str[24];

	snprintf(kb_str, sizeof(kb_str), "%llu",
		 (unsigned long long)((o->unwind_budget + 1023) >> 10));
	if (kb->sys->set_param("unwind_budget_kb", kb_str) == 0)
		return 0;
	snprintf(err, errlen, "cannot set nmiprof.ko's unwind_budget_kb to %s: %s%s",
		 kb_str, strerror(errno),
		 errno == EACCES || errno == EPERM ? " (root only)" : "");
	return -1;
}

static int sys_open(const char *path, int flags)
{
	return open(path, flags);
}

static int sys_ioctl(int fd, unsigned long req, void *arg)
{
	return ioctl(fd, req, arg);
}

static int sys_set_param(const char *name, const char *val)
{
	char path[128];
	size_t len = strlen(val);
	ssize_t n;
	int fd, e;

	snprintf(path, sizeof(path), "/sys/module/nmiprof/parameters/%s", name);
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	n = write(fd, val, len);
	e = errno;
	close(fd);
	if (n == (ssize_t)len)
		return 0;
	errno = n < 0 ? e : EIO;
	return -1;
}

static const struct np_kmod_sys real_sys = {
	.open = sys_open,
	.ioctl = sys_ioctl,
	.mmap = mmap,
	.munmap = munmap,
	.poll = poll,
	.close = close,
	.set_param = sys_set_param,
};

struct np_backend *np_backend_kmod_open(const struct np_backend_opts *o,
					char *err, size_t errlen)
{
	return np_backend_kmod_open_sys(o, &real_sys, err, errlen);
}

struct np_backend *np_backend_kmod_open_sys(const struct np_backend_opts *o,
					    const struct np_kmod_sys *sys,
					    char *err, size_t errlen)
{
	struct kmod_backend *kb;
	char sberr[256];

	if (o->mmap_pages) {
		errno = EINVAL;
		snprintf(err, errlen, "%s", NP_KMOD_NO_MMAP_PAGES);
		return NULL;
	}
	kb = calloc(1, sizeof(*kb));
	if (!kb) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	kb->base.ops = &kmod_ops;
	kb->sys = sys;
	kb->pid = o->pid;
	kb->fd = sys->open(NMIPROF_DEVICE, O_RDWR | O_CLOEXEC);
	if (kb->fd < 0) {
		if (errno == ENOENT || errno == ENXIO || errno == ENODEV)
			snprintf(err, errlen, "%s missing: load nmiprof.ko (modprobe nmiprof) "
				 "or use the libperf backend", NMIPROF_DEVICE);
		else if (errno == EPERM || errno == EACCES)
			snprintf(err, errlen, "%s: %s (needs root or CAP_PERFMON)",
				 NMIPROF_DEVICE, strerror(errno));
		else
			snprintf(err, errlen, "%s: %s", NMIPROF_DEVICE, strerror(errno));
		goto fail;
	}
	if (hello(kb, err, errlen) < 0 || load_formats(kb, err, errlen) < 0 ||
	    configure(kb, o, err, errlen) < 0)
		goto fail;
	kb->cpus = calloc(kb->hello.nr_cpu_ids, sizeof(*kb->cpus));
	if (!kb->cpus) {
		snprintf(err, errlen, "out of memory");
		goto fail;
	}
	/* rings a module allocates at CONFIGURE are mapped before START */
	if (map_rings(kb, 0, err, errlen) < 0)
		goto fail;
	sideband_open(kb, o);
	/*
	 * Unwind tables for a module of ABI 1.2 on: without them (or with
	 * ustack_copy 0, "frame pointers only"), the module follows frame
	 * pointers as before.
	 */
	if (kb->hello.abi_minor >= 2 && o->user_stacks && o->ustack_copy)
		kb->uw = np_kmod_unwind_new(kb->fd, sys, kb->hello.abi_minor,
					    o->unwind_cache, kb->pid < 0,
					    sberr, sizeof(sberr));
	if (kb->uw && o->unwind_budget && set_unwind_budget(kb, o, err, errlen) < 0)
		goto fail;
	return &kb->base;
fail:
	kmod_close(&kb->base);
	return NULL;
}
