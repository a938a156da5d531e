// SPDX-License-Identifier: GPL-2.0
/*
 * The hard-lockup report, written by the CPU it is about.
 *
 * Only the stuck CPU can read its own registers and walk its own stack,
 * so the watchdog makes it report itself from NMI.  Nothing here sleeps,
 * allocates or takes a lock the stuck CPU could be holding:
 *
 *  - text is formatted into a per-CPU buffer, not on the small NMI stack;
 *  - symbols come from vsnprintf("%pS"), i.e. kallsyms_lookup_buildid():
 *    the core kernel's tables are read without locks, and module and BPF
 *    addresses are found through the mod_tree and bpf_tree latch trees,
 *    which exist precisely so that NMIs can search them (checked in 6.1
 *    and 6.12; ftrace_mod_address_lookup() walks an RCU list);
 *  - the record goes to the lockup queue (lockup_queue.c), which keeps
 *    it until the daemon has stored it;
 *  - every line goes to the polled UART writer, which gets out even when
 *    the console cannot, and to printk(), which from NMI only stores the
 *    text in the lockless ringbuffer for whoever flushes next;
 *  - the stack comes from the ORC unwinder, as perf's NMI callchains do.
 */
#include <linux/atomic.h>
#include <linux/delay.h>
#include <linux/percpu.h>
#include <linux/printk.h>
#include <linux/sched.h>
#include <linux/sched/clock.h>
#include <linux/sched/task_stack.h>
#include <linux/string.h>
#include <linux/timekeeping.h>
#include <asm/ptrace.h>
#include <asm/stacktrace.h>
#include <asm/unwind.h>
#include <nmiprof/nmiprof_abi.h>

#include "lockup_queue.h"
#include "lockup_report.h"
#include "nmi_uart.h"
#include "ring.h"
#include "session.h"
#include "stats.h"

#define NP_REPORT_FRAMES	NMIPROF_DEFAULT_FRAMES
#define NP_REPORT_LINE		256

struct np_report_buf {
	/* [0] for NMI, [1] for the recovery line an NMI may interrupt */
	char		line[2][NP_REPORT_LINE];
	u64		frames[NP_REPORT_FRAMES];
	u8		stack[NP_REPORT_FRAMES];	/* enum stack_type */
	struct pt_regs	entry;		/* see np_report_stack() */
	/* the LOCKUP record, [0] for NMI, [1] for the hrtimer's */
	u64		rec[2][NP_LQ_REC_MAX / sizeof(u64)];
};

static struct np_report_buf __percpu *np_report_bufs;

int np_report_init(void)
{
	np_report_bufs = alloc_percpu(struct np_report_buf);
	if (!np_report_bufs)
		return -ENOMEM;
	return np_uart_init();
}

void np_report_exit(void)
{
	np_uart_exit();
	free_percpu(np_report_bufs);
	np_report_bufs = NULL;
}

/*
 * One line to the UART and to printk.  The UART copy is prefixed the way
 * printk's console output is with CONFIG_PRINTK_CALLER, "[time][C<cpu>]",
 * so it lines up with the console's lines, says which CPU wrote it when
 * several report at once, and can be told from the printk copy that the
 * console may print later.
 */
static __printf(2, 3) void np_report_line(bool emerg, const char *fmt, ...)
{
	struct np_report_buf *b = this_cpu_ptr(np_report_bufs);
	char *line = b->line[in_nmi() ? 0 : 1];
	u64 ts = local_clock();
	unsigned long ns = do_div(ts, NSEC_PER_SEC);
	va_list args;
	int pre, len;

	pre = scnprintf(line, NP_REPORT_LINE, "[%5lu.%06lu][C%d] ",
			(unsigned long)ts, ns / NSEC_PER_USEC,
			smp_processor_id());
	va_start(args, fmt);
	len = pre + vscnprintf(line + pre, NP_REPORT_LINE - pre, fmt, args);
	va_end(args);
	if (line[len - 1] != '\n')	/* truncated */
		line[len - 1] = '\n';

	np_uart_write(line, len);
	if (emerg)
		pr_emerg("%s", line + pre);
	else
		pr_warn("%s", line + pre);
}

