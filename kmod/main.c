// SPDX-License-Identifier: GPL-2.0
/*
 * nmiprof.ko: module parameters, load/unload and the /dev/nmiprof misc
 * device (ioctls, mmap of the per-CPU rings, poll).
 *
 * Lifetime: rings live from the first session or mapping to unload.  An
 * open file pins the module (fops.owner) and a mapping pins its file, so
 * rmmod cannot free pages a process still maps.  The session is stopped
 * when the file that started it is closed, or at unload; stopping waits
 * for no CPU (session.c), so np_lock is never held across a stuck CPU.
 */
#include <linux/module.h>
#include <linux/miscdevice.h>
#include <linux/fs.h>
#include <linux/mm.h>
#include <linux/poll.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <linux/capability.h>
#include <linux/mutex.h>
#include <linux/log2.h>
#include <nmiprof/nmiprof_abi.h>

#include "cpu_answer.h"
#include "entry_check.h"
#include "format.h"
#include "lockup_queue.h"
#include "ring.h"
#include "sample.h"
#include "session.h"
#include "stats.h"
#include "unwind.h"
#include "watchdog.h"

static unsigned int freq = 1000;
module_param(freq, uint, 0444);
MODULE_PARM_DESC(freq, "Default sampling frequency per CPU, Hz");

static unsigned int ring_kb = 1024;
module_param(ring_kb, uint, 0444);
MODULE_PARM_DESC(ring_kb, "Ring data size per CPU in KiB, power of two, 64..262144");

static unsigned int source;
module_param(source, uint, 0444);
MODULE_PARM_DESC(source, "Default NMI source: 0 auto, 1 pmu, 2 ipi, 3 external");

static bool user_stacks = true;
module_param(user_stacks, bool, 0444);
MODULE_PARM_DESC(user_stacks, "Default: record user stacks");

static bool autostart;
module_param(autostart, bool, 0444);
MODULE_PARM_DESC(autostart, "Start sampling at load with the defaults (testing)");

static DEFINE_MUTEX(np_lock);		/* the session and np_owner */
static struct file *np_owner;		/* file that started the session */

struct np_file {
	bool hello;			/* NMIPROF_IOC_HELLO succeeded */
	u32 minor;			/* the caller's ABI minor */
	bool unwind;			/* loaded tables or set maps */
};

static int np_open(struct inode *inode, struct file *file)
{
	struct np_file *f;

	if (!perfmon_capable())
		return -EPERM;
	f = kzalloc(sizeof(*f), GFP_KERNEL);
	if (!f)
		return -ENOMEM;
	file->private_data = f;
	return nonseekable_open(inode, file);
}

static int np_release(struct inode *inode, struct file *file)
{
	mutex_lock(&np_lock);
	if (np_owner == file) {
		np_session_stop();
		np_owner = NULL;
	}
	mutex_unlock(&np_lock);
	np_uw_release(((struct np_file *)file->private_data)->unwind);
	kfree(file->private_data);
	return 0;
}

static long np_ioc_hello(struct np_file *f, void __user *arg)
{
	struct nmiprof_hello h;
	bool match;

	if (copy_from_user(&h, arg, sizeof(h)))
		return -EFAULT;
	/* any minor: the caller reads records by their format text */
	match = h.magic == NMIPROF_MAGIC &&
		h.abi_version == NMIPROF_ABI_VERSION;
	f->minor = h.abi_minor;
	memset(&h, 0, sizeof(h));
	h.magic = NMIPROF_MAGIC;
	h.abi_version = NMIPROF_ABI_VERSION;
	h.abi_minor = NMIPROF_ABI_MINOR;
	h.nr_cpu_ids = nr_cpu_ids;
	h.page_size = PAGE_SIZE;
	h.ring_data_size = np_ring_data_size();
	h.nested_nmi_safe = np_nested_nmi_safe;
	/* Tell a mismatched caller what we speak, then refuse it. */
	if (copy_to_user(arg, &h, sizeof(h)))
		return -EFAULT;
	if (!match)
		return -EPROTO;
	f->hello = true;
	return 0;
}

static long np_ioc_configure(void __user *arg)
{
	struct nmiprof_config cfg;
	long ret;

	if (copy_from_user(&cfg, arg, sizeof(cfg)))
		return -EFAULT;
	mutex_lock(&np_lock);
	ret = np_session_configure(&cfg);
	mutex_unlock(&np_lock);
	return ret;
}

