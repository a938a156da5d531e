// SPDX-License-Identifier: GPL-2.0
/*
 * The kmod backend's device protocol against a stand-in for nmiprof.ko
 * (np_kmod_sys): HELLO and the ABI-mismatch line, GET_FORMAT (text in
 * kmod/format.c's style, with a retry on -ENOSPC and no LOCKUP type),
 * CONFIGURE contents, ring mmaps at NMIPROF_MMAP_OFFSET, START/STOP,
 * poll, draining both CPUs' rings with the pid filter, GET_STATS.
 * What it cannot show: that the real module behaves like this stand-in
 * (the QEMU tests do).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>
#include "np_backend.h"
#include "np_backend_impl.h"

#include "check.h"

#define NCPU	2
#define PAGE	4096
#define DATA	(64 * 1024)
#define FD	42

/*
 * The sample of a later minor (the ABI header's rules): a field inserted
 * after ip moves everything behind it; only the format text says so.
 */
struct moved_sample {
	struct nmiprof_rec_header hdr;
	__u64 seq;
	__u64 time_ns;
	__u64 ip;
	__u64 cgroup_id;
	__u32 cpu;
	__u32 pid;
	__u32 tid;
	__u16 nr_kframes;
	__u16 nr_uframes;
	char comm[NMIPROF_COMM_LEN];
	__u32 kstack;
	__u32 ustack;
	__u32 uregs;
	__u32 ustack_raw;
};

/* A queued LOCKUP record with two frames. */
struct fake_lockup {
	struct nmiprof_lockup rec;
	__u64 frames[2];
	__u64 id;
	int acked;
};

static struct {
	int abi;		/* ABI the fake module speaks */
	int lockups;		/* describes LOCKUP records, has a queue */
	struct fake_lockup lq[2];
	uint32_t minor;		/* its minor */
	int moved;		/* its samples are struct moved_sample */
	uint32_t caller_minor;	/* what HELLO was told */
	int hello_ok, started, stopped, format_calls, enospc_sent;
	struct nmiprof_config cfg;
	struct nmiprof_ring_ctrl *ctrl[NCPU];
	uint8_t *data[NCPU];
	int mapped[NCPU][2];
	char param[64];		/* the last parameter written, "name=val" */
	int param_errno;	/* set_param fails with it */
	uint64_t answer;	/* CPUs that answer (CPUS_ANSWER) */
	int answer_calls, parked, parked_other;
} dev;

static int fake_open(const char *path, int flags)
{
	CHECK(!strcmp(path, NMIPROF_DEVICE) && (flags & O_RDWR));
	if (!dev.abi) {
		errno = ENOENT;
		return -1;
	}
	return FD;
}

/* kmod/format.c's layout of the text: common fields, blank, fields, print fmt */
static int format_text(uint32_t type, char *buf, size_t len)
{
#define FLD(st, ty, f) n += snprintf(buf + n, len - n, "\tfield:" ty " " #f ";\toffset:%zu;\tsize:%zu;\tsigned:0;\n", \
				      offsetof(struct st, f), sizeof(((struct st *)0)->f))
#define LOC(st, ty, f) n += snprintf(buf + n, len - n, "\tfield:__data_loc " ty "[] " #f ";\toffset:%zu;\tsize:4;\tsigned:0;\n", \
				      offsetof(struct st, f))
	int n = snprintf(buf, len, "name: %s\nID: %u\nformat:\n",
			 type == NMIPROF_REC_SAMPLE ? "sample" :
			 type == NMIPROF_REC_LOST ? "lost" : "lockup", type);

	FLD(nmiprof_rec_header, "unsigned short", common_type);
	FLD(nmiprof_rec_header, "unsigned short", common_flags);
	FLD(nmiprof_rec_header, "unsigned int", common_size);
	n += snprintf(buf + n, len - n, "\n");
