// SPDX-License-Identifier: GPL-2.0
/*
 * User stacks walked with the compiled tables, from NMI.
 *
 * A 64-bit process with a mapping set (unwind_maps.c) is walked by the
 * walker userspace builds too (lib/unwind/unwind_walk.c, included below
 * through NMIPROF_LIB: see Kbuild), which takes each frame from its table
 * row, or from frame pointers where the row says so or no table covers
 * the pc.  It is compiled into this file so that its callbacks are
 * inlined: find() is the set's binary search and the table's slot, read()
 * one __get_user() of the live stack, as perf_callchain_user() reads it.
 * Every read is inside [sp, sp + NP_UW_STACK_WINDOW), the walker checks,
 * and each frame's sp is above the last, so a table cannot make the walk
 * loop or wander.  A walk that does not reach the outermost frame ends
 * with a marker frame (NMIPROF_UW_MARK) naming why, and every stop is
 * counted per CPU by reason.
 */
#include <linux/moduleparam.h>
#include <linux/percpu.h>
#include <linux/sched.h>
#include <linux/string.h>
#include <linux/uaccess.h>
#include <asm/ptrace.h>

#include "unwind.h"

#include <unwind/unwind_walk.c>

/* How far above sp a walk may read: deep enough for 127 large frames. */
#define NP_UW_STACK_WINDOW	(1UL << 20)

struct np_uw_cpu_stats {
	u64 walks;
	u64 stops[NMIPROF_UW_STOP_NR];
};

static DEFINE_PER_CPU(struct np_uw_cpu_stats, np_uw_stats);
static unsigned int np_uw_users;	/* files that loaded or set, np_uw_lock */

/* Off: frame pointers only, tables kept (benchmarks, negative controls). */
static bool unwind_tables = true;
module_param(unwind_tables, bool, 0644);
MODULE_PARM_DESC(unwind_tables, "Walk user stacks with the loaded unwind tables (0: frame pointers only)");

struct np_uw_ctx {
	const struct np_uw_set *set;
	const struct nmiprof_uw_map *m;		/* the last frame's mapping */
	const struct np_uw_ktable *kt;		/* and its table, or NULL */
};

static __always_inline int np_uw_find(void *c, __u64 ip,
				      const struct nmiprof_uw_table **t,
				      __u64 *bias)
{
	struct np_uw_ctx *x = c;
	const struct nmiprof_uw_map *m = x->m;
	const struct np_uw_ktable *kt = x->kt;

	/* Callers are mostly in the object of their callee: no search. */
	if (!m || ip < m->start || ip >= m->end) {
		m = np_uw_set_find(x->set, ip);
		if (!m)
			return NMIPROF_UW_STOP_UNMAPPED;
		kt = m->table ? np_uw_table_get(m->table) : NULL;
		x->m = m;
		x->kt = kt;
	}
	if (!kt)
		return NMIPROF_UW_STOP_NO_TABLE;
	*t = &kt->t;
	*bias = m->bias;
	return 0;
}

/*
 * One word of the live stack.  A window copied by copy_from_user_nmi(),
 * as the frame-pointer walk reads, cost a copy of every byte between the
 * frames (one instruction a byte under QEMU's icount) for the one word a
 * frame needs.  The caller made sure uaccess is safe here (see below)
 * and disabled page faults; the walker keeps addr below TASK_SIZE_MAX.
 */
static __always_inline int np_uw_read(void *c, __u64 addr, __u64 *val)
{
	u64 v;

	if (__get_user(v, (const u64 __user *)(unsigned long)addr))
		return -1;
	*val = v;
	return 0;
}

static const struct np_uw_ops np_uw_ops = {
	.find = np_uw_find,
	.read = np_uw_read,
};

/*
 * Walk current's user stack into @buf with its tables.  Returns the
 * frames written, or -1 when current has no mapping set (the caller
 * follows frame pointers as before).
 */
int np_uw_user_stack(struct pt_regs *uregs, u64 *buf, unsigned int max,
		     u16 *flags)
{
	struct np_uw_cpu_stats *st = this_cpu_ptr(&np_uw_stats);
	struct np_uw_regs regs = {
		.ip = uregs->ip, .sp = uregs->sp, .bp = uregs->bp,
	};
	struct np_uw_ctx x = { };
	unsigned long lo = uregs->sp, hi;
	unsigned int nr;
	u64 top;
	int why;

	if (!READ_ONCE(np_uw_nr_sets) || !READ_ONCE(unwind_tables))
		return -1;
	rcu_read_lock();
	x.set = np_uw_set_current();
	if (!x.set) {
		rcu_read_unlock();
		return -1;
	}
	hi = lo < TASK_SIZE_MAX - NP_UW_STACK_WINDOW ?
	     lo + NP_UW_STACK_WINDOW : TASK_SIZE_MAX;
	/*
	 * copy_from_user_nmi() reads nothing while the loaded mm is not
	 * current's (nmi_uaccess_okay(), not exported): a first word read
	 * through it vouches for the rest of this NMI, whose reads are then
	 * plain __get_user()s.  A walk that cannot read sp reads nothing.
	 */
	if (copy_from_user_nmi(&top, (const void __user *)lo, sizeof(top)))
		hi = lo;
	pagefault_disable();
	why = uw_walk(&np_uw_ops, &x, &regs, lo, hi, buf, max, &nr);
	pagefault_enable();
	rcu_read_unlock();

	st->walks++;
	st->stops[why]++;
	if (why == NMIPROF_UW_STOP_DEPTH)
		*flags |= NMIPROF_RF_USTACK_TRUNC;
	else if (why == NMIPROF_UW_STOP_WINDOW)
		*flags |= NMIPROF_RF_USTACK_FAULT;
	if (why != NMIPROF_UW_STOP_END && nr) {
		if (nr == max)
			nr--;
		buf[nr++] = NMIPROF_UW_MARK(why);
	}
	return nr;
}

