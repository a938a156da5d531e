// SPDX-License-Identifier: GPL-2.0
/*
 * The kmod backend's decoder without a device: rings built in memory
 * (a fake control page + data with the ABI structs) and format text
 * generated here, through lib/backend/kring.c and lib/backend/recfmt.c.
 *
 * Covers: the ABI layout; a newer-module layout with fields reordered,
 * an unknown extra field and no common/regular separator; pad records,
 * wrap-around of the free-running counters, LOST and LOCKUP records,
 * early stop, unknown record types, missing required fields and
 * malformed records; the sample fast path (frames handed on in place
 * when aligned, copied when not; short records read field by field;
 * __rel_loc arrays).
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "np_recfmt.h"
#include "np_kring.h"

#include "check.h"

/* A record layout, from which both format text and records are made. */
struct tfield {
	const char *decl;	/* type and name as in the format text */
	const char *name;
	int off, size;
};

struct layout {
	const char *name;
	int id;
	int common_gap;		/* blank line after the common fields */
	int print_fmt;
	int fixed;		/* bytes before the variable part */
	struct tfield f[24];
};

#define F(decl, name, off, size) { decl " " #name, #name, off, size }

static const struct layout abi_sample = {
	"sample", NMIPROF_REC_SAMPLE, 1, 1, sizeof(struct nmiprof_sample), {
	F("unsigned short", common_type, offsetof(struct nmiprof_sample, hdr.common_type), 2),
	F("unsigned short", common_flags, offsetof(struct nmiprof_sample, hdr.common_flags), 2),
	F("unsigned int", common_size, offsetof(struct nmiprof_sample, hdr.common_size), 4),
	F("u64", seq, offsetof(struct nmiprof_sample, seq), 8),
	F("u64", time_ns, offsetof(struct nmiprof_sample, time_ns), 8),
	F("u64", ip, offsetof(struct nmiprof_sample, ip), 8),
	F("u32", cpu, offsetof(struct nmiprof_sample, cpu), 4),
	F("u32", pid, offsetof(struct nmiprof_sample, pid), 4),
	F("u32", tid, offsetof(struct nmiprof_sample, tid), 4),
	F("u16", nr_kframes, offsetof(struct nmiprof_sample, nr_kframes), 2),
	F("u16", nr_uframes, offsetof(struct nmiprof_sample, nr_uframes), 2),
	{ "char comm[16]", "comm", offsetof(struct nmiprof_sample, comm), 16 },
	{ "__data_loc u64[] kstack", "kstack", offsetof(struct nmiprof_sample, kstack), 4 },
	{ "__data_loc u64[] ustack", "ustack", offsetof(struct nmiprof_sample, ustack), 4 },
	{ "__data_loc u64[] uregs", "uregs", offsetof(struct nmiprof_sample, uregs), 4 },
	{ "__data_loc u8[] ustack_raw", "ustack_raw", offsetof(struct nmiprof_sample, ustack_raw), 4 },
	{ 0 } } };

static const struct layout abi_lost = {
	"lost", NMIPROF_REC_LOST, 1, 1, sizeof(struct nmiprof_lost), {
	F("unsigned short", common_type, 0, 2),
	F("unsigned short", common_flags, 2, 2),
	F("unsigned int", common_size, 4, 4),
	F("u64", seq, offsetof(struct nmiprof_lost, seq), 8),
	F("u64", time_ns, offsetof(struct nmiprof_lost, time_ns), 8),
	F("u64", lost, offsetof(struct nmiprof_lost, lost), 8),
	F("u32", cpu, offsetof(struct nmiprof_lost, cpu), 4),
	{ 0 } } };

static const struct layout abi_lockup = {
	"lockup", NMIPROF_REC_LOCKUP, 1, 1, sizeof(struct nmiprof_lockup), {
	F("unsigned short", common_type, 0, 2),
	F("unsigned short", common_flags, 2, 2),
	F("unsigned int", common_size, 4, 4),
	F("u64", seq, offsetof(struct nmiprof_lockup, seq), 8),
	F("u64", time_ns, offsetof(struct nmiprof_lockup, time_ns), 8),
	F("u64", stuck_ns, offsetof(struct nmiprof_lockup, stuck_ns), 8),
	F("u32", cpu, offsetof(struct nmiprof_lockup, cpu), 4),
	F("u32", pid, offsetof(struct nmiprof_lockup, pid), 4),
	F("u32", tid, offsetof(struct nmiprof_lockup, tid), 4),
	F("u16", nr_kframes, offsetof(struct nmiprof_lockup, nr_kframes), 2),
	F("u16", lockup_flags, offsetof(struct nmiprof_lockup, lockup_flags), 2),
	{ "char comm[16]", "comm", offsetof(struct nmiprof_lockup, comm), 16 },
	{ "u64 regs[21]", "regs", offsetof(struct nmiprof_lockup, regs), sizeof(struct nmiprof_regs) },
	{ "__data_loc u64[] kstack", "kstack", offsetof(struct nmiprof_lockup, kstack), 4 },
	{ 0 } } };