#define SAMPLE_FIELDS(st) do {						\
		FLD(st, "u64", seq);						\
		FLD(st, "u64", time_ns);					\
		FLD(st, "u64", ip);						\
		FLD(st, "u32", cpu);						\
		FLD(st, "u32", pid);						\
		FLD(st, "u32", tid);						\
		FLD(st, "u16", nr_kframes);					\
		FLD(st, "u16", nr_uframes);					\
		n += snprintf(buf + n, len - n, "\tfield:char comm[16];\toffset:%zu;\tsize:16;\tsigned:0;\n", \
			      offsetof(struct st, comm));			\
		LOC(st, "u64", kstack);						\
		LOC(st, "u64", ustack);						\
		LOC(st, "u64", uregs);						\
		LOC(st, "u8", ustack_raw);					\
	} while (0)
	if (type == NMIPROF_REC_SAMPLE && dev.moved) {
		SAMPLE_FIELDS(moved_sample);
		FLD(moved_sample, "u64", cgroup_id);
	} else if (type == NMIPROF_REC_SAMPLE) {
		SAMPLE_FIELDS(nmiprof_sample);
	} else if (type == NMIPROF_REC_LOCKUP) {
		FLD(nmiprof_lockup, "u64", seq);
		FLD(nmiprof_lockup, "u64", time_ns);
		FLD(nmiprof_lockup, "u64", stuck_ns);
		FLD(nmiprof_lockup, "u32", cpu);
		FLD(nmiprof_lockup, "u32", pid);
		FLD(nmiprof_lockup, "u32", tid);
		FLD(nmiprof_lockup, "u16", nr_kframes);
		FLD(nmiprof_lockup, "u16", lockup_flags);
		LOC(nmiprof_lockup, "u64", kstack);
		FLD(nmiprof_lockup, "u64", real_ns);
	} else {
		FLD(nmiprof_lost, "u64", seq);
		FLD(nmiprof_lost, "u64", time_ns);
		FLD(nmiprof_lost, "u64", lost);
		FLD(nmiprof_lost, "u32", cpu);
	}
	n += snprintf(buf + n, len - n, "\nprint fmt: \"cpu=%%u\", REC->cpu\n");
	return n + 1;
}

/* /proc/self/fd/NAME is a perf event */
static int is_perf_fd(const char *name)
{
	char path[300], link[64];
	ssize_t len;

	snprintf(path, sizeof(path), "/proc/self/fd/%s", name);
	len = readlink(path, link, sizeof(link) - 1);
	if (len <= 0)
		return 0;
	link[len] = '\0';
	return !strcmp(link, "anon_inode:[perf_event]");
}

