// SPDX-License-Identifier: GPL-2.0
/*
 * The walk over compiled unwind tables, mixing table rows and frame
 * pointers frame by frame, and the validator every table passes first.
 *
 * One implementation for both sides: the libperf backend runs it on the
 * stack copied with each sample, nmiprof.ko from NMI on the live user
 * stack (kmod/unwind_user.c includes this file).  Hence kernel types, no
 * libc, no allocation, and termination that does not depend on the
 * tables: each frame's sp is strictly above the previous one and inside
 * [lo, hi).
 */
#include "np_unwind_walk.h"

static inline const struct nmiprof_uw_row *
rows_of(const struct nmiprof_uw_table *t)
{
	return (const struct nmiprof_uw_row *)(t + 1);
}

const struct nmiprof_uw_row *np_uw_find_row(const struct nmiprof_uw_table *t,
					     __u64 vaddr)
{
	const struct nmiprof_uw_row *r = rows_of(t);
	__u32 lo = 0, hi = t->nr_rows;
	__u64 off;

	if (vaddr < t->base || vaddr - t->base >= t->size || !hi)
		return 0;
	off = vaddr - t->base;
	if (off < r[0].pc)
		return 0;
	/* the last row whose pc <= off */
	while (hi - lo > 1) {
		__u32 mid = lo + (hi - lo) / 2;

		if (r[mid].pc <= off)
			lo = mid;
		else
			hi = mid;
	}
	return &r[lo];
}

/* 8 bytes at addr if they lie in [lo, hi); 0 or -1. */
static __always_inline int rd(const struct np_uw_ops *ops, void *ctx,
			      __u64 lo, __u64 hi, __u64 addr, __u64 *val)
{
	if (addr < lo || addr > hi || hi - addr < 8)
		return -1;
	return ops->read(ctx, addr, val);
}

/*
 * The walk itself, inlined where it is called: a caller that includes
 * this file and passes constant ops (nmiprof.ko's NMI path) gets its
 * find() and read() inlined too, instead of two indirect calls a frame.
 */
static __always_inline int uw_walk(const struct np_uw_ops *ops, void *ctx,
				   const struct np_uw_regs *regs, __u64 lo,
				   __u64 hi, __u64 *frames, unsigned int max,
				   unsigned int *nr)
{
	__u64 ip = regs->ip, sp = regs->sp, bp = regs->bp;
	int exact = 1;		/* ip is not a return address: look it up as is */
	unsigned int n = 0;
	/* the last row and the offsets it covers: recursion repeats pcs */
	const struct nmiprof_uw_table *lt = 0;
	const struct nmiprof_uw_row *lrow = 0;
	__u64 lfrom = 0, lto = 0;

	*nr = 0;
	if (!max)
		return NMIPROF_UW_STOP_DEPTH;
	frames[n++] = ip;
	for (;;) {
		const struct nmiprof_uw_table *t = 0;
		const struct nmiprof_uw_row *row = 0;
		__u64 bias = 0, pc = exact ? ip : ip - 1;
		__u64 nip, nsp, nbp = bp, cfa;
		int kind = NMIPROF_UW_NONE, found;

		found = ops->find(ctx, pc, &t, &bias);
		if (found == NMIPROF_UW_STOP_UNMAPPED) {
			/* a return address into no code is no frame */
			*nr = n > 1 ? n - 1 : n;
			return NMIPROF_UW_STOP_UNMAPPED;
		}
		if (found == 0 && t == lt && pc - bias >= lfrom && pc - bias < lto) {
			row = lrow;
		} else if (found == 0) {
			row = np_uw_find_row(t, pc - bias);
			if (row) {
				lt = t;
				lrow = row;
				lfrom = t->base + row->pc;
				lto = row + 1 < rows_of(t) + t->nr_rows ?
				      t->base + row[1].pc : t->base + t->size;
			}
		}
		if (row)
			kind = row->info & NMIPROF_UW_KIND_MASK;
		exact = 0;

		switch (kind) {
		case NMIPROF_UW_CFA:
			cfa = ((row->info & NMIPROF_UW_CFA_RBP) ? bp : sp) +
			      row->cfa_off;
			if (rd(ops, ctx, lo, hi, cfa + t->ra_off, &nip))
				goto window;
			if (row->rbp_off &&
			    rd(ops, ctx, lo, hi, cfa + 8 * (__s64)row->rbp_off, &nbp))
				goto window;
			nsp = cfa;
			break;
		case NMIPROF_UW_PLT:
			cfa = sp + (((pc - bias) & 15) >= 11 ? 16 : 8);
			if (rd(ops, ctx, lo, hi, cfa - 8, &nip))
				goto window;
			nsp = cfa;
			break;
		case NMIPROF_UW_SIGNAL:
			if (rd(ops, ctx, lo, hi, sp + NMIPROF_UW_SIG_RIP, &nip) ||
			    rd(ops, ctx, lo, hi, sp + NMIPROF_UW_SIG_RSP, &nsp) ||
			    rd(ops, ctx, lo, hi, sp + NMIPROF_UW_SIG_RBP, &nbp))
				goto window;
			exact = 1;	/* the interrupted pc, not a return */
			break;
		case NMIPROF_UW_END:
			*nr = n;
			return NMIPROF_UW_STOP_END;
		default:
			/*
			 * Frame pointers: rbp must point into the window above
			 * sp, else this frame is one the tables do not cover
			 * and rbp does not describe.
			 */
			if (bp < sp || rd(ops, ctx, lo, hi, bp, &nbp) ||
			    rd(ops, ctx, lo, hi, bp + 8, &nip)) {
				*nr = n;
				return NMIPROF_UW_STOP_NO_TABLE;
			}
			nsp = bp + 16;
			break;
		}
		if (nsp <= sp) {
			*nr = n;
			return NMIPROF_UW_STOP_BAD_ROW;
		}
		if (nsp > hi) {
			*nr = n;
			return NMIPROF_UW_STOP_WINDOW;
		}
		if (!nip) {		/* a zeroed return address ends the chain */
			*nr = n;
			return NMIPROF_UW_STOP_END;
		}
		if (n >= max) {
			*nr = n;
			return NMIPROF_UW_STOP_DEPTH;
		}
		frames[n++] = nip;
		ip = nip;
		sp = nsp;
		bp = nbp;
	}
window:
	*nr = n;
	return NMIPROF_UW_STOP_WINDOW;
}

