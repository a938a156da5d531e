// SPDX-License-Identifier: GPL-2.0
/*
 * Which CPUs answer an IPI now, and closes that wait for one to answer.
 *
 * Installing, enabling, disabling and removing a per-CPU perf event is a
 * synchronous cross call to that CPU (perf_install_in_context(),
 * event_function_call()).  A CPU spinning with interrupts off takes none,
 * so a process opening or closing one waits, spinning with preemption
 * off, for as long as the lockup lasts.  Userspace asks here which CPUs
 * answer before it opens its side-band events, and hands us its events
 * before it closes them: we hold a reference to each and drop it once
 * the event's CPU has answered, so the last fput, and its cross call,
 * happens in our work item with a CPU that takes interrupts again.
 *
 * Each CPU has one asynchronous call in flight at most.  Its callback
 * counts an answer, then queues the release work, which pings again the
 * CPUs that still hold events: an event waits for an answer counted
 * after it was parked (np_ans_park() reads the count under np_ans_lock,
 * where the work reads it too).
 */
#include <linux/cpumask.h>
#include <linux/delay.h>
#include <linux/file.h>
#include <linux/fs.h>
#include <linux/list.h>
#include <linux/magic.h>
#include <linux/percpu.h>
#include <linux/rcupdate.h>
#include <linux/perf_event.h>
#include <linux/sched.h>
#include <linux/slab.h>
#include <linux/smp.h>
#include <linux/spinlock.h>
#include <linux/uaccess.h>
#include <linux/wait.h>
#include <linux/workqueue.h>
#include <nmiprof/nmiprof_abi.h>

#include "cpu_answer.h"

/* Parked events, at most: each holds a struct file. */
#define NP_ANS_MAX_PARKED	65536
#define NP_ANS_MAX_WAIT_MS	1000

struct np_ans_cpu {
	call_single_data_t csd;
	atomic_t in_flight;	/* csd queued, callback not yet run */
	atomic_long_t answers;	/* callbacks run */
};

struct np_ans_parked {
	struct list_head node;
	struct file *file;
	unsigned int cpu;
	long answers;		/* the CPU's count when parked */
};

static DEFINE_PER_CPU(struct np_ans_cpu, np_ans);
static DEFINE_SPINLOCK(np_ans_lock);	/* np_ans_list, np_ans_nr */
static LIST_HEAD(np_ans_list);
static unsigned int np_ans_nr;
static DECLARE_WAIT_QUEUE_HEAD(np_ans_wq);
static void np_ans_release(struct work_struct *work);
static DECLARE_WORK(np_ans_work, np_ans_release);

/* Runs on the CPU asked, in hardirq. */
static void np_ans_answer(void *info)
{
	struct np_ans_cpu *c = info;

	atomic_long_inc(&c->answers);
	/* Pairs with np_ans_exit()'s atomic_read_acquire(). */
	atomic_set_release(&c->in_flight, 0);
	wake_up_all(&np_ans_wq);
	queue_work(system_wq, &np_ans_work);
}

/* Ask @cpu to answer, unless it has not answered the last ask yet. */
static bool np_ans_ping(unsigned int cpu)
{
	struct np_ans_cpu *c = per_cpu_ptr(&np_ans, cpu);

	if (atomic_cmpxchg(&c->in_flight, 0, 1))
		return true;
	if (!smp_call_function_single_async(cpu, &c->csd))
		return true;
	atomic_set(&c->in_flight, 0);
	return false;		/* offline */
}

static long np_ans_count(unsigned int cpu)
{
	return atomic_long_read(&per_cpu_ptr(&np_ans, cpu)->answers);
}

/* Drop the events whose CPU answered since they were parked, or is gone. */
static void np_ans_release(struct work_struct *work)
{
	struct np_ans_parked *p, *n;
	cpumask_var_t ping;
	LIST_HEAD(done);
	unsigned int cpu;

	if (!zalloc_cpumask_var(&ping, GFP_KERNEL)) {
		queue_work(system_wq, &np_ans_work);
		return;
	}
	spin_lock(&np_ans_lock);
	list_for_each_entry_safe(p, n, &np_ans_list, node) {
		if (np_ans_count(p->cpu) != p->answers || !cpu_online(p->cpu)) {
			list_move(&p->node, &done);
			np_ans_nr--;
		} else {
			cpumask_set_cpu(p->cpu, ping);
		}
	}
	spin_unlock(&np_ans_lock);
	for_each_cpu(cpu, ping)
		if (!np_ans_ping(cpu))
			queue_work(system_wq, &np_ans_work);	/* went offline */
	free_cpumask_var(ping);
	list_for_each_entry_safe(p, n, &done, node) {
		fput(p->file);
		kfree(p);
	}
}