static int fake_ioctl(int fd, unsigned long req, void *arg)
{
	CHECK(fd == FD);
	if (req == NMIPROF_IOC_HELLO) {
		struct nmiprof_hello *h = arg;
		/* as kmod/main.c: the major must match, any minor will do */
		int match = h->magic == NMIPROF_MAGIC && h->abi_version == (uint32_t)dev.abi;

		dev.caller_minor = h->abi_minor;
		memset(h, 0, sizeof(*h));
		h->magic = NMIPROF_MAGIC;
		h->abi_version = dev.abi;
		h->abi_minor = dev.minor;
		h->nr_cpu_ids = NCPU;
		h->page_size = PAGE;
		h->ring_data_size = DATA;
		h->nested_nmi_safe = 1;
		if (!match) {
			errno = EPROTO;
			return -1;
		}
		dev.hello_ok = 1;
		return 0;
	}
	if (!dev.hello_ok) {
		errno = EPROTO;
		return -1;
	}
	switch (req) {
	case NMIPROF_IOC_GET_FORMAT: {
		struct nmiprof_format_req *r = arg;
		char text[4096];
		int len;

		dev.format_calls++;
		if ((r->type == NMIPROF_REC_LOCKUP && !dev.lockups) ||
		    r->type >= NMIPROF_REC_MAX) {
			errno = EINVAL;	/* a module without the watchdog */
			return -1;
		}
		len = format_text(r->type, text, sizeof(text));
		/* first call for the sample: claim the caller's buffer is short */
		if (r->len < (uint32_t)len || (r->type == NMIPROF_REC_SAMPLE && !dev.enospc_sent)) {
			dev.enospc_sent = 1;
			r->len = r->len < (uint32_t)len ? (uint32_t)len : r->len + 1;
			errno = ENOSPC;
			return -1;
		}
		memcpy((void *)(uintptr_t)r->buf, text, len);
		r->len = len;
		return 0;
	}
	case NMIPROF_IOC_CONFIGURE:
		dev.cfg = *(struct nmiprof_config *)arg;
		return 0;
	case NMIPROF_IOC_LOCKUP_READ: {
		/* as kmod/lockup_queue.c: the lowest id above rd->after */
		struct nmiprof_lockup_read *rd = arg;
		struct fake_lockup *best = NULL;

		for (int i = 0; dev.lockups && i < 2; i++)
			if (!dev.lq[i].acked && dev.lq[i].id > rd->after &&
			    (!best || dev.lq[i].id < best->id))
				best = &dev.lq[i];
		rd->id = best ? best->id : 0;
		rd->dropped = 3;
		rd->len = best ? sizeof(best->rec) + sizeof(best->frames) : 0;
		if (best)
			memcpy((void *)(uintptr_t)rd->buf, best, rd->len);
		return 0;
	}
	case NMIPROF_IOC_LOCKUP_ACK:
		for (int i = 0; dev.lockups && i < 2; i++) {
			if (!dev.lq[i].acked && dev.lq[i].id == *(__u64 *)arg) {
				dev.lq[i].acked = 1;
				return 0;
			}
		}
		errno = ENOENT;
		return -1;
	case NMIPROF_IOC_CPUS_ANSWER: {
		struct nmiprof_cpus_answer *q = arg;

		CHECK(q->timeout_ms > 0 && q->timeout_ms <= 1000 && !q->__reserved);
		memset(q->cpumask, 0, sizeof(q->cpumask));
		q->cpumask[0] = dev.answer;
		dev.answer_calls++;
		return 0;
	}
	case NMIPROF_IOC_PARK_PERF_FD: {
		char name[16];

		snprintf(name, sizeof(name), "%d", *(int *)arg);
		if (is_perf_fd(name))
			dev.parked++;
		else
			dev.parked_other++;
		return 0;
	}
	case NMIPROF_IOC_START:
		dev.started++;
		return 0;
	case NMIPROF_IOC_STOP:
		dev.stopped++;
		return 0;
	case NMIPROF_IOC_GET_STATS: {
		struct nmiprof_stats *st = arg;
		struct nmiprof_cpu_stats *cs = (void *)(uintptr_t)st->cpus;

		CHECK(st->nr_cpus == NCPU);
		for (int i = 0; i < NCPU; i++) {
			memset(&cs[i], 0, sizeof(cs[i]));
			cs[i].samples = 10 * (i + 1);
			cs[i].lost = i;
			cs[i].cost_min_ns = 500 + i;
			cs[i].cost_max_ns = 3000 * (i + 1);
			cs[i].cost_sum_ns = cs[i].samples * 1000;
		}
		st->source = NMIPROF_SRC_IPI;
		st->running = dev.started > dev.stopped;
		st->nested_nmi_safe = 1;
		return 0;
	}
	}
	errno = ENOTTY;
	return -1;
}

static void *fake_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	uint64_t o = off;
	uint32_t cpu = o >> 32, kind = (o >> 31) & 1;

	CHECK(fd == FD && (flags & MAP_SHARED) && !(o & ((1ULL << 31) - 1)));
	if (cpu >= NCPU) {
		errno = EINVAL;
		return MAP_FAILED;
	}
	if (kind == NMIPROF_MAP_CTRL) {
		CHECK(len == PAGE && prot == (PROT_READ | PROT_WRITE));
		dev.mapped[cpu][0]++;
		return dev.ctrl[cpu];
	}
	CHECK(len == DATA && prot == PROT_READ);
	dev.mapped[cpu][1]++;
	return dev.data[cpu];
}

static int fake_munmap(void *addr, size_t len)
{
	return 0;
}

static int fake_poll(struct pollfd *p, unsigned long n, int timeout)
{
	int ready = 0;

	for (int i = 0; i < NCPU; i++)
		ready |= dev.ctrl[i]->head != dev.ctrl[i]->tail;
	p[0].revents = ready ? POLLIN : 0;
	return ready;
}

static int fake_close(int fd)
{
	return 0;
}

static int fake_set_param(const char *name, const char *val)
{
	snprintf(dev.param, sizeof(dev.param), "%s=%s", name, val);
	errno = dev.param_errno;
	return dev.param_errno ? -1 : 0;
}

static const struct np_kmod_sys fake = {
	fake_open, fake_ioctl, fake_mmap, fake_munmap, fake_poll, fake_close,
	fake_set_param,
};