static long np_ioc_start(struct file *file)
{
	struct np_file *f = file->private_data;
	long ret;

	mutex_lock(&np_lock);
	ret = np_session_start(f->minor < 3);
	if (!ret)
		np_owner = file;
	mutex_unlock(&np_lock);
	return ret;
}

/*
 * Only the file that started the session stops it: another opener (a
 * second `nmiprof record`, a status query) must not stop nmiprofd's.
 * A session without an owner (autostart) is anybody's.
 */
static long np_ioc_stop(struct file *file)
{
	long ret = 0;

	mutex_lock(&np_lock);
	if (np_owner && np_owner != file) {
		ret = -EPERM;
	} else {
		np_session_stop();
		np_owner = NULL;
	}
	mutex_unlock(&np_lock);
	return ret;
}

static long np_ioc_stats(void __user *arg)
{
	struct nmiprof_cpu_stats cs;
	struct nmiprof_stats st;
	u32 cpu, n;

	if (copy_from_user(&st, arg, sizeof(st)))
		return -EFAULT;
	n = min_t(u32, st.nr_cpus, nr_cpu_ids);
	for (cpu = 0; cpu < n; cpu++) {
		void __user *to = u64_to_user_ptr(st.cpus) + cpu * sizeof(cs);

		if (cpu_possible(cpu))
			np_stats_read(cpu, &cs);
		else
			memset(&cs, 0, sizeof(cs));
		if (copy_to_user(to, &cs, sizeof(cs)))
			return -EFAULT;
	}
	mutex_lock(&np_lock);
	st.running = np_session_running();
	st.source = st.running ? np_sess.source : NMIPROF_SRC_AUTO;
	mutex_unlock(&np_lock);
	st.nr_cpus = n;
	st.nested_nmi_safe = np_nested_nmi_safe;
	st.lockups_dropped = np_lq_dropped();
	memset(st.__reserved, 0, sizeof(st.__reserved));
	return copy_to_user(arg, &st, sizeof(st)) ? -EFAULT : 0;
}

#define NP_FORMAT_MAX	4096

static long np_ioc_format(void __user *arg)
{
	struct nmiprof_format_req req;
	char *text;
	long ret;
	int len;

	if (copy_from_user(&req, arg, sizeof(req)))
		return -EFAULT;
	text = kmalloc(NP_FORMAT_MAX, GFP_KERNEL);
	if (!text)
		return -ENOMEM;
	len = np_format(req.type, text, NP_FORMAT_MAX);
	if (len < 0 || len > NP_FORMAT_MAX) {
		ret = len < 0 ? len : -EOVERFLOW;
		goto out;
	}
	ret = 0;
	if (req.len < len)
		ret = -ENOSPC;	/* req.len says how much is needed */
	else if (copy_to_user(u64_to_user_ptr(req.buf), text, len))
		ret = -EFAULT;
	req.len = len;
	if (ret != -EFAULT && copy_to_user(arg, &req, sizeof(req)))
		ret = -EFAULT;
out:
	kfree(text);
	return ret;
}

static long np_ioctl(struct file *file, unsigned int cmd, unsigned long arg)
{
	struct np_file *f = file->private_data;
	void __user *uarg = (void __user *)arg;

	if (cmd == NMIPROF_IOC_HELLO)
		return np_ioc_hello(f, uarg);
	if (!f->hello)
		return -EPROTO;

	switch (cmd) {
	case NMIPROF_IOC_CONFIGURE:
		return np_ioc_configure(uarg);
	case NMIPROF_IOC_START:
		return np_ioc_start(file);
	case NMIPROF_IOC_STOP:
		return np_ioc_stop(file);
	case NMIPROF_IOC_GET_STATS:
		return np_ioc_stats(uarg);
	case NMIPROF_IOC_GET_FORMAT:
		return np_ioc_format(uarg);
	case NMIPROF_IOC_GET_WATCHDOG:
	case NMIPROF_IOC_SET_WATCHDOG:
		return np_wd_ioctl(cmd, uarg);
	case NMIPROF_IOC_LOCKUP_READ:
	case NMIPROF_IOC_LOCKUP_ACK:
		return np_lq_ioctl(cmd, uarg);
	case NMIPROF_IOC_UW_LOAD:
	case NMIPROF_IOC_UW_DROP:
	case NMIPROF_IOC_UW_SET_MAPS:
	case NMIPROF_IOC_UW_STATS:
		return np_uw_ioctl(cmd, uarg, &f->unwind);
	case NMIPROF_IOC_CPUS_ANSWER:
	case NMIPROF_IOC_PARK_PERF_FD:
		return np_ans_ioctl(cmd, uarg);
	}
	return -ENOTTY;
}