static long np_uw_ioc_load(void __user *arg)
{
	struct nmiprof_uw_table h;
	struct nmiprof_uw_load ld;
	long ret;

	if (copy_from_user(&ld, arg, sizeof(ld)))
		return -EFAULT;
	if ((ld.flags & ~NMIPROF_UW_LOAD_PROBE) ||
	    memchr_inv(ld.__reserved, 0, sizeof(ld.__reserved)))
		return -EINVAL;
	if (ld.flags & NMIPROF_UW_LOAD_PROBE) {
		/* The header only: the rows stay in the reader's file. */
		if (copy_from_user(&h, u64_to_user_ptr(ld.table), sizeof(h)))
			return -EFAULT;
		ret = np_uw_table_probe(&h, ld.len, &ld.id);
	} else {
		ret = np_uw_table_load(u64_to_user_ptr(ld.table), ld.len,
				       &ld.id);
	}
	if (ret)
		return ret;
	/* Not dropped on failure: it may be another reader's table. */
	return copy_to_user(arg, &ld, sizeof(ld)) ? -EFAULT : 0;
}

static long np_uw_ioc_maps(void __user *arg)
{
	struct nmiprof_uw_maps req;

	if (copy_from_user(&req, arg, sizeof(req)))
		return -EFAULT;
	if (memchr_inv(req.__reserved, 0, sizeof(req.__reserved)) ||
	    req.pid > PID_MAX_LIMIT)
		return -EINVAL;
	return np_uw_set_maps(req.pid, u64_to_user_ptr(req.maps), req.nr);
}

static long np_uw_ioc_stats(void __user *arg)
{
	struct nmiprof_uw_stats st;
	int cpu, i;

	memset(&st, 0, sizeof(st));
	mutex_lock(&np_uw_lock);
	np_uw_tables_stats(&st);
	np_uw_sets_stats(&st);
	mutex_unlock(&np_uw_lock);
	/* Racy sums of per-CPU counters, like np_stats_read(). */
	for_each_possible_cpu(cpu) {
		struct np_uw_cpu_stats *s = per_cpu_ptr(&np_uw_stats, cpu);

		st.walks += READ_ONCE(s->walks);
		for (i = 0; i < NMIPROF_UW_STOP_NR; i++)
			st.stops[i] += READ_ONCE(s->stops[i]);
	}
	return copy_to_user(arg, &st, sizeof(st)) ? -EFAULT : 0;
}

/* @user: the file's flag, set once it loaded a table or set a process. */
long np_uw_ioctl(unsigned int cmd, void __user *arg, bool *user)
{
	u32 id;

	if (cmd == NMIPROF_IOC_UW_STATS)
		return np_uw_ioc_stats(arg);
	mutex_lock(&np_uw_lock);
	if (!*user) {
		*user = true;
		np_uw_users++;
	}
	mutex_unlock(&np_uw_lock);
	switch (cmd) {
	case NMIPROF_IOC_UW_LOAD:
		return np_uw_ioc_load(arg);
	case NMIPROF_IOC_UW_DROP:
		if (get_user(id, (u32 __user *)arg))
			return -EFAULT;
		return np_uw_table_drop(id);
	case NMIPROF_IOC_UW_SET_MAPS:
		return np_uw_ioc_maps(arg);
	}
	return -ENOTTY;
}

/*
 * A file that used the ioctls above is closed: the last one takes the
 * sets with it, so a daemon that died leaves no process walked by its
 * tables.  The tables stay, under their budget, for the next reader
 * (unwind_table.c); they go at unload.
 */
void np_uw_release(bool user)
{
	if (!user)
		return;
	mutex_lock(&np_uw_lock);
	if (!--np_uw_users)
		np_uw_sets_clear();
	mutex_unlock(&np_uw_lock);
}

void np_uw_exit(void)
{
	mutex_lock(&np_uw_lock);
	np_uw_sets_clear();
	np_uw_tables_clear();
	mutex_unlock(&np_uw_lock);
}