/* The module's side: append one sample to cpu's ring. */
static void produce_sample(int cpu, uint32_t pid, uint64_t ip)
{
	struct nmiprof_ring_ctrl *c = dev.ctrl[cpu];
	uint8_t *rec = dev.data[cpu] + (c->head & (DATA - 1));
	struct nmiprof_sample *s = (void *)rec;
	uint64_t frames[3] = { ip, ip + 0x100, 0x401000 };
	uint32_t fixed = sizeof(*s);

	memset(s, 0, sizeof(*s));
	s->hdr.common_type = NMIPROF_REC_SAMPLE;
	s->hdr.common_flags = NMIPROF_RF_IN_NMI;
	s->hdr.common_size = fixed + sizeof(frames);
	s->cpu = cpu;
	s->pid = s->tid = pid;
	s->ip = ip;
	s->nr_kframes = 2;
	s->nr_uframes = 1;
	strcpy(s->comm, "worker");
	s->kstack = NMIPROF_LOC(fixed, 16);
	s->ustack = NMIPROF_LOC(fixed + 16, 8);
	memcpy(rec + fixed, frames, sizeof(frames));
	__atomic_store_n(&c->head, c->head + s->hdr.common_size, __ATOMIC_RELEASE);
}

/* produce_sample() in a later minor's layout */
static void produce_moved_sample(int cpu, uint32_t pid, uint64_t ip)
{
	struct nmiprof_ring_ctrl *c = dev.ctrl[cpu];
	uint8_t *rec = dev.data[cpu] + (c->head & (DATA - 1));
	struct moved_sample *s = (void *)rec;
	uint64_t frames[3] = { ip, ip + 0x100, 0x401000 };
	uint32_t fixed = sizeof(*s);

	memset(s, 0, sizeof(*s));
	s->hdr.common_type = NMIPROF_REC_SAMPLE;
	s->hdr.common_flags = NMIPROF_RF_IN_NMI;
	s->hdr.common_size = fixed + sizeof(frames);
	s->cgroup_id = 0xdeadbeef;
	s->cpu = cpu;
	s->pid = s->tid = pid;
	s->ip = ip;
	s->nr_kframes = 2;
	s->nr_uframes = 1;
	strcpy(s->comm, "worker");
	s->kstack = NMIPROF_LOC(fixed, 16);
	s->ustack = NMIPROF_LOC(fixed + 16, 8);
	memcpy(rec + fixed, frames, sizeof(frames));
	__atomic_store_n(&c->head, c->head + s->hdr.common_size, __ATOMIC_RELEASE);
}

static void produce_lost(int cpu, uint64_t n)
{
	struct nmiprof_ring_ctrl *c = dev.ctrl[cpu];
	struct nmiprof_lost *l = (void *)(dev.data[cpu] + (c->head & (DATA - 1)));

	memset(l, 0, sizeof(*l));
	l->hdr.common_type = NMIPROF_REC_LOST;
	l->hdr.common_size = sizeof(*l);
	l->cpu = cpu;
	l->lost = n;
	__atomic_store_n(&c->head, c->head + sizeof(*l), __ATOMIC_RELEASE);
}

struct seen {
	int samples, lost_events, other_pid, child;
	int lockups;
	uint64_t qids[8], real_ns[8];
	uint32_t lockup_cpus[8];
	uint32_t target, child_pid;
	uint64_t lost;
	uint32_t cpus;
};

static int on_event(const struct np_event *ev, void *arg)
{
	struct seen *s = arg;

	if (ev->type == NP_EV_SAMPLE) {
		s->samples++;
		CHECK(ev->sample.cpu < NCPU);
		if (ev->sample.cpu < NCPU)
			s->cpus |= 1u << ev->sample.cpu;
		if (ev->sample.pid == s->child_pid)
			s->child++;
		else if (ev->sample.pid != s->target)
			s->other_pid++;
		CHECK(ev->sample.nr_kframes == 2 && ev->sample.nr_uframes == 1);
		CHECK(ev->sample.kframes[0] == ev->sample.ip);
		CHECK(ev->sample.uframes[0] == 0x401000);
		CHECK(!strcmp(ev->sample.comm, "worker"));
	} else if (ev->type == NP_EV_LOST) {
		s->lost_events++;
		s->lost += ev->lost.lost;
	} else if (ev->type == NP_EV_LOCKUP && s->lockups < 8) {
		CHECK(ev->lockup.nr_kframes == 2 &&
		      ev->lockup.kframes[1] == 0xffffffff81000002ULL);
		s->qids[s->lockups] = ev->lockup.qid;
		s->real_ns[s->lockups] = ev->lockup.real_ns;
		s->lockup_cpus[s->lockups++] = ev->lockup.cpu;
	}
	return 0;
}