/*
 * The stack regs->sp is on.  Started from regs, the unwinder has already
 * stepped to the caller and knows the caller's stack: the same one,
 * unless regs is the first frame on an IRQ or exception stack, which
 * then goes unmarked rather than marked as the task's.
 */
static u8 np_report_regs_stack(struct pt_regs *regs,
			       struct unwind_state *state)
{
	unsigned long stack = (unsigned long)task_stack_page(current);

	if (regs->sp >= stack && regs->sp < stack + THREAD_SIZE)
		return STACK_TYPE_TASK;
	if (state->stack_info.type == STACK_TYPE_TASK)
		return STACK_TYPE_UNKNOWN;
	return state->stack_info.type;
}

/*
 * Append the callers of regs->ip; the unwinder starts at the caller's.
 * *@no_orc: regs->ip itself has no ORC data.  @stack[i] is the stack
 * (task, IRQ, exception) frame i was found on, for the <IRQ> markers;
 * @stack[n - 1] on entry is regs->sp's.
 */
static unsigned int np_report_unwind(struct pt_regs *regs, u64 *buf,
				     u8 *stack, unsigned int n,
				     unsigned int max, bool *no_orc)
{
	struct unwind_state state;
	unsigned long addr;

	unwind_start(&state, current, regs, NULL);
	*no_orc = unwind_error(&state);
	stack[n - 1] = np_report_regs_stack(regs, &state);
	for (; !unwind_done(&state) && n < max; unwind_next_frame(&state)) {
		addr = unwind_get_return_address(&state);
		if (!addr)
			break;
		stack[n] = state.stack_info.type;
		buf[n++] = addr;
	}
	return n;
}

/*
 * The interrupted kernel stack, innermost first, starting at regs->ip.
 * Frames from *@guessed on rest on the guess explained below.
 */
static unsigned int np_report_stack(struct pt_regs *regs, u64 *buf,
				    u8 *type, unsigned int max,
				    unsigned int *guessed)
{
	struct pt_regs *entry = &this_cpu_ptr(np_report_bufs)->entry;
	unsigned long *sp = (unsigned long *)regs->sp;
	void *stack = task_stack_page(current);
	unsigned int n, guess, slot;
	bool no_orc;

	*guessed = max;
	if (user_mode(regs))
		return 0;
	buf[0] = regs->ip;
	n = np_report_unwind(regs, buf, type, 1, max, &no_orc);
	if (n > 1 || n == max)
		return n;
	/*
	 * Nothing above regs->ip: its code has no ORC data, as the
	 * retpoline thunks (UNWIND_HINT_EMPTY in 6.1, _UNDEFINED in 6.12)
	 * that every indirect call goes through.  Such code is entered by
	 * a call, so try the return address at sp, and at sp + 8: inside
	 * a thunk, past its own inner call, sp holds the thunk's address
	 * (or the call's target) and the caller is one slot up.  A guess
	 * is kept only if the unwinder has ORC data for it and gets past
	 * it, i.e. it is kernel text with callers, and is marked "?" like
	 * the kernel's own guesses.  The unwinder checks every stack access.
	 */
	for (slot = 0; slot < 2; slot++, sp++) {
		if ((void *)sp < stack || (void *)(sp + 1) > stack + THREAD_SIZE)
			break;
		*entry = *regs;
		entry->ip = READ_ONCE_NOCHECK(*sp);
		entry->sp = (unsigned long)(sp + 1);
		buf[n] = entry->ip;
		guess = np_report_unwind(entry, buf, type, n + 1, max,
					 &no_orc);
		if (!no_orc && guess > n + 1) {
			*guessed = n;
			return guess;
		}
	}
	return n;
}