/*
 * The ABI layouts above are written out as kmod/format.c does (common
 * fields, blank line, fields, print fmt).  "Newer module": reordered, an unknown field, no seq, no separator. */
static const struct layout new_sample = {
	"sample", NMIPROF_REC_SAMPLE, 0, 0, 96, {
	F("unsigned short", common_type, 0, 2),
	F("unsigned short", common_flags, 2, 2),
	F("unsigned int", common_size, 4, 4),
	F("u64", cgroup_id, 8, 8),
	F("u64", ip, 16, 8),
	{ "__data_loc u64[] ustack", "ustack", 24, 4 },
	F("u32", tid, 28, 4),
	F("u64", time_ns, 32, 8),
	{ "char comm[16]", "comm", 40, 16 },
	F("u32", pid, 56, 4),
	{ "__data_loc u64[] kstack", "kstack", 60, 4 },
	F("u16", cpu, 64, 2),
	F("u16", nr_kframes, 66, 2),
	F("u16", nr_uframes, 68, 2),
	{ 0 } } };

static char *format_text(const struct layout *l, const char *skip)
{
	static char buf[4096];
	int n = snprintf(buf, sizeof(buf), "name: %s\nID: %d\nformat:\n", l->name, l->id);

	for (const struct tfield *f = l->f; f->name; f++) {
		if (skip && !strcmp(skip, f->name))
			continue;
		n += snprintf(buf + n, sizeof(buf) - n,
			      "\tfield:%s;\toffset:%d;\tsize:%d;\tsigned:0;\n",
			      f->decl, f->off, f->size);
		if (l->common_gap && !strcmp(f->name, "common_size"))
			n += snprintf(buf + n, sizeof(buf) - n, "\n");
	}
	if (l->print_fmt)
		snprintf(buf + n, sizeof(buf) - n,
			 "\nprint fmt: \"cpu=%%u pid=%%u\", REC->cpu, REC->pid\n");
	return buf;
}

static void put(const struct layout *l, uint8_t *rec, const char *name, uint64_t v)
{
	for (const struct tfield *f = l->f; f->name; f++) {
		if (!strcmp(f->name, name)) {
			memcpy(rec + f->off, &v, f->size < 8 ? f->size : 8);
			return;
		}
	}
	if (strcmp(name, "seq"))
		abort();	/* a typo in the test */
}

/* Build a record; returns its size (multiple of 8). */
static uint32_t build(const struct layout *l, uint8_t *rec, uint16_t type_flags,
		      const uint64_t *kf, int nk, const uint64_t *uf, int nu)
{
	uint32_t off = (l->fixed + 7) & ~7u, size;

	memset(rec, 0, 2048);
	put(l, rec, "common_type", l->id);
	put(l, rec, "common_flags", type_flags);
	if (kf) {
		memcpy(rec + off, kf, nk * 8);
		put(l, rec, "kstack", NMIPROF_LOC(off, nk * 8));
		off += nk * 8;
	}
	if (uf) {
		memcpy(rec + off, uf, nu * 8);
		put(l, rec, "ustack", NMIPROF_LOC(off, nu * 8));
		off += nu * 8;
	}
	size = (off + 7) & ~7u;
	put(l, rec, "common_size", size);
	return size;
}

/* ---- collecting events ---- */
struct got {
	int n, stop_after;
	struct np_event ev[16];
	uint64_t kf[16][8], uf[16][8];
};

