// SPDX-License-Identifier: GPL-2.0
/*
 * Unwind tables for nmiprof.ko: for every process the module samples,
 * the tables of the objects it maps executable (lib/unwind's compile and
 * cache, through the same np_unwinder as the libperf backend) are loaded
 * once per object (NMIPROF_IOC_UW_LOAD) and the process's mapping set
 * (NMIPROF_IOC_UW_SET_MAPS) is sent, whole, whenever it changes.
 *
 * Which mappings a process has comes from the unwinder's maps: read from
 * /proc/PID/maps the first time a process is met (it existed before we
 * started, or we have not seen its MMAP2 yet), then kept by the MMAP2
 * side-band, the stream that also names the objects for symbolizing.
 * /proc alone would have to be polled to see new mappings; MMAP2 alone
 * knows nothing of processes started before us.  A process's set is
 * sent when its first sample arrives (that sample still used frame
 * pointers), again after an MMAP2 of code or an exec, and dropped when
 * its last thread exits: a leader's EXIT leaves it to threads still
 * running, as the module does (it takes the mm from any live thread).
 * Compiles the unwinder deferred are asked for again a second on.
 *
 * The module keeps tables after their reader closed (ABI 1.8): each is
 * probed for by its cache file's header first (NMIPROF_UW_LOAD_PROBE),
 * and its rows are read and loaded only when the module has no match,
 * so that a short record does not spend most of its time on tables.
 *
 * The module evicts tables past its budget, least recently used first,
 * and a set naming one falls back to frame pointers there.  When the
 * module's eviction count has grown since a process's set went, a sample
 * of it cut at "no table" sends the set again, its tables loaded anew
 * (which of ours went is not said: every id we hold is asked for again).
 *
 * A set a sample asks for is sent there and then, not at the drain's
 * flush: the consumer sees every event of the drain first, and its work
 * on a new process (loading the symbols of its objects) took a second
 * under QEMU, as long as the process ran.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "np_clock.h"
#include "np_fileio.h"
#include "np_grow.h"
#include "np_idx.h"
#include "np_kmod_unwind.h"
#include "np_unwind_impl.h"

/* Past these, processes and objects are walked by frame pointers. */
#define PROC_MAX	4096		/* processes tracked */
#define OBJ_MAX		1024		/* objects loaded */
#define RETRY_NS	1000000000ULL

struct kproc {
	uint32_t pid;
	uint8_t dirty;			/* set to be (re)sent */
	uint8_t leader_gone;		/* its leader exited, threads live on */
	uint64_t evicted_at;		/* the module's evictions at its set */
	uint64_t retry_ns;		/* deferred compiles: resend then */
};

struct kobj {
	struct np_uw_obj *obj;		/* the unwinder's, lives as long */
	uint32_t id;
};

struct np_kmod_unwind {
	int fd;
	const struct np_kmod_sys *sys;
	struct np_unwinder *uw;
	struct kproc *procs;		/* nr_procs, by proc_idx's ids */
	struct kobj *objs;		/* nr_objs, by obj_idx's ids */
	uint32_t nr_procs, cap_procs, nr_objs, cap_objs;
	struct np_idx proc_idx, obj_idx;
	unsigned int nr_dirty;
	int probe;			/* the module matches headers */
	uint64_t sets_sent, load_errors, set_errors;
	uint64_t evicted;		/* the module's evictions, last seen */
	uint64_t objs_at;		/* evictions when objs were last trusted */
	struct np_uw_span spans[NMIPROF_UW_MAX_MAPS];
	struct nmiprof_uw_map maps[NMIPROF_UW_MAX_MAPS];
};

struct np_kmod_unwind *np_kmod_unwind_new(int fd, const struct np_kmod_sys *sys,
					  unsigned int abi_minor,
					  const char *cache_dir, int paced,
					  char *err, size_t errlen)
{
	struct np_unwinder_opts uo = {
		.cache_dir = cache_dir, .for_kernel = 1, .paced = paced,
	};
	struct np_kmod_unwind *k = calloc(1, sizeof(*k));

	if (!k) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	if (!uo.cache_dir)
		uo.cache_dir = getenv("NMIPROF_UNWIND_CACHE");
	k->uw = np_unwinder_new(&uo, err, errlen);
	if (!k->uw) {
		free(k);
		return NULL;
	}
	k->fd = fd;
	k->sys = sys;
	k->probe = abi_minor >= 8;
	return k;
}

static uint32_t pid_hash(uint32_t pid)
{
	return (uint32_t)np_hash_u64(pid);
}

