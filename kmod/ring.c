// SPDX-License-Identifier: GPL-2.0
/*
 * Per-CPU record rings, one vmalloc_user() buffer per CPU: a control page
 * (struct nmiprof_ring_ctrl) followed by a power-of-two data area that
 * userspace maps read-only.
 *
 * Writers run on the ring's own CPU, in NMI context (samples, lockup
 * reports) or in the watchdog's hrtimer (recovery records), which an NMI
 * may interrupt; lockup and recovery records only for a session owner
 * older than ABI 1.3 (lockup_report.c), and like samples only between
 * START's np_rings_reset() and STOP's np_rings_flush_lost().  Reservation therefore follows
 * kernel/events/ring_buffer.c: a local cmpxchg on the private head, a nest
 * counter, and the shared ctrl->head published only by the outermost
 * writer, once every nested record is complete.
 *
 * A full ring never overwrites unread data: the record is dropped and
 * counted, and a NMIPROF_REC_LOST record telling how many (and from which
 * seq) precedes the next record that fits and that the outermost writer
 * makes (see __np_ring_reserve()).  So for every CPU
 *   produced == records consumed, LOST ones included, and seq numbers
 *   seen + LOST.lost cover every seq exactly once.
 * A record never wraps: the gap up to the end of the data area is filled
 * with a NMIPROF_REC_PAD record instead.  A writer may reserve more than
 * it writes and give the rest back (np_ring_trim()); what a nested
 * writer keeps it from giving back is a NMIPROF_REC_PAD record too.
 *
 * Ordinary records leave NP_LOST_HEADROOM bytes free, so that when the
 * session stops a final LOST record (plus a pad before it) always fits
 * and the consumer can account for every seq even if it never caught up.
 *
 * The rings are made when first needed, by the first session or mapping
 * (np_rings_create()), not at load: a module loaded for its watchdog
 * alone keeps its lockups in lockup_queue.c and needs none.  Once made
 * they stay until unload and are never resized, so a writer or a
 * mapping never sees them go.
 */
#include <linux/mm.h>
#include <linux/mutex.h>
#include <linux/slab.h>
#include <linux/vmalloc.h>
#include <linux/wait.h>
#include <linux/cpumask.h>

#include "compat.h"
#include "ring.h"

#define NP_LOST_HEADROOM	(2 * sizeof(struct nmiprof_lost))

DECLARE_WAIT_QUEUE_HEAD(np_ring_wq);

/*
 * [nr_cpu_ids], possible CPUs only; NULL until np_rings_create().  Read
 * with np_rings_acquire() by writers in NMI and hrtimer context, poll()
 * and the stats, which take no lock.
 */
static struct np_ring **np_rings;
static unsigned long np_data_size;
/*
 * Serializes np_rings_create(), which START calls under np_lock and
 * mmap() under mmap_lock: np_lock in mmap() would forbid any fault on
 * user memory under np_lock.
 */
static DEFINE_MUTEX(np_rings_lock);

static struct np_ring **np_rings_acquire(void)
{
	/* Pairs with smp_store_release() in np_rings_create(). */
	return smp_load_acquire(&np_rings);
}

struct np_ring *np_ring_get(int cpu)
{
	struct np_ring **rings = np_rings_acquire();

	if (cpu < 0 || cpu >= nr_cpu_ids || !rings)
		return NULL;
	return rings[cpu];
}

unsigned long np_ring_data_size(void)
{
	return np_data_size;
}

/* irq_work callback, hardirq context: the wake-up NMI context can't do. */
static void np_ring_wakeup_fn(struct irq_work *work)
{
	wake_up_all(&np_ring_wq);
}

static struct np_ring *np_ring_alloc(int cpu, unsigned long data_size)
{
	struct np_ring *r;

	r = kzalloc_node(sizeof(*r), GFP_KERNEL, cpu_to_node(cpu));
	if (!r)
		return NULL;
	r->ctrl = vmalloc_user(PAGE_SIZE + data_size);
	if (!r->ctrl) {
		kfree(r);
		return NULL;
	}
	r->data = (void *)r->ctrl + PAGE_SIZE;
	r->size = data_size;
	r->cpu = cpu;
	init_irq_work(&r->wakeup, np_ring_wakeup_fn);