static int collect(const struct np_event *ev, void *arg)
{
	struct got *g = arg;

	if (g->n < 16) {
		g->ev[g->n] = *ev;
		if (ev->type == NP_EV_SAMPLE) {
			memcpy(g->kf[g->n], ev->sample.kframes, 8 * (ev->sample.nr_kframes > 8 ? 8 : ev->sample.nr_kframes));
			memcpy(g->uf[g->n], ev->sample.uframes, 8 * (ev->sample.nr_uframes > 8 ? 8 : ev->sample.nr_uframes));
		} else if (ev->type == NP_EV_LOCKUP) {
			memcpy(g->kf[g->n], ev->lockup.kframes, 8 * (ev->lockup.nr_kframes > 8 ? 8 : ev->lockup.nr_kframes));
		}
	}
	g->n++;
	return g->stop_after && g->n >= g->stop_after;
}

static const uint64_t KF[] = { 0xffffffff81000010ULL, 0xffffffff81000020ULL, 0xffffffff81000030ULL };
static const uint64_t UF[] = { 0x401000, 0x401100 };

static void fill_sample(const struct layout *l, uint8_t *rec, uint32_t cpu)
{
	put(l, rec, "seq", 7);
	put(l, rec, "time_ns", 123456789);
	put(l, rec, "ip", KF[0]);
	put(l, rec, "cpu", cpu);
	put(l, rec, "pid", 4242);
	put(l, rec, "tid", 4243);
	put(l, rec, "nr_kframes", 3);
	put(l, rec, "nr_uframes", 2);
	memcpy(rec + l->f[0].off, rec, 0);
	for (const struct tfield *f = l->f; f->name; f++)
		if (!strcmp(f->name, "comm"))
			memcpy(rec + f->off, "hot", 4);
}

static void check_sample(const struct got *g, int i, uint32_t cpu)
{
	const struct np_ev_sample *s = &g->ev[i].sample;

	CHECK(g->ev[i].type == NP_EV_SAMPLE);
	CHECK(s->time_ns == 123456789);
	CHECK(s->ip == KF[0]);
	CHECK(s->cpu == cpu);
	CHECK(s->pid == 4242 && s->tid == 4243);
	CHECK(!strcmp(s->comm, "hot"));
	CHECK(s->flags == NMIPROF_RF_IN_NMI);
	CHECK(s->nr_kframes == 3 && s->nr_uframes == 2);
	CHECK(!memcmp(g->kf[i], KF, sizeof(KF)));
	CHECK(!memcmp(g->uf[i], UF, sizeof(UF)));
}

static struct np_recfmt *abi_format(void)
{
	struct np_recfmt *f = np_recfmt_new();
	char err[256];
	const char *t;

	t = format_text(&abi_sample, NULL);
	if (np_recfmt_add(f, t, strlen(t), err, sizeof(err)))
		printf("FAIL: abi sample format: %s\n", err), failures++;
	t = format_text(&abi_lost, NULL);
	if (np_recfmt_add(f, t, strlen(t), err, sizeof(err)))
		printf("FAIL: abi lost format: %s\n", err), failures++;
	t = format_text(&abi_lockup, NULL);
	if (np_recfmt_add(f, t, strlen(t), err, sizeof(err)))
		printf("FAIL: abi lockup format: %s\n", err), failures++;
	return f;
}

/* ---- rings ---- */
#define RING 1024
static struct nmiprof_ring_ctrl ctrl __attribute__((aligned(4096)));
static uint64_t data[RING / 8];

/* Produce like the module: pad the end when a record would not fit. */
static void produce(const uint8_t *rec, uint32_t size)
{
	uint64_t off = ctrl.head & (RING - 1);

	if (RING - off < size) {
		struct nmiprof_rec_header pad = {
			.common_type = NMIPROF_REC_PAD,
			.common_size = RING - off,
		};

		memcpy((uint8_t *)data + off, &pad, sizeof(pad));
		ctrl.head += RING - off;
		off = 0;
	}
	memcpy((uint8_t *)data + off, rec, size);
	ctrl.head += size;
}

static void ring_reset(uint64_t pos)
{
	memset(&ctrl, 0, sizeof(ctrl));
	memset(data, 0xa5, sizeof(data));	/* garbage where nothing was written */
	ctrl.magic = NMIPROF_MAGIC;
	ctrl.abi_version = NMIPROF_ABI_VERSION;
	ctrl.data_size = RING;
	ctrl.head = ctrl.tail = pos;
}

