/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 * Compiled unwind tables: one per ELF object, built in userspace from its
 * call-frame information (lib/unwind/unwind_compile.c) and read by the
 * walker (lib/unwind/unwind_walk.c), which the libperf backend runs on
 * copied stacks and nmiprof.ko is meant to run from NMI.  The same bytes
 * are the on-disk cache format and the payload the daemon will hand to
 * the module; docs/unwind-tables.md compares them with SFrame v2 and the
 * OpenTelemetry profiler's stack deltas.
 *
 * A table is a header and nr_rows rows sorted by strictly increasing pc.
 * Row i covers ELF virtual addresses [base + pc_i, base + pc_{i+1}); the
 * last row ends at base + size.  A gap between functions is a row of kind
 * NMIPROF_UW_NONE.  The return address is at CFA + ra_off for every row
 * (x86_64's call pushes it at CFA - 8, as SFrame's fixed RA offset);
 * a CFI row that says otherwise compiles to NMIPROF_UW_FP.
 *
 * Little-endian, naturally aligned, no pointers: usable as it lies in a
 * file, a mapping or a kernel buffer once nmiprof_uw_validate() (in the
 * walker) accepted it.
 */
#ifndef _NMIPROF_UNWIND_H
#define _NMIPROF_UNWIND_H

#include <linux/types.h>

#define NMIPROF_UW_MAGIC	0x5755504eU	/* "NPUW" */
#define NMIPROF_UW_VERSION	1

/* Row kinds: what to do at a pc in the row's range. */
enum nmiprof_uw_kind {
	NMIPROF_UW_CFA = 0,	/* CFA = (rsp|rbp) + cfa_off; RA, rbp from it */
	NMIPROF_UW_NONE,	/* no CFI here: fall back to frame pointers */
	/*
	 * CFI the rows can't express (DWARF expression, other register,
	 * offset too large): fall back to frame pointers for this frame.
	 */
	NMIPROF_UW_FP,
	NMIPROF_UW_END,		/* RA undefined: outermost frame (_start) */
	/*
	 * x86_64 rt_sigreturn trampoline: the interrupted registers are in
	 * the sigcontext at rsp (NMIPROF_UW_SIG_*).
	 */
	NMIPROF_UW_SIGNAL,
	/* lazy-binding .plt: CFA = rsp + 8, or + 16 when (pc & 15) >= 11 */
	NMIPROF_UW_PLT,
	NMIPROF_UW_NR_KINDS
};

/* info: bits 0-3 the kind, bit 4 the CFA base register. */
#define NMIPROF_UW_KIND_MASK	0x0f
#define NMIPROF_UW_CFA_RBP	0x10	/* else rsp */

/* Where rbp is: rbp_off == 0 keeps the caller's rbp as it is. */
struct nmiprof_uw_row {
	__u32 pc;		/* from nmiprof_uw_table.base */
	__u16 cfa_off;		/* bytes added to the CFA's base register */
	__u8 info;
	__s8 rbp_off;		/* rbp saved at CFA + 8 * rbp_off; 0: not saved */
};

struct nmiprof_uw_table {
	__u32 magic;		/* NMIPROF_UW_MAGIC */
	__u16 version;		/* NMIPROF_UW_VERSION */
	__u16 hdr_size;		/* sizeof(struct nmiprof_uw_table) */
	__u32 row_size;		/* sizeof(struct nmiprof_uw_row) */
	__u32 nr_rows;
	__u64 base;		/* ELF vaddr the rows' pcs count from */
	__u32 size;		/* bytes of vaddr covered from base */
	__s16 ra_off;		/* -8 on x86_64 */
	__u8 build_id_size;	/* of the object, 0 if it has none */
	__u8 flags;		/* NMIPROF_UWF_* */
	__u8 build_id[20];
	__u32 crc;		/* crc32c of the rows (cache files; 0: unchecked) */
	/* struct nmiprof_uw_row rows[nr_rows] follows */
};

#define NMIPROF_UWF_DEBUG_FRAME	0x01	/* .debug_frame (or a debug file) used */

/* Offsets in the rt_sigframe at rsp when __restore_rt runs (x86_64). */
#define NMIPROF_UW_SIG_RBP	120	/* uc.uc_mcontext.rbp */
#define NMIPROF_UW_SIG_RSP	160
#define NMIPROF_UW_SIG_RIP	168

/* Limits the validator enforces, so that no row can stretch a walk. */
#define NMIPROF_UW_MAX_ROWS	(1U << 24)
#define NMIPROF_UW_MAX_CFA_OFF	(1U << 14)	/* 16 KiB: larger is NMIPROF_UW_FP */

/*
 * Why a walk stopped.  END is a clean stop (outermost frame); every other
 * reason is shown as a marker frame and counted.
 */
enum nmiprof_uw_stop {
	NMIPROF_UW_STOP_END = 0,
	NMIPROF_UW_STOP_NO_TABLE,	/* no table, and frame pointers led nowhere */
	NMIPROF_UW_STOP_UNMAPPED,	/* pc in no executable mapping */
	NMIPROF_UW_STOP_DEPTH,		/* the configured depth was reached */
	NMIPROF_UW_STOP_WINDOW,		/* a read fell outside the stack window */
	NMIPROF_UW_STOP_BAD_ROW,	/* a row gave a CFA that does not go up */
	NMIPROF_UW_STOP_NR
};

/*
 * A user frame value that stands for a stop reason in nmiprof's frame
 * arrays: above every user address, so never a return address.
 */
#define NMIPROF_UW_MARK_BASE	0xffffffffffffff00ULL
#define NMIPROF_UW_MARK(reason)	(NMIPROF_UW_MARK_BASE + (reason))

#endif /* _NMIPROF_UNWIND_H */