int np_uw_walk(const struct np_uw_ops *ops, void *ctx,
	       const struct np_uw_regs *regs, __u64 lo, __u64 hi,
	       __u64 *frames, unsigned int max, unsigned int *nr)
{
	return uw_walk(ops, ctx, regs, lo, hi, frames, max, nr);
}

int np_uw_validate(const void *buf, __u64 len, const char **why)
{
	const struct nmiprof_uw_table *t = buf;
	const struct nmiprof_uw_row *r;
	__u32 i;

#define BAD(s) do { *why = s; return -1; } while (0)
	if (len < sizeof(*t))
		BAD("truncated header");
	if (t->magic != NMIPROF_UW_MAGIC)
		BAD("not an unwind table (bad magic)");
	if (t->version != NMIPROF_UW_VERSION)
		BAD("unsupported table version");
	if (t->hdr_size != sizeof(*t) || t->row_size != sizeof(*r))
		BAD("header or row size of another layout");
	if (t->nr_rows > NMIPROF_UW_MAX_ROWS)
		BAD("too many rows");
	if (len != sizeof(*t) + (__u64)t->nr_rows * sizeof(*r))
		BAD("size does not match the row count (truncated?)");
	if (t->ra_off >= 0 || t->ra_off < -64 || (t->ra_off & 7))
		BAD("return address offset not a slot below the CFA");
	if (t->build_id_size > sizeof(t->build_id))
		BAD("build-id too long");
	r = rows_of(t);
	for (i = 0; i < t->nr_rows; i++) {
		int kind = r[i].info & NMIPROF_UW_KIND_MASK;

		if (i && r[i].pc <= r[i - 1].pc)
			BAD("rows not sorted (overlapping ranges)");
		if (r[i].pc >= t->size)
			BAD("row outside the covered range");
		if (kind >= NMIPROF_UW_NR_KINDS || (r[i].info & ~0x1f))
			BAD("unknown row kind");
		if (kind != NMIPROF_UW_CFA)
			continue;
		if (r[i].cfa_off > NMIPROF_UW_MAX_CFA_OFF)
			BAD("CFA offset too large");
		/*
		 * The RA slot must lie above the register the CFA is
		 * taken from, or the frame could end where it began: a
		 * CFA of rsp + 0 refers to itself.
		 */
		if ((int)r[i].cfa_off + t->ra_off < 0 ||
		    ((r[i].info & NMIPROF_UW_CFA_RBP) && r[i].cfa_off < 16))
			BAD("CFA does not lie above its base register");
		if (r[i].rbp_off > 0 || -8 * (int)r[i].rbp_off > r[i].cfa_off)
			BAD("rbp saved outside the frame");
	}
	return 0;
#undef BAD
}