static void test_abi_records(void)
{
	struct np_recfmt *f = abi_format();
	uint8_t rec[2048];
	struct got g = { 0 };
	struct nmiprof_lost *lost = (void *)rec;
	struct nmiprof_lockup *lk = (void *)rec;
	uint32_t size;

	size = build(&abi_sample, rec, NMIPROF_RF_IN_NMI, KF, 3, UF, 2);
	fill_sample(&abi_sample, rec, 1);
	CHECK(np_recfmt_decode(f, rec, size, collect, &g) == 0);
	check_sample(&g, 0, 1);

	memset(rec, 0, sizeof(*lost));
	lost->hdr.common_type = NMIPROF_REC_LOST;
	lost->hdr.common_size = sizeof(*lost);
	lost->cpu = 3;
	lost->lost = 99;
	CHECK(np_recfmt_decode(f, rec, sizeof(*lost), collect, &g) == 0);
	CHECK(g.ev[1].type == NP_EV_LOST && g.ev[1].lost.cpu == 3 && g.ev[1].lost.lost == 99);

	size = build(&abi_lockup, rec, NMIPROF_RF_IN_NMI, KF, 2, NULL, 0);
	lk->cpu = 1;
	lk->pid = 0;
	lk->stuck_ns = 11000000000ULL;
	/* a lower bound (minor 6), and a bit no minor defines yet: kept */
	lk->lockup_flags = NMIPROF_LF_HARD | NMIPROF_LF_AT_LEAST | 0x8000;
	lk->regs.ip = KF[0];
	lk->regs.sp = 0xffffc90000001000ULL;
	memcpy(lk->comm, "swapper/1", 10);
	CHECK(np_recfmt_decode(f, rec, size, collect, &g) == 0);
	CHECK(g.ev[2].type == NP_EV_LOCKUP);
	CHECK(g.ev[2].lockup.stuck_ns == 11000000000ULL);
	CHECK(g.ev[2].lockup.flags ==
	      (NMIPROF_LF_HARD | NMIPROF_LF_AT_LEAST | 0x8000));
	CHECK(g.ev[2].lockup.regs.ip == KF[0] && g.ev[2].lockup.regs.sp == 0xffffc90000001000ULL);
	CHECK(!strcmp(g.ev[2].lockup.comm, "swapper/1"));
	CHECK(g.ev[2].lockup.nr_kframes == 2 && g.kf[2][1] == KF[1]);

	/* malformed: kstack points past the record */
	size = build(&abi_sample, rec, 0, KF, 3, UF, 2);
	put(&abi_sample, rec, "kstack", NMIPROF_LOC(size - 8, 16));
	CHECK(np_recfmt_decode(f, rec, size, collect, &g) == -EINVAL);
	/* truncated below the fixed part */
	CHECK(np_recfmt_decode(f, rec, 16, collect, &g) == -EINVAL);
	CHECK(g.n == 3);
	np_recfmt_free(f);
}