static void np_report_regs(struct pt_regs *regs)
{
	np_report_line(false, "RIP: %04x:%pS\n",
		       (unsigned int)regs->cs & 0xffff, (void *)regs->ip);
	np_report_line(false, "RSP: %04x:%016lx EFLAGS: %08lx\n",
		       (unsigned int)regs->ss & 0xffff, regs->sp, regs->flags);
	np_report_line(false, "RAX: %016lx RBX: %016lx RCX: %016lx\n",
		       regs->ax, regs->bx, regs->cx);
	np_report_line(false, "RDX: %016lx RSI: %016lx RDI: %016lx\n",
		       regs->dx, regs->si, regs->di);
	np_report_line(false, "RBP: %016lx R08: %016lx R09: %016lx\n",
		       regs->bp, regs->r8, regs->r9);
	np_report_line(false, "R10: %016lx R11: %016lx R12: %016lx\n",
		       regs->r10, regs->r11, regs->r12);
	np_report_line(false, "R13: %016lx R14: %016lx R15: %016lx\n",
		       regs->r13, regs->r14, regs->r15);
}

/* The kernel's names for the stacks (stack_type_name(), not exported). */
static const char *np_report_stack_name(u8 type)
{
	static const char * const estack[] = {
		"#DF", "NMI", "#DB", "#MC", "#VC", "#VC2",
	};

	switch (type) {
	case STACK_TYPE_TASK:
		return "TASK";
	case STACK_TYPE_IRQ:
		return "IRQ";
	case STACK_TYPE_SOFTIRQ:
		return "SOFTIRQ";
	case STACK_TYPE_ENTRY:
		return "ENTRY_TRAMPOLINE";
	}
	if (type >= STACK_TYPE_EXCEPTION &&
	    type - STACK_TYPE_EXCEPTION < ARRAY_SIZE(estack))
		return estack[type - STACK_TYPE_EXCEPTION];
	return NULL;
}

/*
 * What the NMI interrupted, from preempt_count: nmi_enter() adds a
 * HARDIRQ_OFFSET of its own per NMI level (6.1 and 6.12), so any more
 * is a hard interrupt handler.  current is then only the task it came
 * in on, not what is stuck.
 */
static const char *np_report_irq_context(void)
{
	if (hardirq_count() >> HARDIRQ_SHIFT > in_nmi() >> NMI_SHIFT)
		return "hardirq";
	if (in_serving_softirq())
		return "softirq";
	return NULL;
}

/*
 * Task, registers and symbolized backtrace; returns the frames taken.
 * Frames are grouped by the stack they were found on between <IRQ> and
 * </IRQ> (or <TASK>, <NMI>, ...) lines, as the kernel's own dumps are.
 */
static unsigned int np_report_context(struct pt_regs *regs, u64 *frames)
{
	u8 *type = this_cpu_ptr(np_report_bufs)->stack;
	const char *ctx = np_report_irq_context();
	const char *name, *open = NULL;
	unsigned int i, nr, guessed;

	if (ctx)
		np_report_line(false, "CPU: %d in %s, interrupted PID: %d Comm: %.*s\n",
			       smp_processor_id(), ctx, task_pid_nr(current),
			       (int)sizeof(current->comm), current->comm);
	else
		np_report_line(false, "CPU: %d PID: %d Comm: %.*s\n",
			       smp_processor_id(), task_pid_nr(current),
			       (int)sizeof(current->comm), current->comm);
	np_report_regs(regs);
	nr = np_report_stack(regs, frames, type, NP_REPORT_FRAMES, &guessed);
	if (!nr) {
		np_report_line(false, "Call Trace: <user mode>\n");
		return 0;
	}
	np_report_line(false, "Call Trace:\n");
	/* frames[0] is regs->ip itself; the rest are return addresses. */
	for (i = 0; i < nr; i++) {
		name = np_report_stack_name(type[i]);
		if (name != open) {
			if (open)
				np_report_line(false, " </%s>\n", open);
			if (name)
				np_report_line(false, " <%s>\n", name);
			open = name;
		}
		if (!i)
			np_report_line(false, " %pS\n", (void *)frames[0]);
		else
			np_report_line(false, " %s%pB\n",
				       i < guessed ? "" : "? ",
				       (void *)frames[i]);
	}
	if (open)
		np_report_line(false, " </%s>\n", open);
	return nr;
}

/*
 * Start a NMIPROF_REC_LOCKUP about @cpu in this CPU's record buffer for
 * this context: the NMI's, or the hrtimer's an NMI may interrupt.  With
 * @at_least, @stuck_ns is a lower bound, as the console lines say.
 */
