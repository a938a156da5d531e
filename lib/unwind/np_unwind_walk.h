/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The unwinder's walk and the table validator (unwind_walk.c).  Written
 * to build unchanged in nmiprof.ko: kernel types, no libc, no allocation;
 * memory is reached only through the caller's callbacks.
 */
#ifndef NP_UNWIND_WALK_H
#define NP_UNWIND_WALK_H

#include <linux/types.h>
#include <nmiprof/nmiprof_unwind.h>

#ifndef __always_inline
#define __always_inline inline __attribute__((__always_inline__))
#endif

struct np_uw_ops {
	/*
	 * The table for the object mapped at ip and the bias to its ELF
	 * vaddrs (vaddr = ip - *bias).  Returns 0 with a table,
	 * NMIPROF_UW_STOP_NO_TABLE for executable memory without one (JIT
	 * code, an object not compiled yet), NMIPROF_UW_STOP_UNMAPPED when
	 * ip is in no executable mapping.
	 */
	int (*find)(void *ctx, __u64 ip, const struct nmiprof_uw_table **t,
		    __u64 *bias);
	/* 8 bytes of user stack at addr (the walker checked the window). */
	int (*read)(void *ctx, __u64 addr, __u64 *val);
};

struct np_uw_regs {
	__u64 ip, sp, bp;
};

/*
 * Walk from regs: frames[0] = regs->ip, then one return address per
 * frame, at most max in all.  Every stack read is inside [lo, hi); each
 * frame's sp is above the last one's, so the walk ends.  Returns why it
 * ended (enum nmiprof_uw_stop); *nr is the frames written.
 */
int np_uw_walk(const struct np_uw_ops *ops, void *ctx,
	       const struct np_uw_regs *regs, __u64 lo, __u64 hi,
	       __u64 *frames, unsigned int max, unsigned int *nr);

/*
 * Check a table of len bytes before it is used: header, exact size,
 * sorted rows inside the covered range, known kinds, offsets that move
 * the stack pointer up within NMIPROF_UW_MAX_CFA_OFF.  Returns 0, or
 * -1 with *why set to a static string.
 */
int np_uw_validate(const void *buf, __u64 len, const char **why);

/* The row covering vaddr, or NULL (outside the table). */
const struct nmiprof_uw_row *np_uw_find_row(const struct nmiprof_uw_table *t,
					     __u64 vaddr);

#endif /* NP_UNWIND_WALK_H */