static void test_ring(void)
{
	struct np_recfmt *f = abi_format();
	struct np_kring r;
	uint8_t rec[2048];
	struct got g = { 0 };
	struct nmiprof_lost lost = {
		.hdr = { NMIPROF_REC_LOST, 0, sizeof(lost) }, .cpu = 2, .lost = 5,
	};
	char err[256];
	uint32_t size;
	int stopped = 0;

	/* free-running counters far from zero, 40 bytes before the end */
	ring_reset(5ULL * RING + RING - 40);
	CHECK(np_kring_init(&r, &ctrl, data, RING, 2, err, sizeof(err)) == 0);
	size = build(&abi_sample, rec, NMIPROF_RF_IN_NMI, KF, 3, UF, 2);
	fill_sample(&abi_sample, rec, 2);
	produce(rec, size);			/* pads 40 bytes, wraps */
	produce((void *)&lost, sizeof(lost));
	produce(rec, size);
	CHECK(np_kring_pending(&r) == 40 + 2 * size + sizeof(lost));
	CHECK(np_kring_drain(&r, f, collect, &g, &stopped) == 3);
	CHECK(g.n == 3 && !stopped);
	check_sample(&g, 0, 2);
	CHECK(g.ev[1].type == NP_EV_LOST && g.ev[1].lost.lost == 5 && g.ev[1].lost.cpu == 2);
	check_sample(&g, 2, 2);
	CHECK(r.pads == 1 && r.corrupt == 0);
	CHECK(ctrl.tail == ctrl.head);

	/* the consumer stops early: tail stays on a record boundary */
	memset(&g, 0, sizeof(g));
	g.stop_after = 1;
	produce(rec, size);
	produce((void *)&lost, sizeof(lost));
	CHECK(np_kring_drain(&r, f, collect, &g, &stopped) == 1 && stopped);
	CHECK(ctrl.head - ctrl.tail == sizeof(lost));
	g.stop_after = 0;
	CHECK(np_kring_drain(&r, f, collect, &g, NULL) == 1);
	CHECK(g.n == 2 && g.ev[1].type == NP_EV_LOST);
	CHECK(ctrl.tail == ctrl.head);

	/* a record of a type this daemon does not know is skipped */
	size = build(&abi_sample, rec, 0, KF, 1, NULL, 0);
	put(&abi_sample, rec, "common_type", 9);
	produce(rec, size);
	produce((void *)&lost, sizeof(lost));
	memset(&g, 0, sizeof(g));
	CHECK(np_kring_drain(&r, f, collect, &g, NULL) == 1);
	CHECK(g.n == 1 && g.ev[0].type == NP_EV_LOST);
	CHECK(np_recfmt_unknown(f) == 1);

	/* corrupt size: the rest is dropped and counted, never read past */
	((struct nmiprof_rec_header *)((uint8_t *)data + (ctrl.head & (RING - 1))))->common_size = 12;
	ctrl.head += 64;
	memset(&g, 0, sizeof(g));
	CHECK(np_kring_drain(&r, f, collect, &g, NULL) == 0);
	CHECK(r.corrupt == 1 && ctrl.tail == ctrl.head && g.n == 0);

	/*
	 * A tail off the 8-byte grid (another writer of the control page):
	 * dropped unread, even where the bytes there look like a record.
	 */
	memset(rec, 0, sizeof(lost) + 8);
	memcpy(rec + 4, &lost, sizeof(lost));
	produce(rec, sizeof(lost) + 8);
	ctrl.tail += 4;
	memset(&g, 0, sizeof(g));
	CHECK(np_kring_drain(&r, f, collect, &g, NULL) == 0);
	CHECK(r.corrupt == 2 && ctrl.tail == ctrl.head && g.n == 0);

	/* a control page from another ABI is refused with a clear line */
	ctrl.abi_version = NMIPROF_ABI_VERSION + 1;
	CHECK(np_kring_init(&r, &ctrl, data, RING, 2, err, sizeof(err)) == -EPROTO);
	CHECK(strstr(err, "ABI") != NULL);
	ctrl.abi_version = NMIPROF_ABI_VERSION;
	CHECK(np_kring_init(&r, &ctrl, data, RING * 2, 2, err, sizeof(err)) == -EPROTO);
	np_recfmt_free(f);
}

static void test_new_layout(void)
{
	struct np_recfmt *f = np_recfmt_new();
	const char *t = format_text(&new_sample, NULL);
	uint8_t rec[2048];
	struct got g = { 0 };
	char err[256];
	uint32_t size;

	CHECK(np_recfmt_add(f, t, strlen(t), err, sizeof(err)) == 0);
	size = build(&new_sample, rec, NMIPROF_RF_IN_NMI, KF, 3, UF, 2);
	fill_sample(&new_sample, rec, 513);
	put(&new_sample, rec, "cgroup_id", 0xdeadbeef);
	CHECK(np_recfmt_decode(f, rec, size, collect, &g) == 0);
	check_sample(&g, 0, 513);
	np_recfmt_free(f);

	/* a required field missing: refused, naming the field */
	f = np_recfmt_new();
	t = format_text(&new_sample, "kstack");
	CHECK(np_recfmt_add(f, t, strlen(t), err, sizeof(err)) == -EINVAL);
	CHECK(strstr(err, "kstack") != NULL);
	printf("missing field -> \"%s\"\n", err);
	/* garbage text */
	CHECK(np_recfmt_add(f, "hello", 5, err, sizeof(err)) < 0);
	printf("garbage -> \"%s\"\n", err);
	/* a record type from the future is accepted and ignored */
	t = "name: future\nID: 9\nformat:\n\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n";
	CHECK(np_recfmt_add(f, t, strlen(t), err, sizeof(err)) == 0);
	CHECK(!np_recfmt_has(f, 9) && !np_recfmt_has(f, NMIPROF_REC_SAMPLE));
	np_recfmt_free(f);
}

/*
 * An oldest-style sample: no flags field (common_flags stands in), an
 * 8-byte comm near the end and nothing after the fixed part but the
 * frames, so a record without frames is too short for the fast path's
 * whole-word loads.
 */