	r->ctrl->magic = NMIPROF_MAGIC;
	r->ctrl->abi_version = NMIPROF_ABI_VERSION;
	r->ctrl->cpu = cpu;
	r->ctrl->ctrl_size = PAGE_SIZE;
	r->ctrl->data_size = data_size;
	r->watermark = data_size / 4;
	r->ctrl->watermark = r->watermark;
	return r;
}

/* At load: the size of the rings np_rings_create() will make. */
void np_rings_init(unsigned long data_size)
{
	np_data_size = data_size;
}

static void np_rings_free_array(struct np_ring **rings)
{
	int cpu;

	for_each_possible_cpu(cpu) {
		if (!rings[cpu])
			continue;
		vfree(rings[cpu]->ctrl);
		kfree(rings[cpu]);
	}
	kfree(rings);
}

/*
 * Make every possible CPU's ring, once: process context, before the
 * first session starts and before the first mapping.  All or nothing,
 * so a user never finds some CPUs' rings missing.
 */
int np_rings_create(void)
{
	struct np_ring **rings;
	int cpu, ret = 0;

	if (np_rings_acquire())
		return 0;
	mutex_lock(&np_rings_lock);
	if (np_rings)
		goto out;
	ret = -ENOMEM;
	rings = kcalloc(nr_cpu_ids, sizeof(*rings), GFP_KERNEL);
	if (!rings)
		goto out;
	for_each_possible_cpu(cpu) {
		rings[cpu] = np_ring_alloc(cpu, np_data_size);
		if (!rings[cpu]) {
			np_rings_free_array(rings);
			goto out;
		}
	}
	ret = 0;
	/* Pairs with smp_load_acquire() in np_rings_acquire(). */
	smp_store_release(&np_rings, rings);
out:
	mutex_unlock(&np_rings_lock);
	return ret;
}

/* At unload: every writer is stopped, the wake-ups are flushed. */
void np_rings_free(void)
{
	if (!np_rings)
		return;
	np_rings_free_array(np_rings);
	np_rings = NULL;
}

/*
 * Empty every ring for a new session, made by np_rings_create().  No
 * writer runs: sources are stopped and the watchdog writes rings only
 * inside a session.  So the local_t updates from this CPU race with
 * nobody.
 */
void np_rings_reset(unsigned long watermark)
{
	struct np_ring **rings = np_rings_acquire();
	int cpu;

	for_each_possible_cpu(cpu) {
		struct np_ring *r = rings[cpu];

		local_set(&r->head, 0);
		local_set(&r->nest, 0);
		local_set(&r->seq, 0);
		local_set(&r->produced, 0);
		local_set(&r->lost, 0);
		local_set(&r->lost_pending, 0);
		r->lost_seq = 0;
		r->tail = 0;
		r->pub_head = 0;
		r->watermark = watermark ? watermark : r->size / 4;
		WRITE_ONCE(r->ctrl->head, 0);
		WRITE_ONCE(r->ctrl->tail, 0);
		WRITE_ONCE(r->ctrl->produced, 0);
		WRITE_ONCE(r->ctrl->lost, 0);
		WRITE_ONCE(r->ctrl->watermark, r->watermark);
	}
}

void np_rings_flush_wakeups(void)
{
	struct np_ring **rings = np_rings_acquire();
	int cpu;

	if (!rings)
		return;
	for_each_possible_cpu(cpu)
		irq_work_sync(&rings[cpu]->wakeup);
}

u64 np_ring_next_seq(struct np_ring *r)
{
	return local_inc_return(&r->seq) - 1;
}

u64 np_ring_lost(int cpu)
{
	struct np_ring *r = np_ring_get(cpu);

	return r ? local_read(&r->lost) : 0;
}

/*
 * Ordering.  The consumer (lib/backend/kring.c) runs on any CPU.  Writers
 * run on the ring's CPU and nest (hrtimer, NMI, an NMI let in by a
 * fault's iret), each finishing before the one it interrupted resumes.
 *
 *   writer                                 consumer
 *
 *   tail = load_acquire(&ctrl->tail) (A)   head = load_acquire(&ctrl->head) (C)
 *   if room: cmpxchg(&head), STORE $data   LOAD $data below head
 *   store_release(&ctrl->head, head) (B)   store_release(&ctrl->tail, tail) (D)
 *
 * A pairs with D: the consumer is done reading the bytes below tail
 * before we overwrite them.  B pairs with C: the records below head are
 * complete before the consumer sees head.
 *
 * Between writers on this CPU only program order matters (an NMI sees
 * the code it interrupted in order), so compiler barriers do.  The
 * counterpart of each is the nest test in an interrupting writer's
 * np_ring_publish(), which publishes only when it found nest at 0:
 *
 *   (E) nest++ before reading and moving head, in reserve and in the
 *       publish retry: an interrupting writer finds nest > 0 and leaves
 *       our reservation, and its own record, for us to publish.
 *   (F) STORE ctrl->head before nest = 0: no interrupting writer can
 *       publish a newer head that our store then moves back.
 *   (G) nest = 0 before re-reading head: a writer that came in before
 *       it left its record to us, and the re-read sees its head.
 *
 * tests/spin/ring.pml checks this with nested writers and the consumer.
 */

