// SPDX-License-Identifier: GPL-2.0
/*
 * An ELF object's call-frame information -> a compact unwind table
 * (nmiprof_unwind.h).  libdw interprets the CFI (dwarf_cfi_addrframe()
 * gives the rules at a pc and the range they hold for); this file only
 * walks the object's executable sections range by range and says which
 * rules a row can carry.  .eh_frame first, then .debug_frame of the
 * file itself or of its debug file under /usr/lib/debug/.build-id.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <dwarf.h>
#include <gelf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwelf.h>
#include "np_unwind_impl.h"
#include "np_crc32c.h"

#define REG_RBP		6
#define REG_RSP		7
#define REG_RA		16	/* DWARF x86_64: the return address column */

/* One source of CFI and the sorted pcs where its FDEs start. */
struct cfisrc {
	Dwarf_CFI *cfi;
	uint64_t *starts;
	size_t nr_starts;
};

struct rowvec {
	struct { uint64_t pc; struct nmiprof_uw_row r; } *v;
	size_t nr, cap;
};

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static Elf_Scn *find_scn(Elf *elf, const char *name, GElf_Shdr *sh)
{
	size_t shstrndx;
	Elf_Scn *scn = NULL;

	if (elf_getshdrstrndx(elf, &shstrndx) < 0)
		return NULL;
	while ((scn = elf_nextscn(elf, scn)) != NULL) {
		const char *n;

		if (!gelf_getshdr(scn, sh))
			continue;
		n = elf_strptr(elf, shstrndx, sh->sh_name);
		if (n && !strcmp(n, name))
			return scn;
	}
	return NULL;
}

/*
 * FDE starts of .eh_frame from .eh_frame_hdr's binary-search table: GNU
 * ld always writes it as datarel sdata4 (DW_EH_PE_datarel|sdata4), which
 * is all this reads; anything else leaves the list empty and the scan
 * steps through gaps instead.
 */
static void eh_starts(Elf *elf, struct cfisrc *s)
{
	GElf_Shdr sh;
	Elf_Scn *scn = find_scn(elf, ".eh_frame_hdr", &sh);
	Elf_Data *d = scn ? elf_getdata(scn, NULL) : NULL;
	const uint8_t *p;
	int32_t cnt;

	if (!d || d->d_size < 12)
		return;
	p = d->d_buf;
	/* version 1, eh_frame_ptr sdata4 pcrel, fde_count udata4, table 0x3b */
	if (p[0] != 1 || p[2] != DW_EH_PE_udata4 || p[3] != 0x3b)
		return;
	memcpy(&cnt, p + 8, 4);
	if (cnt <= 0 || (uint64_t)cnt * 8 > d->d_size - 12)
		return;
	s->starts = malloc(cnt * sizeof(*s->starts));
	if (!s->starts)
		return;
	for (int32_t i = 0; i < cnt; i++) {
		int32_t loc;

		memcpy(&loc, p + 12 + 8 * i, 4);
		s->starts[i] = sh.sh_addr + (int64_t)loc;
	}
	s->nr_starts = cnt;
	qsort(s->starts, s->nr_starts, sizeof(*s->starts), cmp_u64);
}

/*
 * FDE starts of .debug_frame: there an FDE's initial location is a plain
 * address (no pointer encoding), right after the CIE pointer.
 */
static void debug_starts(Elf *elf, struct cfisrc *s)
{
	GElf_Shdr sh;
	Elf_Scn *scn = find_scn(elf, ".debug_frame", &sh);
	const unsigned char *ident = (const unsigned char *)elf_getident(elf, NULL);
	Elf_Data *d;
	Dwarf_Off off = 0, next;
	size_t cap = 0;

	if (!scn || !ident || sh.sh_type == SHT_NOBITS)
		return;
	if ((sh.sh_flags & SHF_COMPRESSED) && elf_compress(scn, 0, 0) < 0)
		return;
	d = elf_getdata(scn, NULL);
	if (!d)
		return;
	for (;;) {
		Dwarf_CFI_Entry e;
		uint64_t pc;

		if (dwarf_next_cfi(ident, d, 0, off, &next, &e) != 0)
			break;
		off = next;
		if (dwarf_cfi_cie_p(&e) || e.fde.end - e.fde.start < 8)
			continue;
		memcpy(&pc, e.fde.start, 8);
		if (s->nr_starts == cap) {
			uint64_t *n = realloc(s->starts, (cap ? 2 * cap : 256) * sizeof(*n));

			if (!n)
				break;
			s->starts = n;
			cap = cap ? 2 * cap : 256;
		}
		s->starts[s->nr_starts++] = pc;
	}
	qsort(s->starts, s->nr_starts, sizeof(*s->starts), cmp_u64);
}

