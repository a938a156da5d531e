// SPDX-License-Identifier: GPL-2.0
/*
 * The sampler: what one NMI records about the context it interrupted.
 *
 * Kernel stack: the ORC unwinder through its exported API, exactly as
 * arch_stack_walk() and perf_callchain_kernel() do it from NMI context.
 * User stack: frame pointers from the user registers (the NMI's own if it
 * hit user mode, else task_pt_regs(current)), read only through
 * copy_from_user_nmi(), which refuses when the current mm isn't loaded and
 * never sleeps; a window of stack is copied at a time and the frames
 * inside it are read from the copy (see np_uwin_fill()).  A process the
 * daemon gave unwind tables is walked with them instead (unwind_user.c).
 * 32-bit (ia32) tasks have 4-byte frames, walked the same way, as
 * perf_callchain_user32() does.  Kernel threads and user workers have no
 * user stack.
 *
 * The record is written in place: the ring reservation is for the most
 * the configured depths can need, the walks write their frames straight
 * into it, and the unused end is given back (np_ring_trim()).  Copying
 * the frames from a scratch area instead cost a memcpy() of every frame
 * per sample.  A full ring is known before any stack is walked.  No locks,
 * no allocation, no printk; the walks are bounded by the configured
 * depths.
 */
#include <linux/percpu.h>
#include <linux/hardirq.h>
#include <linux/sched.h>
#include <linux/sched/task_stack.h>
#include <linux/string.h>
#include <linux/ktime.h>
#include <linux/uaccess.h>
#include <asm/ptrace.h>
#include <asm/segment.h>
#include <asm/unwind.h>

#include "compat.h"
#include "ring.h"
#include "sample.h"
#include "session.h"
#include "unwind.h"

/*
 * Bytes of user stack np_uwin_fill() copies at once.  Every
 * copy_from_user_nmi() call pays a fixed price (access_ok,
 * nmi_uaccess_okay, pagefault_disable/enable, the copy's setup), and a
 * caller's frame is usually within a few hundred bytes of its callee's,
 * so one copy serves several frames.  256 got nearly all of the gain in
 * bench_kmod without copying much that large frames would not use.
 */
#define NP_UWIN_BYTES		256

/*
 * The copy of user stack the current walk reads its frames from: buf[0]
 * was at user address @base, and every frame that starts below @end lies
 * in it entirely.  Empty: @end is 0.
 */
struct np_uwin {
	unsigned long	base;
	unsigned long	end;
	u8		*buf;
};

/* The user stack window, one per CPU; the latch guarantees one user. */
struct np_scratch {
	u64			uwin[NP_UWIN_BYTES / sizeof(u64)];
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

/*
 * Refill the window starting at the frame at @fp, @frame bytes long.  The
 * refill stops at the end of @fp's page (but always covers the frame
 * itself, which may straddle two pages), so it reads no page the
 * frame-by-frame walk would not, and a non-resident page further up costs
 * nothing until the chain actually reaches it.  A faulting
 * copy_from_user_nmi() still returns what it copied before the fault, so
 * a short window is usable as far as it goes; only a frame that cannot be
 * copied whole is a fault.  Out of line: most frames need no refill.
 */
static noinline int np_uwin_fill(struct np_uwin *w, unsigned long fp,
				 unsigned long frame)
{
	unsigned long n, len;

	n = min_t(unsigned long, NP_UWIN_BYTES,
		  PAGE_SIZE - offset_in_page(fp));
	n = max(n, frame);
	len = n - copy_from_user_nmi(w->buf, (void __user *)fp, n);
	if (len < frame)
		return -EFAULT;
	/* No wrap: copy_from_user_nmi() copies only below TASK_SIZE_MAX. */
	w->base = fp;
	w->end = fp + len - frame + 1;
	return 0;
}

/*
 * Walk the user frame-pointer chain.  Each frame is the caller's frame
 * pointer, then the return address, each one user word (8 bytes, or 4 in
 * a 32-bit task, whose addresses are the low halves of its registers, as
 * compat_ptr() takes them).  Frames must be word aligned, lie above the
 * stack pointer and move strictly upwards, which bounds the walk even on
 * a corrupted chain, and means a frame is never below the window's base
 * (an earlier frame): only its end needs checking.  Inlined once per word
 * size, so the per-frame loop has no word-size tests: it is most of the
 * cost of a deep stack.  @win is the per-CPU window np_uwin_fill() copies
 * into.
 */
static __always_inline unsigned int np_user_walk(struct pt_regs *uregs,
						 u64 *buf, unsigned int max,
						 u16 *flags, void *win,
						 const bool ia32)
{
	const unsigned long word = ia32 ? sizeof(u32) : sizeof(u64);
	const unsigned long mask = ia32 ? U32_MAX : ULONG_MAX;
	unsigned long fp = uregs->bp & mask, sp = uregs->sp & mask;
	struct np_uwin w = { .buf = win };
	unsigned long next, ret;
	unsigned int n = 0;

	buf[n++] = uregs->ip & mask;
	while (fp >= sp && !(fp & (word - 1))) {
		if (fp >= w.end && np_uwin_fill(&w, fp, 2 * word)) {
			*flags |= NMIPROF_RF_USTACK_FAULT;
			break;
		}
		/* Aligned: @fp and @base are multiples of @word. */
		if (ia32) {
			const u32 *f = (const u32 *)(w.buf + (fp - w.base));

			next = f[0];
			ret = f[1];
		} else {
			const u64 *f = (const u64 *)(w.buf + (fp - w.base));

			next = f[0];
			ret = f[1];
		}
		if (!ret)
			break;
		if (n == max) {
			*flags |= NMIPROF_RF_USTACK_TRUNC;
			break;
		}
		buf[n++] = ret;
		if (next <= fp)
			break;
		fp = next;
	}
	return n;
}

static unsigned int np_user_stack(struct pt_regs *uregs, u64 *buf,
				  unsigned int max, u16 *flags, void *win)
{
	int n;

	if (!max)
		return 0;
	if (user_64bit_mode(uregs)) {
		/* the process's unwind tables, where it has any */
		n = np_uw_user_stack(uregs, buf, max, flags);
		if (n >= 0)
			return n;
		return np_user_walk(uregs, buf, max, flags, win, false);
	}
	return np_user_walk(uregs, buf, max, flags, win, true);
}

/*
 * The user registers of current, or NULL if it has no user context we
 * can walk.  A 32-bit task is walked only in the flat segments every
 * ia32 program gets: with an LDT code or stack segment (Wine, DOS
 * emulators) ip, sp and bp are offsets from bases we do not look up.
 */
static struct pt_regs *np_user_regs(struct pt_regs *regs)
{
	struct pt_regs *uregs;

