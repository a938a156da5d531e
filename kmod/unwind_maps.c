// SPDX-License-Identifier: GPL-2.0
/*
 * Per-process mapping sets: for each sampled process, its executable
 * mappings sorted by address, each naming the table of the object mapped
 * there and the bias from the process's addresses to the object's.
 *
 * A set is replaced whole (hlist_replace_rcu()) and freed after a grace
 * period, so the NMI-side lookup, a hash on the tgid and a binary search,
 * runs with no lock.  The set also holds the process's mm as it was when
 * the set was made, compared with current->mm in NMI: a process that has
 * exec'd since, or a reused pid, gets no set until the daemon sends one.
 */
#include <linux/hash.h>
#include <linux/pid.h>
#include <linux/rculist.h>
#include <linux/sched.h>
#include <linux/sched/mm.h>
#include <linux/sched/signal.h>
#include <linux/sched/task.h>
#include <linux/slab.h>
#include <linux/uaccess.h>

#include "unwind.h"

#define NP_UW_SET_BITS		10
#define NP_UW_MAX_SETS		16384

static struct hlist_head np_uw_sets[1 << NP_UW_SET_BITS];
unsigned int np_uw_nr_sets;
static u64 np_uw_set_bytes;

static struct hlist_head *np_uw_bucket(pid_t tgid)
{
	return &np_uw_sets[hash_32(tgid, NP_UW_SET_BITS)];
}

/* NMI: under rcu_read_lock(), current's set, or NULL. */
const struct np_uw_set *np_uw_set_current(void)
{
	pid_t tgid = current->tgid;
	struct np_uw_set *s;

	hlist_for_each_entry_rcu(s, np_uw_bucket(tgid), node)
		if (s->tgid == tgid)
			return s->mm == current->mm ? s : NULL;
	return NULL;
}

/* The mapping holding @ip, or NULL. */
const struct nmiprof_uw_map *np_uw_set_find(const struct np_uw_set *s, u64 ip)
{
	u32 lo = 0, hi = s->nr;

	while (lo < hi) {
		u32 mid = lo + (hi - lo) / 2;

		if (ip < s->maps[mid].start)
			hi = mid;
		else if (ip >= s->maps[mid].end)
			lo = mid + 1;
		else
			return &s->maps[mid];
	}
	return NULL;
}

static size_t np_uw_set_size(u32 nr)
{
	return struct_size_t(struct np_uw_set, maps, nr);
}

/*
 * The mm of @tgid, as an identity: NULL if it has none.  Any thread's: a
 * leader that exited while its threads run on has none of its own.
 */
static const void *np_uw_mm_of(pid_t tgid)
{
	struct task_struct *task, *t;
	struct mm_struct *mm = NULL;
	struct pid *pid;

	pid = find_get_pid(tgid);
	task = get_pid_task(pid, PIDTYPE_TGID);
	put_pid(pid);
	if (!task)
		return NULL;
	rcu_read_lock();
	for_each_thread(task, t) {
		mm = get_task_mm(t);
		if (mm)
			break;
	}
	rcu_read_unlock();
	put_task_struct(task);
	if (mm)
		mmput(mm);
	return mm;
}

static int np_uw_maps_check(const struct nmiprof_uw_map *m, u32 nr)
{
	u32 i;

	for (i = 0; i < nr; i++) {
		if (m[i].start >= m[i].end || m[i].end > TASK_SIZE_MAX ||
		    m[i].__pad)
			return -EINVAL;
		if (i && m[i].start < m[i - 1].end)
			return -EINVAL;	/* unsorted or overlapping */
	}
	return 0;
}

static void np_uw_set_free(struct np_uw_set *s)
{
	WRITE_ONCE(np_uw_nr_sets, np_uw_nr_sets - 1);
	np_uw_set_bytes -= np_uw_set_size(s->nr);
	kvfree_rcu(s, rcu);
}

int np_uw_set_maps(pid_t tgid, const struct nmiprof_uw_map __user *maps,
		   u32 nr)
{
	struct np_uw_set *s = NULL, *old;
	struct hlist_head *b;
	int ret;

	if (tgid <= 0 || nr > NMIPROF_UW_MAX_MAPS)
		return -EINVAL;
	if (nr) {
		s = kvmalloc(np_uw_set_size(nr), GFP_KERNEL);
		if (!s)
			return -ENOMEM;
		s->tgid = tgid;
		s->nr = nr;
		ret = -EFAULT;
		if (copy_from_user(s->maps, maps, nr * sizeof(*maps)))
			goto err;
		ret = np_uw_maps_check(s->maps, nr);
		if (ret)
			goto err;
		s->mm = np_uw_mm_of(tgid);
		ret = -ESRCH;
		if (!s->mm)
			goto err;
	}

	mutex_lock(&np_uw_lock);
	b = np_uw_bucket(tgid);
	hlist_for_each_entry(old, b, node)
		if (old->tgid == tgid)
			break;
	if (s && !old && np_uw_nr_sets >= NP_UW_MAX_SETS) {
		mutex_unlock(&np_uw_lock);
		ret = -ENOSPC;
		goto err;
	}
	/* Pairs with hlist_for_each_entry_rcu() in np_uw_set_current(). */
	if (s && old)
		hlist_replace_rcu(&old->node, &s->node);
	else if (s)
		hlist_add_head_rcu(&s->node, b);
	else if (old)
		hlist_del_rcu(&old->node);
	if (s) {
		WRITE_ONCE(np_uw_nr_sets, np_uw_nr_sets + 1);
		np_uw_set_bytes += np_uw_set_size(nr);
	}
	if (old)
		np_uw_set_free(old);
	mutex_unlock(&np_uw_lock);
	return 0;
err:
	kvfree(s);
	return ret;
}

/* Under np_uw_lock. */
void np_uw_sets_clear(void)
{
	struct hlist_node *tmp;
	struct np_uw_set *s;
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(np_uw_sets); i++) {
		hlist_for_each_entry_safe(s, tmp, &np_uw_sets[i], node) {
			hlist_del_rcu(&s->node);
			np_uw_set_free(s);
		}
	}
}

void np_uw_sets_stats(struct nmiprof_uw_stats *st)
{
	st->sets = np_uw_nr_sets;
	st->set_bytes = np_uw_set_bytes;
}