/*
 * A child that idles until killed.  PR_SET_PDEATHSIG kills it with its
 * parent too: a parent that aborts must not leave it holding ctest's
 * output pipe, or ctest waits for the test's timeout.
 */
static pid_t spawn_idle_child(void)
{
	pid_t parent = getpid();
	pid_t child = fork();

	if (child)
		return child;
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) || getppid() != parent)
		_exit(1);	/* the parent is already gone */
	for (;;)
		pause();
}

/* The idle child dies with a parent that is killed: its pipe end closes. */
static void test_child_dies_with_parent(void)
{
	struct pollfd p;
	pid_t mid, idle = 0;
	int fds[2];
	char c;

	CHECK(pipe(fds) == 0);
	mid = fork();
	if (!mid) {
		close(fds[0]);
		idle = spawn_idle_child();	/* holds fds[1] as well */
		if (write(fds[1], &idle, sizeof(idle)) != sizeof(idle))
			_exit(1);
		raise(SIGKILL);
	}
	close(fds[1]);
	CHECK(read(fds[0], &idle, sizeof(idle)) == sizeof(idle));
	waitpid(mid, NULL, 0);
	p.fd = fds[0];
	p.events = POLLIN;
	/* EOF once the last holder of the write end, the idle child, is gone */
	CHECK(poll(&p, 1, 5000) == 1 && read(fds[0], &c, 1) == 0);
	if (idle > 0)
		kill(idle, SIGKILL);	/* when the check failed */
	close(fds[0]);
}

static void reset_dev(int abi)
{
	for (int i = 0; i < NCPU; i++) {
		memset(dev.ctrl[i], 0, PAGE);
		dev.ctrl[i]->magic = NMIPROF_MAGIC;
		dev.ctrl[i]->abi_version = NMIPROF_ABI_VERSION;
		dev.ctrl[i]->cpu = i;
		dev.ctrl[i]->ctrl_size = PAGE;
		dev.ctrl[i]->data_size = DATA;
	}
	dev.abi = abi;
	dev.minor = NMIPROF_ABI_MINOR;
	dev.moved = 0;
	dev.lockups = 0;
	memset(dev.lq, 0, sizeof(dev.lq));
	dev.caller_minor = 0;
	dev.hello_ok = dev.started = dev.stopped = dev.format_calls = dev.enospc_sent = 0;
	memset(dev.mapped, 0, sizeof(dev.mapped));
	dev.param[0] = '\0';
	dev.param_errno = 0;
	dev.answer = ~0ULL;
	dev.answer_calls = dev.parked = dev.parked_other = 0;
}

/* perf events this process has open */
static int perf_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *de;
	int n = 0;

	while (d && (de = readdir(d)))
		n += is_perf_fd(de->d_name);
	if (d)
		closedir(d);
	return n;
}

static void kmod_opts(struct np_backend_opts *o)
{
	np_backend_opts_init(o);
	o->kind = NP_BACKEND_KMOD;
}

static void test_no_module(void)
{
	struct np_backend_opts o;
	char err[256];

	kmod_opts(&o);
	reset_dev(0);
	CHECK(np_backend_kmod_open_sys(&o, &fake, err, sizeof(err)) == NULL);
	printf("no device -> \"%s\"\n", err);
	CHECK(strstr(err, "load nmiprof.ko") != NULL);
}

static void test_abi_mismatch(void)
{
	struct np_backend_opts o;
	char err[256];

	kmod_opts(&o);
	reset_dev(NMIPROF_ABI_VERSION + 1);
	CHECK(np_backend_kmod_open_sys(&o, &fake, err, sizeof(err)) == NULL);
	printf("ABI mismatch -> \"%s\"\n", err);
	CHECK(strstr(err, "ABI v2, this program v1") != NULL);
	CHECK(dev.format_calls == 0);
}

/*
 * A module of the same major and a later minor, whose samples moved
 * their fields: accepted, and decoded by the format text.
 */