/*
 * The consumer's tail, which userspace may have scribbled: accept it only
 * within [last accepted tail, last published head], else keep the old one.
 */
static u64 np_ring_tail(struct np_ring *r)
{
	/* (A), pairs with (D) in np_kring_drain(). */
	u64 tail = smp_load_acquire(&r->ctrl->tail);
	u64 old = READ_ONCE(r->tail);

	if (tail - old <= READ_ONCE(r->pub_head) - old) {
		WRITE_ONCE(r->tail, tail);
		return tail;
	}
	return old;
}

static void np_ring_put_header(void *at, u16 type, u32 size)
{
	struct nmiprof_rec_header *h = at;

	h->common_type = type;
	h->common_flags = 0;
	h->common_size = size;
}

/*
 * Publish what this CPU has written, from the outermost writer only, as
 * perf_output_put_handle() does: a nested writer that completes between
 * our read of head and the nest reset is caught by the re-check and
 * published by us.
 */
static void np_ring_publish(struct np_ring *r)
{
	unsigned long head;

	if (local_read(&r->nest) > 1) {
		local_dec(&r->nest);
		return;
	}
again:
	barrier();	/* (E), after nest++ on the retry */
	head = local_read(&r->head);
	WRITE_ONCE(r->pub_head, head);
	WRITE_ONCE(r->ctrl->produced, local_read(&r->produced));
	WRITE_ONCE(r->ctrl->lost, local_read(&r->lost));
	/* (B), pairs with (C) in np_kring_drain(). */
	smp_store_release(&r->ctrl->head, head);
	barrier();	/* (F) */
	local_set(&r->nest, 0);
	barrier();	/* (G) */
	if (unlikely(head != local_read(&r->head))) {
		local_inc(&r->nest);
		goto again;
	}

	/* irq_work_queue() is NMI-safe and a no-op while already queued. */
	if (head - READ_ONCE(r->tail) >= r->watermark)
		irq_work_queue(&r->wakeup);
}

/*
 * Reserve @size bytes (a multiple of 8, may be 0 to only flush a pending
 * LOST record) plus @headroom that must stay free.  Returns where to
 * write, or NULL when the ring is full: the record numbered @seq is then
 * counted as lost.
 */
static void *__np_ring_reserve(struct np_ring_handle *h, struct np_ring *r,
			       u32 size, u64 seq, unsigned long headroom)
{
	unsigned long head, pos, need, pad, lost_sz, mask = r->size - 1;
	bool outer;
	u64 tail;

	h->ring = r;
	h->rec = NULL;
	outer = local_inc_return(&r->nest) == 1;
	barrier();	/* (E) */

	/*
	 * Only the outermost writer reports drops: a nested one could come
	 * between a drop's local_inc_return() of lost_pending and its store
	 * of lost_seq, or between our read of lost_seq and our xchg.  As
	 * nobody else then resets lost_pending, it stays non-zero for us,
	 * and a nested drop leaves lost_seq alone.
	 */
	lost_sz = outer && local_read(&r->lost_pending) ?
		  sizeof(struct nmiprof_lost) : 0;
	tail = np_ring_tail(r);
	do {
		head = local_read(&r->head);
		need = lost_sz + size;
		pad = 0;
		if ((head & mask) + need > r->size)
			pad = r->size - (head & mask);
		if (need > r->size / 2 ||
		    head + pad + need + headroom - tail > r->size)
			goto full;
	} while (local_cmpxchg(&r->head, head, head + pad + need) != head);

	pos = head;
	if (pad) {
		np_ring_put_header(r->data + (pos & mask), NMIPROF_REC_PAD, pad);
		pos += pad;
	}
	if (lost_sz) {
		struct nmiprof_lost *l = r->data + (pos & mask);

		np_ring_put_header(l, NMIPROF_REC_LOST, lost_sz);
		l->seq = READ_ONCE(r->lost_seq);
		barrier();	/* lost_seq of the drops we take below */
		l->lost = local_xchg(&r->lost_pending, 0);
		l->time_ns = ktime_get_mono_fast_ns();
		l->cpu = r->cpu;
		l->__pad = 0;
		local_inc(&r->produced);
		pos += lost_sz;
	}
	h->rec = r->data + (pos & mask);
	h->pos = pos;
	h->size = size;
	return h->rec;

full:
	if (!size) {		/* a flush, not a record */
		np_ring_publish(r);
		return NULL;
	}
	if (local_inc_return(&r->lost_pending) == 1)
		WRITE_ONCE(r->lost_seq, seq);
	local_inc(&r->lost);
	np_ring_publish(r);
	return NULL;
}