static struct nmiprof_lockup *np_report_rec(int cpu, u32 nr, u64 stuck_ns,
					    bool at_least, u16 lockup_flags)
{
	struct nmiprof_lockup *rec =
		(void *)this_cpu_ptr(np_report_bufs)->rec[in_nmi() ? 0 : 1];
	u32 size = sizeof(*rec) + nr * sizeof(u64);

	memset(rec, 0, sizeof(*rec));
	rec->hdr.common_type = NMIPROF_REC_LOCKUP;
	rec->hdr.common_size = size;
	rec->time_ns = ktime_get_mono_fast_ns();
	rec->real_ns = ktime_get_real_fast_ns();
	rec->stuck_ns = stuck_ns;
	rec->cpu = cpu;
	rec->lockup_flags = lockup_flags | (at_least ? NMIPROF_LF_AT_LEAST : 0);
	rec->nr_kframes = nr;
	rec->kstack = NMIPROF_LOC(sizeof(*rec), size - sizeof(*rec));
	return rec;
}

/* Writers inside np_report_emit()'s ring copy on each CPU (nested: 2). */
static DEFINE_PER_CPU(atomic_t, np_report_copying);

/* How long np_report_ring_quiesce() lets a CPU finish its copy. */
#define NP_REPORT_QUIET_MS	100

/*
 * Into the lockup queue, where the daemon finds it whenever it runs.  A
 * session owner older than ABI 1.3 looks for it in this CPU's ring: a
 * copy goes there too while such a session runs (np_session_stop()
 * waits for it in np_report_ring_quiesce() before it touches the rings).
 */
static void np_report_emit(struct nmiprof_lockup *rec)
{
	atomic_t *copying = this_cpu_ptr(&np_report_copying);
	u32 size = rec->hdr.common_size;
	struct np_ring_handle h;
	struct nmiprof_lockup *copy;
	struct np_ring *r;
	u64 seq;

	np_lq_add(rec);
	if (rec->cpu != smp_processor_id())
		return;
	atomic_inc(copying);
	/* Pairs with smp_mb() in np_report_ring_quiesce(). */
	smp_mb__after_atomic();
	/* Pairs with smp_store_release() in np_session_start(). */
	if (!smp_load_acquire(&np_sess.ring_lockups))
		goto out;
	r = np_ring_get(rec->cpu);
	if (!r)
		goto out;
	seq = np_ring_next_seq(r);
	copy = np_ring_reserve(&h, r, size, seq);
	if (!copy)
		goto out;
	memcpy(copy, rec, size);
	copy->seq = seq;
	np_ring_commit(&h);
out:
	/* Pairs with atomic_read_acquire() in np_report_ring_quiesce(). */
	atomic_dec_return_release(copying);
}

/*
 * After np_sess.ring_lockups is cleared: wait until no CPU is inside a
 * ring copy, so the rings can be flushed or reset.  Bounded like
 * np_dispatch_stop(): false if a CPU is still copying after
 * NP_REPORT_QUIET_MS (stuck in NMI), and then its ring is not to be
 * touched.
 */
bool np_report_ring_quiesce(void)
{
	unsigned int cpu, ms = 0;

	/* Pairs with smp_mb__after_atomic() in np_report_emit(). */
	smp_mb();
	for_each_possible_cpu(cpu) {
		while (atomic_read_acquire(per_cpu_ptr(&np_report_copying,
						       cpu))) {
			if (ms++ >= NP_REPORT_QUIET_MS)
				return false;
			usleep_range(1000, 2000);
		}
	}
	return true;
}