static void test_later_minor(void)
{
	struct np_backend_opts o;
	struct np_backend *b;
	struct seen seen = { 0 };
	char err[256];

	kmod_opts(&o);
	o.cpus = "0-1";
	reset_dev(NMIPROF_ABI_VERSION);
	dev.minor = NMIPROF_ABI_MINOR + 1;
	dev.moved = 1;
	b = np_backend_kmod_open_sys(&o, &fake, err, sizeof(err));
	CHECK(b != NULL, "open: %s", err);
	if (!b)
		return;
	CHECK(dev.caller_minor == NMIPROF_ABI_MINOR);
	CHECK(np_backend_start(b) == 0);
	seen.target = 4242;
	produce_moved_sample(0, 4242, 0xffffffff81001000ULL);
	produce_moved_sample(1, 4242, 0xffffffff81002000ULL);
	CHECK(np_backend_drain(b, on_event, &seen) >= 2);
	CHECK(seen.samples == 2 && seen.other_pid == 0 && seen.cpus == 3);
	CHECK(np_backend_stop(b) == 0);
	np_backend_close(b);
}

/*
 * The real thing, following this process (poll checks that it lives)
 * and so its child, on CPUs 0-1.
 */
/*
 * The module's lockup queue (ABI 1.3): every queued lockup, of a CPU we
 * do not sample too, comes with its id on every drain until acked.
 */
static void test_lockup_queue(void)
{
	struct np_backend_opts o;
	struct np_backend_stats st;
	struct np_backend *b;
	struct seen seen = { 0 };
	char err[256];

	kmod_opts(&o);
	o.cpus = "0";
	reset_dev(NMIPROF_ABI_VERSION);
	dev.lockups = 1;
	for (int i = 0; i < 2; i++) {
		struct nmiprof_lockup *r = &dev.lq[i].rec;

		r->hdr.common_type = NMIPROF_REC_LOCKUP;
		r->hdr.common_size = sizeof(*r) + sizeof(dev.lq[i].frames);
		r->cpu = 1 - i;		/* CPU 1 is not sampled */
		r->nr_kframes = 2;
		r->lockup_flags = NMIPROF_LF_HARD;
		r->real_ns = 1000 + i;
		r->kstack = NMIPROF_LOC(sizeof(*r), sizeof(dev.lq[i].frames));
		dev.lq[i].frames[0] = 0xffffffff81000001ULL;
		dev.lq[i].frames[1] = 0xffffffff81000002ULL;
	}
	dev.lq[0].id = 9;
	dev.lq[1].id = 5;
	b = np_backend_kmod_open_sys(&o, &fake, err, sizeof(err));
	CHECK(b != NULL, "open: %s", err);
	if (!b)
		return;
	CHECK(np_backend_start(b) == 0);
	CHECK(np_backend_drain(b, on_event, &seen) == 2);
	CHECK(seen.lockups == 2 && seen.qids[0] == 5 && seen.qids[1] == 9);
	CHECK(seen.lockup_cpus[0] == 0 && seen.lockup_cpus[1] == 1);
	CHECK(seen.real_ns[0] == 1001 && seen.real_ns[1] == 1000);
	/* not acknowledged: handed out again */
	CHECK(np_backend_drain(b, on_event, &seen) == 2 && seen.lockups == 4);
	CHECK(np_backend_ack_lockup(b, 5) == 0);
	CHECK(np_backend_ack_lockup(b, 5) == -ENOENT);
	CHECK(np_backend_drain(b, on_event, &seen) == 1 && seen.lockups == 5 &&
	      seen.qids[4] == 9);
	CHECK(np_backend_stats(b, &st) == 0 && st.lockups_dropped == 3);
	np_backend_close(b);
}