/* The first FDE start above pc in s, or UINT64_MAX. */
static uint64_t next_start(const struct cfisrc *s, uint64_t pc)
{
	size_t lo = 0, hi = s->nr_starts;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (s->starts[mid] <= pc)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < s->nr_starts ? s->starts[lo] : UINT64_MAX;
}

/* offset(N) of a register: { DW_OP_call_frame_cfa, DW_OP_plus_uconst N } */
static int cfa_offset_rule(const Dwarf_Op *ops, size_t nops, int64_t *n)
{
	if (nops == 1 && ops[0].atom == DW_OP_call_frame_cfa) {
		*n = 0;
		return 1;
	}
	if (nops == 2 && ops[0].atom == DW_OP_call_frame_cfa &&
	    ops[1].atom == DW_OP_plus_uconst) {
		*n = (int64_t)ops[1].number;
		return 1;
	}
	return 0;
}

/* The row for a frame's rules; anything unusual becomes NMIPROF_UW_FP. */
static struct nmiprof_uw_row classify(Dwarf_Frame *fr, struct np_uw_compile_stats *st)
{
	struct nmiprof_uw_row r = { .info = NMIPROF_UW_FP };
	Dwarf_Op mem[3], *ops;
	size_t nops;
	bool signal = false;
	int64_t off, ra, rbp = 0;

	dwarf_frame_info(fr, NULL, NULL, &signal);
	if (dwarf_frame_cfa(fr, &ops, &nops) < 0 || !nops)
		goto fp;
	/* glibc's __restore_rt: CFA = *(rsp + 160), the sigcontext's rsp */
	if (signal || (nops == 2 && ops[0].atom == DW_OP_breg7 &&
		       ops[0].number == NMIPROF_UW_SIG_RSP &&
		       ops[1].atom == DW_OP_deref)) {
		r.info = NMIPROF_UW_SIGNAL;
		goto other;
	}
	/* ld's lazy .plt: rsp + 8 + ((rip & 15) >= 11) * 8 */
	if (nops == 9 && ops[0].atom == DW_OP_breg7 && ops[0].number == 8 &&
	    ops[1].atom == DW_OP_breg16 && ops[3].atom == DW_OP_and &&
	    ops[4].atom == DW_OP_lit11 && ops[5].atom == DW_OP_ge) {
		r.info = NMIPROF_UW_PLT;
		goto other;
	}
	/* def_cfa reg, off: libdw gives { DW_OP_bregx reg, off } */
	if (nops != 1 || ops[0].atom != DW_OP_bregx ||
	    (ops[0].number != REG_RSP && ops[0].number != REG_RBP))
		goto fp;
	off = (int64_t)ops[0].number2;
	if (off < 0 || off > NMIPROF_UW_MAX_CFA_OFF)
		goto fp;
	r.cfa_off = off;
	if (ops[0].number == REG_RBP)
		r.info |= NMIPROF_UW_CFA_RBP;

	if (dwarf_frame_register(fr, REG_RA, mem, &ops, &nops) < 0)
		goto fp;
	if (!nops && ops) {	/* undefined: the outermost frame */
		r = (struct nmiprof_uw_row){ .info = NMIPROF_UW_END };
		goto other;
	}
	if (!cfa_offset_rule(ops, nops, &ra) || ra != -8)
		goto fp;
	if (dwarf_frame_register(fr, REG_RBP, mem, &ops, &nops) < 0)
		goto fp;
	if (nops && (!cfa_offset_rule(ops, nops, &rbp) || rbp >= 0 ||
		     rbp < -1024 || rbp % 8))
		goto fp;
	/*
	 * In an epilogue GCC leaves rbp's rule after the pop: a slot below
	 * rsp was popped already, so rbp holds the caller's value again.
	 */
	if (-rbp > (int64_t)r.cfa_off) {
		if (r.info & NMIPROF_UW_CFA_RBP)
			goto fp;
		rbp = 0;
	}
	if ((r.info & NMIPROF_UW_CFA_RBP) ? r.cfa_off < 16 : r.cfa_off < 8)
		goto fp;
	r.rbp_off = rbp / 8;
	r.info = (r.info & NMIPROF_UW_CFA_RBP) | NMIPROF_UW_CFA;
	st->rows_cfa++;
	return r;
fp:
	st->rows_fp++;
	return (struct nmiprof_uw_row){ .info = NMIPROF_UW_FP };
other:
	st->rows_other++;
	return r;
}