void *np_ring_reserve(struct np_ring_handle *h, struct np_ring *r,
		      u32 size, u64 seq)
{
	return __np_ring_reserve(h, r, size, seq, NP_LOST_HEADROOM);
}

/*
 * Write the LOST record still owed for each ring, into the headroom kept
 * for it.  Only once every writer is stopped, the watchdog's included
 * (np_session_stop()): we run on another CPU, and local_t operations are
 * not atomic against that CPU's.
 */
void np_rings_flush_lost(void)
{
	struct np_ring **rings = np_rings_acquire();
	struct np_ring_handle h;
	int cpu;

	if (!rings)
		return;
	for_each_possible_cpu(cpu) {
		struct np_ring *r = rings[cpu];

		if (!local_read(&r->lost_pending))
			continue;
		if (__np_ring_reserve(&h, r, 0, 0, 0))
			np_ring_publish(r);
	}
}

/*
 * Shrink a reservation to its first @size bytes (a multiple of 8), for a
 * writer that reserved the most it could need and wrote its record in
 * place.  Unless a nested writer has reserved after it meanwhile, head
 * still ends at this reservation and moves back; no reader has seen it,
 * as only the outermost commit publishes.  Otherwise the rest becomes a
 * pad record.
 */
void np_ring_trim(struct np_ring_handle *h, u32 size)
{
	struct np_ring *r = h->ring;
	unsigned long end = h->pos + h->size;

	if (size >= h->size)
		return;
	if (local_cmpxchg(&r->head, end, h->pos + size) != end)
		np_ring_put_header(h->rec + size, NMIPROF_REC_PAD,
				   h->size - size);
	h->size = size;
}

void np_ring_commit(struct np_ring_handle *h)
{
	local_inc(&h->ring->produced);
	np_ring_publish(h->ring);
}

/* poll(): data worth reading; with @drain, any data at all. */
bool np_rings_readable(bool drain)
{
	struct np_ring **rings = np_rings_acquire();
	int cpu;

	if (!rings)
		return false;
	for_each_possible_cpu(cpu) {
		struct np_ring *r = rings[cpu];
		u64 pending = READ_ONCE(r->pub_head) - READ_ONCE(r->ctrl->tail);

		if (pending > r->size)	/* consumer's tail is garbage */
			continue;
		if (pending >= r->watermark || (drain && pending))
			return true;
	}
	return false;
}

/*
 * Map one CPU's control page (read-write: the consumer stores its tail
 * there) or its data pages (read-only).  The mapping must be shared, so
 * tail stores reach us and nothing is ever copied on write.
 */
int np_ring_mmap(int cpu, enum nmiprof_map_kind kind,
		 struct vm_area_struct *vma)
{
	unsigned long len = vma->vm_end - vma->vm_start;
	struct np_ring *r;
	int ret;

	if (!(vma->vm_flags & VM_SHARED))
		return -EINVAL;
	ret = np_rings_create();
	if (ret)
		return ret;
	r = np_ring_get(cpu);
	if (!r)
		return -EINVAL;

	switch (kind) {
	case NMIPROF_MAP_CTRL:
		if (len != PAGE_SIZE)
			return -EINVAL;
		return remap_vmalloc_range(vma, r->ctrl, 0);
	case NMIPROF_MAP_DATA:
		if (len != r->size)
			return -EINVAL;
		if (vma->vm_flags & VM_WRITE)
			return -EPERM;
		np_vm_flags_clear(vma, VM_MAYWRITE);
		return remap_vmalloc_range(vma, r->ctrl, 1);
	}
	return -EINVAL;
}