static void test_session(void)
{
	struct np_backend_opts o;
	struct np_backend_stats st;
	struct np_backend *b;
	struct seen seen = { 0 };
	uint32_t target;
	pid_t child;
	char err[256];

	kmod_opts(&o);
	reset_dev(NMIPROF_ABI_VERSION);
	target = getpid();
	seen.target = target;
	child = spawn_idle_child();
	seen.child_pid = child;
	o.pid = target;
	o.cpus = "0-1";
	o.freq_hz = 997;
	o.ustack_depth = 32;
	b = np_backend_kmod_open_sys(&o, &fake, err, sizeof(err));
	CHECK(b != NULL, "open: %s", err);
	if (!b) {
		kill(child, SIGKILL);
		waitpid(child, NULL, 0);
		return;
	}
	CHECK(!strcmp(np_backend_name(b), "kmod"));
	CHECK(dev.enospc_sent == 1);
	CHECK(dev.cfg.freq_hz == 997 && dev.cfg.source == NMIPROF_SRC_AUTO);
	CHECK(dev.cfg.kstack_depth == NMIPROF_DEFAULT_FRAMES && dev.cfg.ustack_depth == 32);
	CHECK(dev.cfg.flags == NMIPROF_CF_USER_STACKS);
	CHECK(dev.cfg.cpumask[0] == 3 && dev.cfg.cpumask[1] == 0);
	/* the module of this minor samples the process's tree only */
	CHECK(dev.cfg.follow_pid == target);
	CHECK(dev.mapped[0][0] == 1 && dev.mapped[0][1] == 1);
	CHECK(dev.mapped[1][0] == 1 && dev.mapped[1][1] == 1);
	CHECK(np_backend_start(b) == 0 && dev.started == 1);
	CHECK(dev.mapped[0][0] == 1);	/* not mapped twice */
	CHECK(np_backend_poll(b, 0) == 0);
	produce_sample(0, target, 0xffffffff81001000ULL);
	produce_sample(1, target, 0xffffffff81002000ULL);
	produce_sample(1, 1, 0xffffffff81003000ULL);	/* init: filtered */
	produce_sample(0, child, 0xffffffff81005000ULL);	/* a descendant */
	produce_lost(1, 6);
	produce_sample(0, target, 0xffffffff81004000ULL);
	CHECK(np_backend_poll(b, 0) > 0);
	CHECK(np_backend_drain(b, on_event, &seen) >= 5);
	CHECK(seen.samples == 4 && seen.other_pid == 0 && seen.child == 1 &&
	      seen.cpus == 3);
	CHECK(seen.lost_events == 1 && seen.lost == 6);
	for (int i = 0; i < NCPU; i++)
		CHECK(dev.ctrl[i]->tail == dev.ctrl[i]->head);
	CHECK(np_backend_poll(b, 0) == 0);
	CHECK(np_backend_stop(b) == 0 && dev.stopped == 1);
	CHECK(np_backend_stats(b, &st) == 0);
	CHECK(!strcmp(st.backend, "kmod") && !strcmp(st.source, "ipi"));
	CHECK(st.nr_cpus == 2 && st.samples == 30 && st.lost == 1);
	CHECK(st.cost_min_ns == 500 && st.cost_max_ns == 6000 && st.cost_avg_ns == 1000);
	CHECK(st.nested_nmi_safe == 1);
	np_backend_close(b);

	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
}

/* following a process that is gone: poll says so, once */
static void test_target_gone(void)
{
	struct np_backend_opts o;
	struct np_backend *b;
	pid_t child = spawn_idle_child();
	char err[256];

	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
	kmod_opts(&o);
	reset_dev(NMIPROF_ABI_VERSION);
	o.pid = child;
	/* a module before ABI 1.5 is not told to follow it */
	dev.minor = 4;
	b = np_backend_kmod_open_sys(&o, &fake, err, sizeof(err));
	CHECK(b != NULL);
	CHECK(dev.cfg.follow_pid == 0);
	if (b) {
		CHECK(np_backend_start(b) == 0);
		CHECK(np_backend_poll(b, 0) == -ESRCH);
		CHECK(np_backend_poll(b, 0) == 0);
		np_backend_close(b);
	}
}

/*
 * unwind_budget (nmiprofd's key): written to the module's parameter in
 * KiB, rounded up, when the backend opens with tables; a write that
 * fails fails the open, naming the parameter; unset, nothing is written.
 */