static int push(struct rowvec *v, uint64_t pc, struct nmiprof_uw_row r)
{
	if (v->nr && !memcmp(&v->v[v->nr - 1].r.cfa_off, &r.cfa_off, 4))
		return 0;	/* same rules as the row before: one row */
	if (v->nr && v->v[v->nr - 1].pc == pc) {
		v->v[v->nr - 1].r = r;
		return 0;
	}
	if (v->nr == v->cap) {
		size_t cap = v->cap ? 2 * v->cap : 4096;
		void *n = realloc(v->v, cap * sizeof(*v->v));

		if (!n)
			return -1;
		v->v = n;
		v->cap = cap;
	}
	v->v[v->nr].pc = pc;
	v->v[v->nr].r = r;
	v->nr++;
	return 0;
}

/*
 * Rows for [a, b): at each pc the first source with an FDE gives the
 * rules and the range they hold; a pc no source covers starts a
 * NMIPROF_UW_NONE row up to the next FDE start.
 */
static int scan(struct cfisrc *src, int nsrc, uint64_t a, uint64_t b,
		struct rowvec *v, struct np_uw_compile_stats *st)
{
	uint64_t pc = a, steps = 0;

	while (pc < b) {
		uint64_t next = UINT64_MAX;
		int i;

		for (i = 0; i < nsrc; i++) {
			Dwarf_Frame *fr;
			Dwarf_Addr start, end;

			if (!src[i].cfi || dwarf_cfi_addrframe(src[i].cfi, pc, &fr) < 0)
				continue;
			dwarf_frame_info(fr, &start, &end, NULL);
			if (push(v, pc, classify(fr, st)) < 0) {
				free(fr);
				return -1;
			}
			free(fr);
			pc = end > pc && end < b ? end : b;
			break;
		}
		if (i < nsrc)
			continue;
		for (i = 0; i < nsrc; i++) {
			uint64_t n = src[i].cfi ? next_start(&src[i], pc) : UINT64_MAX;

			next = n < next ? n : next;
		}
		/* no start list (odd .eh_frame_hdr): probe byte by byte, bounded */
		if (next == UINT64_MAX && ++steps < (1u << 22))
			next = pc + 1;
		/*
		 * Alignment padding between two functions is never run: the
		 * row before may cover it (one row less per function).
		 */
		if ((next - pc >= 16 || !v->nr || pc == a) &&
		    push(v, pc, (struct nmiprof_uw_row){ .info = NMIPROF_UW_NONE }) < 0)
			return -1;
		pc = next < b ? next : b;
	}
	return 0;
}

static int debug_file(const char *root, Elf *elf, char *path, size_t len)
{
	const void *id;
	const uint8_t *b;
	ssize_t n = dwelf_elf_gnu_build_id(elf, &id);
	int o;

	if (!root || n <= 1 || n > 64)
		return -1;
	b = id;
	o = snprintf(path, len, "%s/.build-id/%02x/", root, b[0]);
	for (ssize_t i = 1; i < n && o < (int)len; i++)
		o += snprintf(path + o, len - o, "%02x", b[i]);
	if (o >= (int)len || snprintf(path + o, len - o, ".debug") >= (int)(len - o))
		return -1;
	return access(path, R_OK);
}

