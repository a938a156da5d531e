// SPDX-License-Identifier: GPL-2.0
/*
 * The sampler: what one NMI records about the context it interrupted.
 *
 * Kernel stack: the ORC unwinder through its exported API, exactly as
 * arch_stack_walk() and perf_callchain_kernel() do it from NMI context.
 * User stack: frame pointers from the user registers (the NMI's own if it
 * hit user mode, else task_pt_regs(current)), read only through
 * copy_from_user_nmi(), which refuses when the current mm isn't loaded and
 * never sleeps.  Kernel threads and user workers have no user stack.
 *
 * Everything is collected into a per-CPU scratch area first so that the
 * ring reservation is exactly the record's size.  No locks, no allocation,
 * no printk; the walks are bounded by the configured depths.
 */
#include <linux/percpu.h>
#include <linux/hardirq.h>
#include <linux/sched.h>
#include <linux/sched/task_stack.h>
#include <linux/string.h>
#include <linux/ktime.h>
#include <linux/uaccess.h>
#include <asm/ptrace.h>
#include <asm/unwind.h>

#include "compat.h"
#include "ring.h"
#include "sample.h"
#include "session.h"

/* One per CPU; the latch guarantees a single user at a time. */
struct np_scratch {
	u64			kstack[NMIPROF_MAX_FRAMES];
	u64			ustack[NMIPROF_MAX_FRAMES];
	struct nmiprof_uregs	uregs;
	u8			raw[NMIPROF_MAX_USTACK_BYTES];
};

static struct np_scratch __percpu *np_scratch;

int np_sample_init(void)
{
	np_scratch = alloc_percpu(struct np_scratch);
	return np_scratch ? 0 : -ENOMEM;
}

void np_sample_exit(void)
{
	free_percpu(np_scratch);
	np_scratch = NULL;
}

static unsigned int np_kernel_stack(struct pt_regs *regs, u64 *buf,
				    unsigned int max, u16 *flags)
{
	struct unwind_state state;
	unsigned long addr;
	unsigned int n = 0;

	if (!max)
		return 0;
	buf[n++] = regs->ip;
	for (unwind_start(&state, current, regs, NULL); !unwind_done(&state);
	     unwind_next_frame(&state)) {
		addr = unwind_get_return_address(&state);
		if (!addr)
			break;
		if (n == max) {
			*flags |= NMIPROF_RF_KSTACK_TRUNC;
			break;
		}
		buf[n++] = addr;
	}
	return n;
}

struct np_user_frame {
	u64 next_fp;
	u64 ret;
};

/*
 * Walk the user frame-pointer chain.  Frames must lie above the stack
 * pointer and move strictly upwards, which bounds the walk even on a
 * corrupted chain.
 */
static unsigned int np_user_stack(struct pt_regs *uregs, u64 *buf,
				  unsigned int max, u16 *flags)
{
	struct np_user_frame fr;
	unsigned long fp = uregs->bp;
	unsigned int n = 0;

	if (!max)
		return 0;
	buf[n++] = uregs->ip;
	while (fp >= uregs->sp && !(fp & 7)) {
		if (copy_from_user_nmi(&fr, (void __user *)fp, sizeof(fr))) {
			*flags |= NMIPROF_RF_USTACK_FAULT;
			break;
		}
		if (!fr.ret)
			break;
		if (n == max) {
			*flags |= NMIPROF_RF_USTACK_TRUNC;
			break;
		}
		buf[n++] = fr.ret;
		if (fr.next_fp <= fp)
			break;
		fp = fr.next_fp;
	}
	return n;
}

/* The user registers of current, or NULL if it has no user context. */
static struct pt_regs *np_user_regs(struct pt_regs *regs)
{
	struct pt_regs *uregs;

	if (user_mode(regs))
		uregs = regs;
	else if (current->mm && !(current->flags & NP_PF_NO_USER_STACK))
		uregs = task_pt_regs(current);
	else
		return NULL;
	/* 32-bit tasks would need a compat frame walk; not supported. */
	return user_64bit_mode(uregs) ? uregs : NULL;
}

void np_sample(struct pt_regs *regs, u16 flags)
{
	struct np_ring *r = np_ring_get(smp_processor_id());
	struct np_scratch *s = this_cpu_ptr(np_scratch);
	unsigned int nk = 0, nu = 0, raw = 0, nregs = 0;
	struct nmiprof_sample *rec;
	struct np_ring_handle h;
	struct pt_regs *uregs = NULL;
	u32 size, off;
	u64 seq;

	seq = np_ring_next_seq(r);
	if (in_nmi())
		flags |= NMIPROF_RF_IN_NMI;
	if (user_mode(regs))
		flags |= NMIPROF_RF_USER_MODE;
	else
		nk = np_kernel_stack(regs, s->kstack, np_sess.kstack_depth,
				     &flags);

	if (np_sess.user_stacks)
		uregs = np_user_regs(regs);
	if (uregs) {
		nu = np_user_stack(uregs, s->ustack, np_sess.ustack_depth,
				   &flags);
		if (np_sess.user_regs) {
			s->uregs.ip = uregs->ip;
			s->uregs.sp = uregs->sp;
			s->uregs.bp = uregs->bp;
			nregs = sizeof(s->uregs);
			raw = np_sess.ustack_bytes -
			      copy_from_user_nmi(s->raw,
						 (void __user *)uregs->sp,
						 np_sess.ustack_bytes);
			raw = round_down(raw, 8);
		}
	} else {
		flags |= NMIPROF_RF_NO_USTACK;
	}

	size = sizeof(*rec) + (nk + nu) * sizeof(u64) + nregs + raw;
	rec = np_ring_reserve(&h, r, size, seq);
	if (!rec)
		return;

	rec->hdr.common_type = NMIPROF_REC_SAMPLE;
	rec->hdr.common_flags = flags;
	rec->hdr.common_size = size;
	rec->seq = seq;
	rec->time_ns = ktime_get_mono_fast_ns();
	rec->ip = instruction_pointer(regs);
	rec->cpu = smp_processor_id();
	rec->pid = task_tgid_nr(current);
	rec->tid = task_pid_nr(current);
	rec->nr_kframes = nk;
	rec->nr_uframes = nu;
	/* A racing rename may tear comm; get_task_comm() would lock. */
	memcpy(rec->comm, current->comm, sizeof(rec->comm));
	rec->comm[sizeof(rec->comm) - 1] = '\0';

	off = sizeof(*rec);
	rec->kstack = NMIPROF_LOC(off, nk * sizeof(u64));
	memcpy((void *)rec + off, s->kstack, nk * sizeof(u64));
	off += nk * sizeof(u64);
	rec->ustack = NMIPROF_LOC(off, nu * sizeof(u64));
	memcpy((void *)rec + off, s->ustack, nu * sizeof(u64));
	off += nu * sizeof(u64);
	rec->uregs = NMIPROF_LOC(off, nregs);
	memcpy((void *)rec + off, &s->uregs, nregs);
	off += nregs;
	rec->ustack_raw = NMIPROF_LOC(off, raw);
	memcpy((void *)rec + off, s->raw, raw);

	np_ring_commit(&h);
}