static void test_unwind_budget(void)
{
	struct np_backend_opts o;
	struct np_backend *b;
	char err[256];

	kmod_opts(&o);
	reset_dev(NMIPROF_ABI_VERSION);
	b = np_backend_kmod_open_sys(&o, &fake, err, sizeof(err));
	CHECK(b != NULL, "open: %s", err);
	CHECK(dev.param[0] == '\0', "wrote %s unasked", dev.param);
	np_backend_close(b);

	o.unwind_budget = (3ULL << 20) + 1;
	reset_dev(NMIPROF_ABI_VERSION);
	b = np_backend_kmod_open_sys(&o, &fake, err, sizeof(err));
	CHECK(b != NULL, "open: %s", err);
	CHECK(!strcmp(dev.param, "unwind_budget_kb=3073"), "wrote %s", dev.param);
	np_backend_close(b);

	reset_dev(NMIPROF_ABI_VERSION);
	dev.param_errno = EACCES;
	err[0] = '\0';
	CHECK(np_backend_kmod_open_sys(&o, &fake, err, sizeof(err)) == NULL);
	printf("budget refused -> \"%s\"\n", err);
	CHECK(strstr(err, "unwind_budget_kb") && strstr(err, "root only"));

	/* frame pointers only: no tables, no budget to set */
	o.user_stacks = 0;
	reset_dev(NMIPROF_ABI_VERSION);
	dev.param_errno = EACCES;
	b = np_backend_kmod_open_sys(&o, &fake, err, sizeof(err));
	CHECK(b != NULL, "open: %s", err);
	CHECK(dev.param[0] == '\0', "wrote %s without tables", dev.param);
	np_backend_close(b);
}

/*
 * A CPU that doesn't answer an IPI (ABI 1.7): system wide, the side-band
 * is opened on the CPUs that answer, on the others once they do (asked
 * again at most once a second), and handed to the module at close.  A
 * module before 1.7 is asked nothing and given nothing.
 */
static void test_stuck_cpu(void)
{
	struct np_backend_opts o;
	struct np_backend *b;
	struct seen seen = { 0 };
	char err[256];

	kmod_opts(&o);
	o.cpus = "0-1";
	reset_dev(NMIPROF_ABI_VERSION);
	dev.minor = 6;
	b = np_backend_kmod_open_sys(&o, &fake, err, sizeof(err));
	CHECK(b != NULL, "open: %s", err);
	if (!b)
		return;
	if (!perf_fds()) {
		/* the side-band is optional: perf_event_open refused here */
		printf("SKIP: no perf side-band on this machine\n");
		np_backend_close(b);
		return;
	}
	CHECK(perf_fds() == 2 && dev.answer_calls == 0);
	np_backend_close(b);
	CHECK(perf_fds() == 0 && dev.parked == 0);

	reset_dev(NMIPROF_ABI_VERSION);
	dev.answer = 1;		/* CPU 1 stuck */
	b = np_backend_kmod_open_sys(&o, &fake, err, sizeof(err));
	CHECK(b != NULL, "open: %s", err);
	if (!b)
		return;
	CHECK(dev.answer_calls == 1 && perf_fds() == 1);
	CHECK(np_backend_start(b) == 0);
	CHECK(np_backend_drain(b, on_event, &seen) >= 0);
	CHECK(dev.answer_calls == 1, "asked again within a second");
	usleep(1100 * 1000);
	CHECK(np_backend_drain(b, on_event, &seen) >= 0);
	CHECK(dev.answer_calls == 2 && perf_fds() == 1);	/* still stuck */
	dev.answer = 3;
	usleep(1100 * 1000);
	CHECK(np_backend_drain(b, on_event, &seen) >= 0);
	CHECK(dev.answer_calls == 3 && perf_fds() == 2);
	usleep(1100 * 1000);
	CHECK(np_backend_drain(b, on_event, &seen) >= 0);
	CHECK(dev.answer_calls == 3, "asked with none missing");
	CHECK(np_backend_stop(b) == 0);
	np_backend_close(b);
	CHECK(dev.parked == 2 && dev.parked_other == 0 && perf_fds() == 0);
}

static const struct np_test_case cases[] = {
	NP_CASE(test_child_dies_with_parent),
	NP_CASE(test_no_module),
	NP_CASE(test_abi_mismatch),
	NP_CASE(test_later_minor),
	NP_CASE(test_session),
	NP_CASE(test_lockup_queue),
	NP_CASE(test_target_gone),
	NP_CASE(test_unwind_budget),
	NP_CASE(test_stuck_cpu),
	{ 0 }
};

int main(int argc, char **argv)
{
	int ret;

	for (int i = 0; i < NCPU; i++) {
		dev.ctrl[i] = aligned_alloc(PAGE, PAGE);
		dev.data[i] = aligned_alloc(PAGE, DATA);
	}
	ret = np_test_main(argc, argv, cases);
	for (int i = 0; i < NCPU; i++) {
		free(dev.ctrl[i]);
		free(dev.data[i]);
	}
	return ret;
}