struct nmiprof_uw_table *np_uw_compile(int fd, const char *path,
				       const char *debug_root, size_t *len,
				       struct np_uw_compile_stats *st,
				       char *err, size_t errlen)
{
	struct np_uw_compile_stats dummy;
	struct cfisrc src[3];
	struct rowvec v = { 0 };
	struct nmiprof_uw_table *t = NULL;
	Elf *elf, *delf = NULL;
	Dwarf *dw = NULL, *ddw = NULL;
	Dwarf_CFI *eh = NULL;
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;
	char dpath[4096];
	int dfd = -1, nsrc = 0;
	const void *id;
	ssize_t idn;

	if (!st)
		st = &dummy;
	memset(st, 0, sizeof(*st));
	memset(src, 0, sizeof(src));
	elf_version(EV_CURRENT);
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!elf || elf_kind(elf) != ELF_K_ELF) {
		snprintf(err, errlen, "%s: not an ELF file", path);
		goto out;
	}
	if (find_scn(elf, ".eh_frame", &sh))
		st->eh_frame_bytes = sh.sh_size;
	eh = src[nsrc].cfi = dwarf_getcfi_elf(elf);
	if (eh)
		eh_starts(elf, &src[nsrc++]);
	/* the file's own .debug_frame (built with -fno-asynchronous-unwind-tables) */
	if (find_scn(elf, ".debug_frame", &sh) && sh.sh_type != SHT_NOBITS) {
		st->debug_frame_bytes += sh.sh_size;
		dw = dwarf_begin_elf(elf, DWARF_C_READ, NULL);
		src[nsrc].cfi = dw ? dwarf_getcfi(dw) : NULL;
		if (src[nsrc].cfi)
			debug_starts(elf, &src[nsrc++]);
	}
	if (debug_file(debug_root, elf, dpath, sizeof(dpath)) == 0 &&
	    (dfd = open(dpath, O_RDONLY | O_CLOEXEC)) >= 0 &&
	    (delf = elf_begin(dfd, ELF_C_READ_MMAP, NULL)) != NULL &&
	    find_scn(delf, ".debug_frame", &sh) && sh.sh_type != SHT_NOBITS) {
		st->debug_frame_bytes += sh.sh_size;
		ddw = dwarf_begin_elf(delf, DWARF_C_READ, NULL);
		src[nsrc].cfi = ddw ? dwarf_getcfi(ddw) : NULL;
		if (src[nsrc].cfi)
			debug_starts(delf, &src[nsrc++]);
	}
	if (!nsrc) {
		snprintf(err, errlen, "%s: no call-frame information", path);
		goto out;
	}
	while ((scn = elf_nextscn(elf, scn)) != NULL) {
		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_PROGBITS ||
		    !(sh.sh_flags & SHF_EXECINSTR) || !sh.sh_size)
			continue;
		if (scan(src, nsrc, sh.sh_addr, sh.sh_addr + sh.sh_size, &v, st) < 0 ||
		    push(&v, sh.sh_addr + sh.sh_size,
			 (struct nmiprof_uw_row){ .info = NMIPROF_UW_NONE }) < 0) {
			snprintf(err, errlen, "out of memory");
			goto out;
		}
	}
	/*
	 * Sections come in address order, each ended by a NONE row; the
	 * last one becomes the table's end (t->size), not a row.
	 */
	while (v.nr >= 2 &&
	       (v.v[v.nr - 2].r.info & NMIPROF_UW_KIND_MASK) == NMIPROF_UW_NONE)
		v.nr--;
	if (!v.nr) {
		snprintf(err, errlen, "%s: no executable code with CFI", path);
		goto out;
	}
	if (v.v[v.nr - 1].pc + 1 - v.v[0].pc > UINT32_MAX) {
		snprintf(err, errlen, "%s: code spans more than 4 GiB", path);
		goto out;
	}
	*len = sizeof(*t) + (v.nr - 1) * sizeof(struct nmiprof_uw_row);
	t = calloc(1, *len);
	if (!t) {
		snprintf(err, errlen, "out of memory");
		goto out;
	}
	t->magic = NMIPROF_UW_MAGIC;
	t->version = NMIPROF_UW_VERSION;
	t->hdr_size = sizeof(*t);
	t->row_size = sizeof(struct nmiprof_uw_row);
	t->nr_rows = v.nr - 1;	/* the last pc only ends the row before */
	t->base = v.v[0].pc;
	t->size = v.v[v.nr - 1].pc - t->base;
	t->ra_off = -8;
	if (v.nr < 2) {
		free(t);
		t = NULL;
		snprintf(err, errlen, "%s: no executable code with CFI", path);
		goto out;
	}
	idn = dwelf_elf_gnu_build_id(elf, &id);
	if (idn > 0 && idn <= (ssize_t)sizeof(t->build_id)) {
		memcpy(t->build_id, id, idn);
		t->build_id_size = idn;
	}
	if (nsrc > !!eh)
		t->flags |= NMIPROF_UWF_DEBUG_FRAME;
	for (size_t i = 0; i + 1 < v.nr; i++) {
		struct nmiprof_uw_row *r = (struct nmiprof_uw_row *)(t + 1) + i;

		*r = v.v[i].r;
		r->pc = v.v[i].pc - t->base;
	}
	t->crc = np_crc32c(0, t + 1, *len - sizeof(*t));
out:
	free(v.v);
	for (int i = 0; i < nsrc; i++)
		free(src[i].starts);
	if (eh)
		dwarf_cfi_end(eh);
	if (dw)
		dwarf_end(dw);
	if (ddw)
		dwarf_end(ddw);
	if (delf)
		elf_end(delf);
	if (dfd >= 0)
		close(dfd);
	if (elf)
		elf_end(elf);
	return t;
}