static const struct layout short_sample = {
	"sample", NMIPROF_REC_SAMPLE, 1, 0, 56, {
	F("unsigned short", common_type, 0, 2),
	F("unsigned short", common_flags, 2, 2),
	F("unsigned int", common_size, 4, 4),
	F("u64", time_ns, 8, 8),
	F("u64", ip, 16, 8),
	F("u32", cpu, 24, 4),
	F("u32", pid, 28, 4),
	F("u32", tid, 32, 4),
	{ "__data_loc u64[] kstack", "kstack", 36, 4 },
	{ "__data_loc u64[] ustack", "ustack", 40, 4 },
	{ "char comm[8]", "comm", 44, 8 },
	F("u16", nr_kframes, 52, 2),
	F("u16", nr_uframes, 54, 2),
	{ 0 } } };

struct where {
	const uint64_t *kframes, *uframes;
	int n;
};

static int where(const struct np_event *ev, void *arg)
{
	struct where *w = arg;

	w->kframes = ev->sample.kframes;
	w->uframes = ev->sample.uframes;
	w->n++;
	return 0;
}

static void test_sample_paths(void)
{
	struct np_recfmt *f = abi_format();
	uint64_t buf[2048 / 8 + 1];	/* 8-byte aligned, as a ring is */
	uint8_t *rec = (uint8_t *)buf, *odd = (uint8_t *)buf + 1024 + 4;
	struct layout rel_sample;
	struct where w = { 0 };
	struct got g = { 0 };
	char err[256];
	const char *t;
	uint32_t size;

	size = build(&abi_sample, rec, NMIPROF_RF_IN_NMI, KF, 3, UF, 2);
	fill_sample(&abi_sample, rec, 1);
	/* in a ring: the frames are handed on where they lie */
	CHECK(np_recfmt_decode(f, rec, size, where, &w) == 0 && w.n == 1);
	CHECK(w.kframes == (const uint64_t *)(rec + NMIPROF_LOC_OFF(
		((struct nmiprof_sample *)rec)->kstack)));
	CHECK(w.uframes == w.kframes + 3);
	/* misaligned (not from a ring): copied, and the same event */
	memmove(odd, rec, size);
	CHECK(np_recfmt_decode(f, odd, size, where, &w) == 0 && w.n == 2);
	CHECK((const uint8_t *)w.kframes < odd || (const uint8_t *)w.kframes >= odd + size);
	CHECK(np_recfmt_decode(f, odd, size, collect, &g) == 0);
	check_sample(&g, 0, 1);
	/* a kstack that claims more than the record holds is refused */
	put(&abi_sample, rec, "kstack", NMIPROF_LOC(size - 16, 24));
	CHECK(np_recfmt_decode(f, rec, size, collect, &g) == -EINVAL && g.n == 1);
	np_recfmt_free(f);

	/* short records: no frames, so read field by field */
	f = np_recfmt_new();
	t = format_text(&short_sample, NULL);
	CHECK(np_recfmt_add(f, t, strlen(t), err, sizeof(err)) == 0);
	size = build(&short_sample, rec, NMIPROF_RF_IN_NMI, NULL, 0, NULL, 0);
	fill_sample(&short_sample, rec, 7);
	memcpy(rec + 44, "abcdefgh", 8);	/* no NUL: cut at 8 */
	put(&short_sample, rec, "kstack", NMIPROF_LOC(size, 0));
	memset(&g, 0, sizeof(g));
	CHECK(np_recfmt_decode(f, rec, size, collect, &g) == 0 && g.n == 1);
	CHECK(g.ev[0].sample.cpu == 7 && g.ev[0].sample.pid == 4242 &&
	      g.ev[0].sample.tid == 4243 && g.ev[0].sample.ip == KF[0] &&
	      g.ev[0].sample.time_ns == 123456789);
	CHECK(g.ev[0].sample.flags == NMIPROF_RF_IN_NMI);
	CHECK(!strcmp(g.ev[0].sample.comm, "abcdefgh"));
	CHECK(g.ev[0].sample.nr_kframes == 0 && g.ev[0].sample.nr_uframes == 0);
	/* the same layout with frames: whole-word loads, same answers */
	size = build(&short_sample, rec, NMIPROF_RF_IN_NMI, KF, 3, UF, 2);
	fill_sample(&short_sample, rec, 7);
	memcpy(rec + 44, "abcdefgh", 8);
	CHECK(np_recfmt_decode(f, rec, size, collect, &g) == 0 && g.n == 2);
	CHECK(!strcmp(g.ev[1].sample.comm, "abcdefgh"));
	CHECK(g.ev[1].sample.cpu == 7 && g.ev[1].sample.tid == 4243 &&
	      g.ev[1].sample.flags == NMIPROF_RF_IN_NMI);
	CHECK(g.ev[1].sample.nr_kframes == 3 && !memcmp(g.kf[1], KF, sizeof(KF)));
	CHECK(g.ev[1].sample.nr_uframes == 2 && !memcmp(g.uf[1], UF, sizeof(UF)));
	/* truncated inside the fixed part */
	CHECK(np_recfmt_decode(f, rec, 40, collect, &g) == -EINVAL && g.n == 2);
	np_recfmt_free(f);

	/*
	 * __rel_loc arrays (the kernel's newer dynamic arrays): offsets count
	 * from the end of their field.  short_sample, its arrays so declared.
	 */
	rel_sample = short_sample;
	for (struct tfield *tf = rel_sample.f; tf->name; tf++) {
		if (!strcmp(tf->name, "kstack"))
			tf->decl = "__rel_loc u64[] kstack";
		else if (!strcmp(tf->name, "ustack"))
			tf->decl = "__rel_loc u64[] ustack";
	}
	f = np_recfmt_new();
	t = format_text(&rel_sample, NULL);
	CHECK(np_recfmt_add(f, t, strlen(t), err, sizeof(err)) == 0);
	size = build(&short_sample, rec, NMIPROF_RF_IN_NMI, KF, 3, UF, 2);
	fill_sample(&short_sample, rec, 7);
	put(&short_sample, rec, "kstack", NMIPROF_LOC(56 - 40, 3 * 8));
	put(&short_sample, rec, "ustack", NMIPROF_LOC(56 + 3 * 8 - 44, 2 * 8));
	memset(&g, 0, sizeof(g));
	CHECK(np_recfmt_decode(f, rec, size, collect, &g) == 0 && g.n == 1);
	CHECK(g.ev[0].sample.nr_kframes == 3 && !memcmp(g.kf[0], KF, sizeof(KF)));
	CHECK(g.ev[0].sample.nr_uframes == 2 && !memcmp(g.uf[0], UF, sizeof(UF)));
	np_recfmt_free(f);
}