/* pid's entry, NULL if it has none. */
static inline struct kproc *proc_find(struct np_kmod_unwind *k, uint32_t pid)
{
	uint32_t h = pid_hash(pid), pos = np_idx_first(&k->proc_idx, h), id;

	while ((id = np_idx_next(&k->proc_idx, h, &pos)) != NP_IDX_NONE)
		if (k->procs[id].pid == pid)
			return &k->procs[id];
	return NULL;
}

/* A new entry for pid, to be sent; NULL when out of room. */
static struct kproc *proc_add(struct np_kmod_unwind *k, uint32_t pid)
{
	struct kproc *p;

	if (k->nr_procs == PROC_MAX ||
	    np_grow((void **)&k->procs, &k->cap_procs, k->nr_procs + 1,
		    sizeof(*k->procs)) ||
	    np_idx_insert(&k->proc_idx, pid_hash(pid), k->nr_procs))
		return NULL;
	p = &k->procs[k->nr_procs++];
	*p = (struct kproc){ .pid = pid, .dirty = 1 };
	k->nr_dirty++;
	return p;
}

static void mark(struct np_kmod_unwind *k, struct kproc *p)
{
	if (p && !p->dirty) {
		p->dirty = 1;
		k->nr_dirty++;
	}
}

/* Remove p; the last entry takes its place. */
static void forget(struct np_kmod_unwind *k, struct kproc *p)
{
	uint32_t id = (uint32_t)(p - k->procs), last = k->nr_procs - 1;

	if (p->dirty)
		k->nr_dirty--;
	np_idx_remove(&k->proc_idx, pid_hash(p->pid), id);
	if (id != last) {
		uint32_t h = pid_hash(k->procs[last].pid);

		/* Cannot fail: the index held one more id a moment ago. */
		np_idx_remove(&k->proc_idx, h, last);
		np_idx_insert(&k->proc_idx, h, id);
		*p = k->procs[last];
	}
	k->nr_procs--;
}

static void drop_set(struct np_kmod_unwind *k, uint32_t pid)
{
	struct nmiprof_uw_maps req = { .pid = pid };

	k->sys->ioctl(k->fd, NMIPROF_IOC_UW_SET_MAPS, &req);
}

static void send_set(struct np_kmod_unwind *k, struct kproc *p, uint64_t now);

/* p's tables may have been evicted: load them again, send its set again. */
static void reload(struct np_kmod_unwind *k, struct kproc *p)
{
	if (k->objs_at < k->evicted) {
		np_idx_clear(&k->obj_idx);
		k->nr_objs = 0;
		k->objs_at = k->evicted;
	}
	mark(k, p);
}

void np_kmod_unwind_event(struct np_kmod_unwind *k, const struct np_event *ev)
{
	struct kproc *p;

	switch (ev->type) {
	case NP_EV_SAMPLE:
		if (!ev->sample.nr_uframes || !ev->sample.pid)
			return;
		p = proc_find(k, ev->sample.pid);
		if (!p)
			p = proc_add(k, ev->sample.pid);
		if (p && !p->dirty && p->evicted_at < k->evicted &&
		    ev->sample.uframes[ev->sample.nr_uframes - 1] ==
		    NMIPROF_UW_MARK(NMIPROF_UW_STOP_NO_TABLE))
			reload(k, p);
		if (p && p->dirty) {
			p->dirty = 0;
			k->nr_dirty--;
			send_set(k, p, np_mono_ns());
		}
		return;
	case NP_EV_MMAP:
		np_unwinder_event(k->uw, ev);
		if (ev->mmap.prot & 4 /* PROT_EXEC */)
			mark(k, proc_find(k, ev->mmap.pid));
		return;
	case NP_EV_COMM:
		np_unwinder_event(k->uw, ev);
		if (ev->comm.exec && (p = proc_find(k, ev->comm.pid))) {
			p->leader_gone = 0;	/* the exec'ing thread leads now */
			mark(k, p);
		}
		return;
	case NP_EV_EXIT:
		np_unwinder_event(k->uw, ev);
		p = proc_find(k, ev->task.pid);
		if (!p || (ev->task.pid != ev->task.tid && !p->leader_gone))
			return;
		/* the leader, or a thread after it: the last one drops the set */
		if (np_proc_threads_live("/proc", p->pid)) {
			p->leader_gone = 1;
			return;
		}
		drop_set(k, p->pid);
		forget(k, p);
		return;
	case NP_EV_FORK:
		np_unwinder_event(k->uw, ev);
		return;
	default:
		return;
	}
}

/* The id of a table the module holds already with o's header; 0: none. */
static uint32_t probe(struct np_kmod_unwind *k, const struct np_uw_obj *o)
{
	struct nmiprof_uw_load ld = {
		.table = (uintptr_t)o->t, .len = o->bytes,
		.flags = NMIPROF_UW_LOAD_PROBE,
	};

	if (!k->probe)
		return 0;
	if (k->sys->ioctl(k->fd, NMIPROF_IOC_UW_LOAD, &ld) == 0)
		return ld.id;
	if (errno != ENOENT)
		k->probe = 0;	/* refused (EINVAL): loaded as before */
	return 0;
}

