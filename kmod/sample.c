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
 * inside it are read from the copy (see np_user_frame()).  32-bit (ia32)
 * tasks have 4-byte frames, walked the same way, as perf_callchain_user32()
 * does.  Kernel threads and user workers have no user stack.
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
#include <asm/segment.h>
#include <asm/unwind.h>

#include "compat.h"
#include "ring.h"
#include "sample.h"
#include "session.h"

/*
 * Bytes of user stack np_user_frame() copies at once.  Every
 * copy_from_user_nmi() call pays a fixed price (access_ok,
 * nmi_uaccess_okay, pagefault_disable/enable, the copy routine's setup),
 * and a caller's frame is usually within a few hundred bytes of its
 * callee's, so one copy serves several frames.  Measured under QEMU icount
 * (tests/qemu/scenarios/bench_kmod.sh, 32 frames of 16 bytes), the
 * handler went from ~6,200 instructions per sample with one 16-byte copy
 * per frame to 5,318, 5,188 and 5,123 with 128, 256 and 512-byte windows:
 * 256 gets nearly all of the gain while copying less that a program with
 * large frames would not use.
 */
#define NP_UWIN_BYTES		256

/* One per CPU; the latch guarantees a single user at a time. */
struct np_scratch {
	u64			kstack[NMIPROF_MAX_FRAMES];
	u64			ustack[NMIPROF_MAX_FRAMES];
	u64			uwin[NP_UWIN_BYTES / sizeof(u64)];
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

/*
 * The copy of user stack the current walk reads its frames from: @len
 * bytes that were at user address @base.
 */
struct np_uwin {
	unsigned long	base;
	unsigned long	len;
	u8		*buf;
};

/*
 * One user frame at @fp: the caller's frame pointer, then the return
 * address, each one user word (8 bytes, or 4 in a 32-bit task).
 *
 * A frame the window holds entirely is read from it; otherwise the window
 * is refilled starting at @fp.  The refill stops at the end of @fp's page
 * (but always covers the frame itself, which may straddle two pages), so
 * it reads no page the frame-by-frame walk would not, and a non-resident
 * page further up costs nothing until the chain actually reaches it.  A
 * faulting copy_from_user_nmi() still returns what it copied before the
 * fault, so a short window is usable as far as it goes; only a frame
 * that cannot be copied whole is a fault.
 */
static int np_user_frame(struct np_uwin *w, unsigned long fp, bool ia32,
			 unsigned long *next, unsigned long *ret)
{
	unsigned long frame = ia32 ? 2 * sizeof(u32) : 2 * sizeof(u64);
	unsigned long n;
	const u8 *p;

	/* Written not to wrap, whatever a corrupted chain puts in @fp. */
	if (fp < w->base || w->len < frame || fp - w->base > w->len - frame) {
		n = min_t(unsigned long, NP_UWIN_BYTES,
			  PAGE_SIZE - offset_in_page(fp));
		n = max(n, frame);
		w->base = fp;
		w->len = n - copy_from_user_nmi(w->buf, (void __user *)fp, n);
		if (w->len < frame)
			return -EFAULT;
	}
	p = w->buf + (fp - w->base);
	if (ia32) {
		u32 fr[2];

		memcpy(fr, p, sizeof(fr));
		*next = fr[0];
		*ret = fr[1];
	} else {
		u64 fr[2];

		memcpy(fr, p, sizeof(fr));
		*next = fr[0];
		*ret = fr[1];
	}
	return 0;
}

/*
 * Walk the user frame-pointer chain.  Frames must be word aligned, lie
 * above the stack pointer and move strictly upwards, which bounds the walk
 * even on a corrupted chain.  A 32-bit task's addresses are the low
 * halves of its registers (as compat_ptr() takes them).  @win is the
 * per-CPU window np_user_frame() copies into.
 */
static unsigned int np_user_stack(struct pt_regs *uregs, u64 *buf,
				  unsigned int max, u16 *flags, void *win)
{
	bool ia32 = !user_64bit_mode(uregs);
	unsigned long mask = ia32 ? U32_MAX : ULONG_MAX;
	unsigned long word = ia32 ? 4 : 8;
	unsigned long fp = uregs->bp & mask, sp = uregs->sp & mask;
	struct np_uwin w = { .buf = win };	/* empty: len 0 */
	unsigned long next, ret;
	unsigned int n = 0;

	if (!max)
		return 0;
	buf[n++] = uregs->ip & mask;
	while (fp >= sp && !(fp & (word - 1))) {
		if (np_user_frame(&w, fp, ia32, &next, &ret)) {
			*flags |= NMIPROF_RF_USTACK_FAULT;
			break;
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
				   &flags, s->uwin);
		/*
		 * The registers and raw stack are for a 64-bit DWARF unwinder;
		 * the record has no word size to tell it a 32-bit stack.
		 */
		if (np_sess.user_regs && user_64bit_mode(uregs)) {
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
