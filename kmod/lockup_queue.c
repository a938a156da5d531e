// SPDX-License-Identifier: GPL-2.0
/*
 * The lockup queue: every LOCKUP record the watchdog writes is kept here
 * until the daemon has stored it and acknowledges it, so that a lockup
 * reported before nmiprofd starts, while it restarts, or on a CPU it does
 * not sample, still reaches the store.  Sessions and rings don't touch it.
 *
 * A fixed array of slots, each FREE -> BUSY -> READY -> FREE:
 *   FREE -> BUSY    a writer claims it with cmpxchg: the watchdog, from
 *                   NMI or hrtimer context on any CPU, nested or not;
 *   BUSY -> READY   the writer has filled it (release);
 *   READY -> FREE   LOCKUP_ACK, in process context (release).
 * Readers copy READY slots only, and readers and ACK hold np_lq_lock, so
 * a slot is never reused under a reader.  When every slot is taken the
 * new record is counted and dropped: the first reports of a lockup storm
 * say more than the last ones.
 */
#include <linux/atomic.h>
#include <linux/minmax.h>
#include <linux/moduleparam.h>
#include <linux/mutex.h>
#include <linux/string.h>
#include <linux/uaccess.h>

#include "lockup_queue.h"

#define NP_LQ_SLOTS	64

/* Fewer slots let a test fill the queue with a few lockups. */
static unsigned int lockup_queue = NP_LQ_SLOTS;
module_param(lockup_queue, uint, 0444);
MODULE_PARM_DESC(lockup_queue, "Lockup records kept until read, 1..64 (default 64; fewer for tests)");

enum { NP_LQ_FREE, NP_LQ_BUSY, NP_LQ_READY };

struct np_lq_slot {
	atomic_t	state;
	u64		id;		/* written while BUSY */
	u64		rec[NP_LQ_REC_MAX / sizeof(u64)];
};

static struct np_lq_slot np_lq[NP_LQ_SLOTS];
static atomic64_t np_lq_last_id;
static atomic64_t np_lq_drops;
static DEFINE_MUTEX(np_lq_lock);	/* readers and ACK */

static unsigned int np_lq_nr(void)
{
	return clamp(lockup_queue, 1U, (unsigned int)NP_LQ_SLOTS);
}

u64 np_lq_dropped(void)
{
	return atomic64_read(&np_lq_drops);
}

void np_lq_add(const struct nmiprof_lockup *rec)
{
	u32 size = rec->hdr.common_size;
	struct np_lq_slot *s;
	int i;

	for (i = 0; i < np_lq_nr() && size <= NP_LQ_REC_MAX; i++) {
		s = &np_lq[i];
		/* Pairs with atomic_set_release() in np_lq_ack(). */
		if (atomic_read(&s->state) == NP_LQ_FREE &&
		    atomic_cmpxchg(&s->state, NP_LQ_FREE, NP_LQ_BUSY) ==
		    NP_LQ_FREE)
			goto claimed;
	}
	atomic64_inc(&np_lq_drops);
	return;
claimed:
	s->id = atomic64_inc_return(&np_lq_last_id);
	memcpy(s->rec, rec, size);
	((struct nmiprof_lockup *)s->rec)->seq = s->id;
	/* Pairs with atomic_read_acquire() in np_lq_find(). */
	atomic_set_release(&s->state, NP_LQ_READY);
}

/* The READY slot with the lowest id above @after, or NULL. */
static struct np_lq_slot *np_lq_find(u64 after)
{
	struct np_lq_slot *s, *best = NULL;

	for (s = np_lq; s < np_lq + np_lq_nr(); s++) {
		if (atomic_read_acquire(&s->state) != NP_LQ_READY)
			continue;
		if (s->id > after && (!best || s->id < best->id))
			best = s;
	}
	return best;
}

static long np_lq_read(void __user *arg)
{
	struct nmiprof_lockup_read rd;
	struct nmiprof_lockup *rec;
	struct np_lq_slot *s;
	long ret = 0;

	if (copy_from_user(&rd, arg, sizeof(rd)))
		return -EFAULT;
	if (rd.__pad || memchr_inv(rd.__reserved, 0, sizeof(rd.__reserved)))
		return -EINVAL;
	mutex_lock(&np_lq_lock);
	s = np_lq_find(rd.after);
	rd.id = s ? s->id : 0;
	rd.dropped = np_lq_dropped();
	if (s) {
		rec = (struct nmiprof_lockup *)s->rec;
		if (rd.len < rec->hdr.common_size)
			ret = -ENOSPC;	/* rd.len says how much is needed */
		else if (copy_to_user(u64_to_user_ptr(rd.buf), rec,
				      rec->hdr.common_size))
			ret = -EFAULT;
		rd.len = rec->hdr.common_size;
	} else {
		rd.len = 0;
	}
	mutex_unlock(&np_lq_lock);
	if (ret != -EFAULT && copy_to_user(arg, &rd, sizeof(rd)))
		ret = -EFAULT;
	return ret;
}

static long np_lq_ack(void __user *arg)
{
	struct np_lq_slot *s;
	long ret = -ENOENT;
	u64 id;

	if (get_user(id, (u64 __user *)arg))
		return -EFAULT;
	mutex_lock(&np_lq_lock);
	for (s = np_lq; s < np_lq + np_lq_nr(); s++) {
		if (atomic_read_acquire(&s->state) == NP_LQ_READY &&
		    s->id == id) {
			/* Readers are done with it: pairs with np_lq_add(). */
			atomic_set_release(&s->state, NP_LQ_FREE);
			ret = 0;
			break;
		}
	}
	mutex_unlock(&np_lq_lock);
	return ret;
}

long np_lq_ioctl(unsigned int cmd, void __user *arg)
{
	switch (cmd) {
	case NMIPROF_IOC_LOCKUP_READ:
		return np_lq_read(arg);
	case NMIPROF_IOC_LOCKUP_ACK:
		return np_lq_ack(arg);
	}
	return -ENOTTY;
}