/* The module's id of @o's table, loading it the first time; 0: none. */
static uint32_t table_id(struct np_kmod_unwind *k, struct np_uw_obj *o)
{
	uint32_t h = (uint32_t)np_hash_u64((uintptr_t)o);
	uint32_t pos = np_idx_first(&k->obj_idx, h), id;
	struct nmiprof_uw_load ld = { 0 };

	while ((id = np_idx_next(&k->obj_idx, h, &pos)) != NP_IDX_NONE)
		if (k->objs[id].obj == o)
			return k->objs[id].id;
	if (k->nr_objs == OBJ_MAX ||
	    np_grow((void **)&k->objs, &k->cap_objs, k->nr_objs + 1,
		    sizeof(*k->objs)) ||
	    np_idx_insert(&k->obj_idx, h, k->nr_objs))
		return 0;
	ld.id = probe(k, o);
	if (!ld.id && np_uw_obj_rows(o) == 0) {
		ld.table = (uintptr_t)o->t;
		ld.len = o->bytes;
		if (k->sys->ioctl(k->fd, NMIPROF_IOC_UW_LOAD, &ld) < 0)
			ld.id = 0;
	}
	if (!ld.id)
		k->load_errors++;	/* not asked again: walked by frame pointers */
	k->objs[k->nr_objs++] = (struct kobj){ .obj = o, .id = ld.id };
	return ld.id;
}

static void send_set(struct np_kmod_unwind *k, struct kproc *p, uint64_t now)
{
	struct nmiprof_uw_maps req = { .pid = p->pid, .maps = (uintptr_t)k->maps };
	int deferred, n;

	n = np_unwinder_spans(k->uw, p->pid, k->spans, NMIPROF_UW_MAX_MAPS,
			      &deferred);
	p->retry_ns = deferred ? now + RETRY_NS : 0;
	if (n <= 0)
		return;
	req.nr = 0;
	p->evicted_at = k->evicted;
	for (int i = 0; i < n; i++) {
		/*
		 * /proc/PID/maps shows the kernel's [vsyscall] page, above
		 * every process's address space: the module refuses a set
		 * that holds it (EINVAL), so no process met through /proc
		 * got its set.  (Spans are sorted: it is the last.)
		 */
		if (k->spans[i].start >= 1ULL << 63)
			break;
		k->maps[req.nr++] = (struct nmiprof_uw_map){
			.start = k->spans[i].start,
			.end = k->spans[i].end,
			.bias = k->spans[i].bias,
			.table = k->spans[i].obj ? table_id(k, k->spans[i].obj) : 0,
		};
	}
	if (!req.nr)
		return;
	if (k->sys->ioctl(k->fd, NMIPROF_IOC_UW_SET_MAPS, &req) < 0) {
		k->set_errors++;
		/* gone already (ESRCH): its EXIT is on its way */
		return;
	}
	k->sets_sent++;
}

void np_kmod_unwind_flush(struct np_kmod_unwind *k)
{
	uint64_t now = np_mono_ns();
	struct nmiprof_uw_stats us;

	memset(&us, 0, sizeof(us));
	if (!k->sys->ioctl(k->fd, NMIPROF_IOC_UW_STATS, &us))
		k->evicted = us.evicted;

	for (uint32_t i = 0; i < k->nr_procs; i++) {
		struct kproc *p = &k->procs[i];

		if (p->retry_ns && now >= p->retry_ns)
			mark(k, p);
		if (!p->dirty)
			continue;
		p->dirty = 0;
		k->nr_dirty--;
		send_set(k, p, now);
	}
}

void np_kmod_unwind_stats(struct np_kmod_unwind *k, struct np_backend_stats *st)
{
	struct nmiprof_uw_stats us;

	memset(&us, 0, sizeof(us));
	if (k->sys->ioctl(k->fd, NMIPROF_IOC_UW_STATS, &us) < 0)
		return;
	st->unwind_walks = us.walks;
	for (int i = 0; i < NMIPROF_UW_STOP_NR; i++)
		st->unwind_stops[i] = us.stops[i];
	st->unwind_tables = us.tables;
	st->unwind_table_bytes = us.table_bytes;
}

void np_kmod_unwind_free(struct np_kmod_unwind *k)
{
	if (!k)
		return;
	np_unwinder_free(k->uw);
	np_idx_free(&k->proc_idx);
	np_idx_free(&k->obj_idx);
	free(k->procs);
	free(k->objs);
	free(k);
}