	if (user_mode(regs))
		uregs = regs;
	else if (current->mm && !(current->flags & NP_PF_NO_USER_STACK))
		uregs = task_pt_regs(current);
	else
		return NULL;
	if (user_64bit_mode(uregs))
		return uregs;
	return uregs->cs == __USER32_CS && uregs->ss == __USER_DS ?
	       uregs : NULL;
}

void np_sample(struct pt_regs *regs, u16 flags, u64 time_ns)
{
	struct np_ring *r = np_ring_get(smp_processor_id());
	unsigned int nk = 0, nu = 0, raw = 0, nregs = 0;
	struct pt_regs *uregs = NULL;
	struct nmiprof_sample *rec;
	struct np_ring_handle h;
	u32 size, off;
	u64 seq;
	void *p;

	if (unlikely(!r))	/* no session has made the rings yet */
		return;
	if (in_nmi())
		flags |= NMIPROF_RF_IN_NMI;
	if (user_mode(regs))
		flags |= NMIPROF_RF_USER_MODE;
	else
		nk = np_sess.kstack_depth;
	if (np_sess.user_stacks)
		uregs = np_user_regs(regs);
	if (uregs) {
		nu = np_sess.ustack_depth;
		/*
		 * The registers and raw stack are for a 64-bit DWARF unwinder;
		 * the record has no word size to tell it a 32-bit stack.
		 */
		if (np_sess.user_regs && user_64bit_mode(uregs)) {
			nregs = sizeof(struct nmiprof_uregs);
			raw = np_sess.ustack_bytes;
		}
	} else {
		flags |= NMIPROF_RF_NO_USTACK;
	}

	/* The most this sample can take; np_ring_trim() returns the rest. */
	seq = np_ring_next_seq(r);
	size = sizeof(*rec) + (nk + nu) * sizeof(u64) + nregs + raw;
	rec = np_ring_reserve(&h, r, size, seq);
	if (!rec)
		return;

	off = sizeof(*rec);
	p = (void *)rec + off;
	nk = np_kernel_stack(regs, p, nk, &flags);
	rec->kstack = NMIPROF_LOC(off, nk * sizeof(u64));
	off += nk * sizeof(u64);
	p = (void *)rec + off;
	if (uregs)
		nu = np_user_stack(uregs, p, nu, &flags,
				   this_cpu_ptr(np_scratch)->uwin);
	rec->ustack = NMIPROF_LOC(off, nu * sizeof(u64));
	off += nu * sizeof(u64);
	p = (void *)rec + off;
	if (nregs) {
		struct nmiprof_uregs *ur = p;

		ur->ip = uregs->ip;
		ur->sp = uregs->sp;
		ur->bp = uregs->bp;
		raw -= copy_from_user_nmi(p + nregs, (void __user *)uregs->sp,
					  raw);
		raw = round_down(raw, 8);
	}
	rec->uregs = NMIPROF_LOC(off, nregs);
	off += nregs;
	rec->ustack_raw = NMIPROF_LOC(off, raw);
	size = off + raw;
	np_ring_trim(&h, size);

	rec->hdr.common_type = NMIPROF_REC_SAMPLE;
	rec->hdr.common_flags = flags;
	rec->hdr.common_size = size;
	rec->seq = seq;
	rec->time_ns = time_ns;
	rec->ip = instruction_pointer(regs);
	rec->cpu = smp_processor_id();
	rec->pid = task_tgid_nr(current);
	rec->tid = task_pid_nr(current);
	rec->nr_kframes = nk;
	rec->nr_uframes = nu;
	/* A racing rename may tear comm; get_task_comm() would lock. */
	memcpy(rec->comm, current->comm, sizeof(rec->comm));
	rec->comm[sizeof(rec->comm) - 1] = '\0';

	np_ring_commit(&h);
}