/*
 * A perf event's file: perf_fops is not exported, but every perf event
 * is an anonymous inode named "[perf_event]" (perf_event_open()).
 */
static struct perf_event *np_ans_perf_event(struct file *file)
{
	if (file_inode(file)->i_sb->s_magic != ANON_INODE_FS_MAGIC ||
	    strcmp(file_dentry(file)->d_name.name, "[perf_event]"))
		return NULL;
	return file->private_data;
}

static long np_ans_park(int fd)
{
	struct np_ans_parked *p;
	struct perf_event *event;
	long ret = 0;

	p = kzalloc(sizeof(*p), GFP_KERNEL);
	if (!p)
		return -ENOMEM;
	p->file = fget(fd);
	if (!p->file) {
		kfree(p);
		return -EBADF;
	}
	event = np_ans_perf_event(p->file);
	if (!event || event->cpu < 0) {
		ret = -EINVAL;		/* not a perf event bound to a CPU */
		goto err;
	}
	p->cpu = event->cpu;
	spin_lock(&np_ans_lock);
	if (np_ans_nr >= NP_ANS_MAX_PARKED) {
		spin_unlock(&np_ans_lock);
		ret = -ENOSPC;
		goto err;
	}
	p->answers = np_ans_count(p->cpu);
	list_add_tail(&p->node, &np_ans_list);
	np_ans_nr++;
	spin_unlock(&np_ans_lock);
	if (!np_ans_ping(p->cpu))
		queue_work(system_wq, &np_ans_work);
	return 0;
err:
	fput(p->file);
	kfree(p);
	return ret;
}

static bool np_ans_all(const struct cpumask *asked, const long *before)
{
	unsigned int cpu;

	for_each_cpu(cpu, asked)
		if (np_ans_count(cpu) == before[cpu])
			return false;
	return true;
}

static long np_ans_query(void __user *arg)
{
	struct nmiprof_cpus_answer q;
	cpumask_var_t asked;
	unsigned int cpu;
	long *before;

	if (copy_from_user(&q, arg, sizeof(q)))
		return -EFAULT;
	if (q.timeout_ms > NP_ANS_MAX_WAIT_MS || q.__reserved)
		return -EINVAL;
	before = kcalloc(nr_cpu_ids, sizeof(*before), GFP_KERNEL);
	if (!before)
		return -ENOMEM;
	if (!zalloc_cpumask_var(&asked, GFP_KERNEL)) {
		kfree(before);
		return -ENOMEM;
	}
	for_each_online_cpu(cpu) {
		before[cpu] = np_ans_count(cpu);
		if (np_ans_ping(cpu))
			cpumask_set_cpu(cpu, asked);
	}
	wait_event_interruptible_timeout(np_ans_wq, np_ans_all(asked, before),
					 msecs_to_jiffies(q.timeout_ms));
	memset(q.cpumask, 0, sizeof(q.cpumask));
	for_each_cpu(cpu, asked)
		if (cpu < sizeof(q.cpumask) * 8 &&
		    np_ans_count(cpu) != before[cpu])
			q.cpumask[cpu / 64] |= 1ULL << (cpu % 64);
	free_cpumask_var(asked);
	kfree(before);
	return copy_to_user(arg, &q, sizeof(q)) ? -EFAULT : 0;
}

long np_ans_ioctl(unsigned int cmd, void __user *arg)
{
	int fd;

	switch (cmd) {
	case NMIPROF_IOC_CPUS_ANSWER:
		return np_ans_query(arg);
	case NMIPROF_IOC_PARK_PERF_FD:
		if (get_user(fd, (int __user *)arg))
			return -EFAULT;
		return np_ans_park(fd);
	}
	return -ENOTTY;
}

void np_ans_init(void)
{
	unsigned int cpu;

	for_each_possible_cpu(cpu) {
		struct np_ans_cpu *c = per_cpu_ptr(&np_ans, cpu);

		INIT_CSD(&c->csd, np_ans_answer, c);
	}
}

/*
 * At unload no file is open, so nobody parks or asks any more.  A call
 * still in flight runs our code: wait for it (a CPU that never answers
 * keeps rmmod waiting, as the kernel's own teardown would), and for the
 * callback to return (it runs with interrupts off: an RCU reader).
 * Events left are dropped by the work once their CPUs answered.
 */
void np_ans_exit(void)
{
	unsigned int cpu;
	bool empty;

	do {
		for_each_possible_cpu(cpu)
			while (atomic_read_acquire(&per_cpu_ptr(&np_ans, cpu)->in_flight))
				msleep(20);
		synchronize_rcu();
		flush_work(&np_ans_work);
		spin_lock(&np_ans_lock);
		empty = list_empty(&np_ans_list);
		spin_unlock(&np_ans_lock);
	} while (!empty || work_pending(&np_ans_work));
}