/* Offsets are NMIPROF_MMAP_OFFSET(cpu, kind); anything else is refused. */
static int np_mmap(struct file *file, struct vm_area_struct *vma)
{
	struct np_file *f = file->private_data;
	u64 off;

	if (!f->hello)
		return -EPROTO;
	if (vma->vm_pgoff > (U64_MAX >> PAGE_SHIFT))
		return -EINVAL;
	off = (u64)vma->vm_pgoff << PAGE_SHIFT;
	if (off & (BIT_ULL(31) - 1))
		return -EINVAL;
	if ((off >> 32) >= nr_cpu_ids || !cpu_possible(off >> 32))
		return -EINVAL;
	return np_ring_mmap(off >> 32, (off >> 31) & 1, vma);
}

static __poll_t np_poll(struct file *file, poll_table *wait)
{
	bool drain;

	poll_wait(file, &np_ring_wq, wait);
	/* Once stopped, whatever is left is worth reading. */
	drain = !READ_ONCE(np_owner) && !np_session_running();
	return np_rings_readable(drain) ? EPOLLIN | EPOLLRDNORM : 0;
}

static const struct file_operations np_fops = {
	.owner		= THIS_MODULE,
	.open		= np_open,
	.release	= np_release,
	.unlocked_ioctl	= np_ioctl,
	.compat_ioctl	= compat_ptr_ioctl,
	.mmap		= np_mmap,
	.poll		= np_poll,
};

static struct miscdevice np_misc = {
	.minor	= MISC_DYNAMIC_MINOR,
	.name	= "nmiprof",
	.fops	= &np_fops,
	.mode	= 0600,
};

static int __init np_init(void)
{
	int ret;

	if (!is_power_of_2(ring_kb) || ring_kb < 64 || ring_kb > 262144) {
		pr_err("nmiprof: ring_kb=%u must be a power of two in 64..262144\n",
		       ring_kb);
		return -EINVAL;
	}
	if (!freq || freq > NMIPROF_MAX_FREQ || source > NMIPROF_SRC_EXTERNAL) {
		pr_err("nmiprof: bad freq=%u or source=%u\n", freq, source);
		return -EINVAL;
	}
	if (!np_entry_check())
		pr_warn("nmiprof: nested-NMI entry fix (repeat_nmi/end_repeat_nmi) not found; user stacks and all faulting NMI work disabled, see packaging/kernel-patches/ (installed: /usr/share/doc/nmiprof-dkms/kernel-patches/)\n");

	ret = np_session_init(freq, source, user_stacks);
	if (ret)
		return ret;
	ret = np_sample_init();
	if (ret)
		goto err_session;
	np_rings_init((unsigned long)ring_kb << 10);
	np_ans_init();
	ret = np_wd_init();
	if (ret)
		goto err_sample;
	ret = misc_register(&np_misc);
	if (ret)
		goto err_wd;

	pr_info("nmiprof: loaded, %u KiB ring per CPU, nested-NMI safe entry %s\n",
		ring_kb, np_nested_nmi_safe ? "found" : "missing");
	if (autostart) {
		mutex_lock(&np_lock);
		ret = np_session_start(true);
		mutex_unlock(&np_lock);
		if (ret)
			pr_warn("nmiprof: autostart failed: %d\n", ret);
	}
	return 0;

err_wd:
	np_wd_exit();
err_sample:
	np_sample_exit();
err_session:
	np_session_exit();
	return ret;
}

static void __exit np_exit(void)
{
	/* No file is open (each pins the module); only autostart runs. */
	misc_deregister(&np_misc);
	mutex_lock(&np_lock);
	np_session_stop();
	mutex_unlock(&np_lock);
	np_wd_exit();
	np_ans_exit();
	np_rings_flush_wakeups();
	np_rings_free();
	np_uw_exit();
	np_sample_exit();
	np_session_exit();
	pr_info("nmiprof: unloaded\n");
}

module_init(np_init);
module_exit(np_exit);

MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("NMI-based sampling profiler");