/* The report as a record, for the daemon and `nmiprof lockups`. */
static void np_report_record(struct pt_regs *regs, u64 stuck_ns,
			     bool at_least, const u64 *frames, unsigned int nr)
{
	struct nmiprof_lockup *rec;
	struct nmiprof_regs *o;

	rec = np_report_rec(smp_processor_id(), nr, stuck_ns, at_least,
			    NMIPROF_LF_HARD);
	rec->hdr.common_flags = NMIPROF_RF_IN_NMI |
				(user_mode(regs) ? NMIPROF_RF_USER_MODE : 0);
	rec->pid = task_tgid_nr(current);
	rec->tid = task_pid_nr(current);
	memcpy(rec->comm, current->comm, sizeof(rec->comm));

	o = &rec->regs;
	o->r15 = regs->r15;	o->r14 = regs->r14;	o->r13 = regs->r13;
	o->r12 = regs->r12;	o->bp = regs->bp;	o->bx = regs->bx;
	o->r11 = regs->r11;	o->r10 = regs->r10;	o->r9 = regs->r9;
	o->r8 = regs->r8;	o->ax = regs->ax;	o->cx = regs->cx;
	o->dx = regs->dx;	o->si = regs->si;	o->di = regs->di;
	o->orig_ax = regs->orig_ax;
	o->ip = regs->ip;	o->cs = regs->cs;	o->flags = regs->flags;
	o->sp = regs->sp;	o->ss = regs->ss;

	memcpy(rec + 1, frames, nr * sizeof(u64));
	np_report_emit(rec);
}

/* What a report can say of a stuck time, see np_report_lockup(). */
static const char *np_at_least(bool at_least)
{
	return at_least ? "at least " : "";
}

void np_report_lockup(struct pt_regs *regs, u64 stuck_ns, bool at_least)
{
	u64 *frames = this_cpu_ptr(np_report_bufs)->frames;
	u64 secs = stuck_ns;
	u32 ms = do_div(secs, NSEC_PER_SEC) / NSEC_PER_MSEC;
	bool locked = np_uart_lock();
	unsigned int nr;

	np_report_line(true,
		       "nmiprof: hard LOCKUP on CPU %d, no timer interrupt for %s%llu.%03u s\n",
		       smp_processor_id(), np_at_least(at_least), secs, ms);
	nr = np_report_context(regs, frames);
	np_report_line(false, "nmiprof: end of CPU %d lockup report\n",
		       smp_processor_id());
	if (locked)
		np_uart_unlock();

	atomic64_inc(&this_cpu_ptr(&np_stats)->lockups);
	np_report_record(regs, stuck_ns, at_least, frames, nr);
}

void np_report_backtrace(struct pt_regs *regs, int lockup_cpu)
{
	u64 *frames = this_cpu_ptr(np_report_bufs)->frames;
	bool locked = np_uart_lock();

	np_report_line(false,
		       "nmiprof: backtrace of CPU %d (for the lockup on CPU %d)\n",
		       smp_processor_id(), lockup_cpu);
	np_report_context(regs, frames);
	np_report_line(false, "nmiprof: end of CPU %d backtrace\n",
		       smp_processor_id());
	if (locked)
		np_uart_unlock();
}

void np_report_recovered(u64 stuck_ns, bool at_least, pid_t pid, pid_t tid,
			 const char *comm)
{
	u64 secs = stuck_ns;
	u32 ms = do_div(secs, NSEC_PER_SEC) / NSEC_PER_MSEC;
	bool locked = np_uart_lock();
	struct nmiprof_lockup *rec;

	np_report_line(true, "nmiprof: CPU %d recovered after %s%llu.%03u s\n",
		       smp_processor_id(), np_at_least(at_least), secs, ms);
	if (locked)
		np_uart_unlock();

	rec = np_report_rec(smp_processor_id(), 0, stuck_ns, at_least,
			    NMIPROF_LF_HARD | NMIPROF_LF_RECOVERED);
	rec->pid = pid;
	rec->tid = tid;
	if (comm)
		memcpy(rec->comm, comm, sizeof(rec->comm));
	np_report_emit(rec);
}

void np_report_silent(int cpu, u64 stuck_ns, bool at_least)
{
	u64 secs = stuck_ns;
	u32 ms = do_div(secs, NSEC_PER_SEC) / NSEC_PER_MSEC;
	bool locked = np_uart_lock();

	np_report_line(true,
		       "nmiprof: hard LOCKUP on CPU %d, no timer interrupt for %s%llu.%03u s; it does not answer NMIs, no registers or backtrace\n",
		       cpu, np_at_least(at_least), secs, ms);
	if (locked)
		np_uart_unlock();
	atomic64_inc(&per_cpu_ptr(&np_stats, cpu)->lockups);
	np_report_emit(np_report_rec(cpu, 0, stuck_ns, at_least,
				     NMIPROF_LF_HARD | NMIPROF_LF_SILENT));
}