static int count(const struct np_event *ev, void *arg)
{
	(*(unsigned long *)arg)++;
	return 0;
}

/*
 * Garbage in the ring (a broken or hostile module): decoding must stay
 * inside each record and the ring, whatever the bytes say.  Run under
 * valgrind or ASan to make out-of-bounds reads fail loudly.
 */
static void test_garbage(void)
{
	struct np_recfmt *f = abi_format();
	struct np_kring r;
	char err[256];
	unsigned long n = 0;
	uint32_t seed = 12345;

	for (int round = 0; round < 2000; round++) {
		ring_reset((uint64_t)round * 7919);
		for (size_t i = 0; i < sizeof(data); i++) {
			seed = seed * 1103515245 + 12345;
			((uint8_t *)data)[i] = seed >> 16;
		}
		/* some plausible headers so that decoding gets exercised */
		for (uint64_t off = 0; off < RING; off += 64) {
			struct nmiprof_rec_header *h = (void *)((uint8_t *)data + off);

			seed = seed * 1103515245 + 12345;
			h->common_type = 1 + (seed >> 16) % 4;
			h->common_size = (seed >> 8) % 2 ? 64 : ((seed >> 4) & 0x1f8);
		}
		seed = seed * 1103515245 + 12345;
		ctrl.head = ctrl.tail + (seed >> 8) % (RING + 64);
		CHECK(np_kring_init(&r, &ctrl, data, RING, 0, err, sizeof(err)) == 0);
		np_kring_drain(&r, f, count, &n, NULL);
		CHECK(ctrl.tail == ctrl.head || ctrl.head - ctrl.tail > RING);
	}
	printf("garbage rings: %lu events decoded, no crash\n", n);
	np_recfmt_free(f);
}

static const struct np_test_case cases[] = {
	NP_CASE(test_abi_records),
	NP_CASE(test_garbage),
	NP_CASE(test_ring),
	NP_CASE(test_new_layout),
	NP_CASE(test_sample_paths),
	{ 0 }
};

int main(int argc, char **argv)
{
	return np_test_main(argc, argv, cases);
}
