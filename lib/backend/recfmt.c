// SPDX-License-Identifier: GPL-2.0
/*
 * nmiprof.ko record decoding by field name (see np_recfmt.h).
 *
 * Slow path once per record type: libtraceevent parses the format text.
 * Fast path per record: fixed offsets from the cache below, bounds
 * checked against the record's size, so a corrupt or truncated record
 * is rejected rather than read past.  Samples, nearly every record,
 * have a leaner path still (struct sample_plan): only the fields a
 * sample event carries, one bounds check for all of them, and frames
 * handed on in place instead of copied.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <traceevent/event-parse.h>
#include "np_recfmt.h"

enum fld {
	F_FLAGS, F_SEQ, F_TIME, F_IP, F_CPU, F_PID, F_TID, F_COMM,
	F_KSTACK, F_USTACK, F_LOST, F_STUCK, F_LFLAGS, F_REGS, F_REAL, NR_FLD
};

static const char *const fld_name[NR_FLD] = {
	[F_FLAGS] = "common_flags", [F_SEQ] = "seq", [F_TIME] = "time_ns",
	[F_IP] = "ip", [F_CPU] = "cpu", [F_PID] = "pid", [F_TID] = "tid",
	[F_COMM] = "comm", [F_KSTACK] = "kstack", [F_USTACK] = "ustack",
	[F_LOST] = "lost", [F_STUCK] = "stuck_ns", [F_LFLAGS] = "lockup_flags",
	[F_REGS] = "regs", [F_REAL] = "real_ns",
};

#define BIT(f) (1u << (f))
/* Fields without which a record type is useless to us. */
static const unsigned int required[NMIPROF_REC_MAX] = {
	[NMIPROF_REC_SAMPLE] = BIT(F_TIME) | BIT(F_IP) | BIT(F_CPU) | BIT(F_PID) |
			       BIT(F_TID) | BIT(F_KSTACK),
	[NMIPROF_REC_LOST] = BIT(F_CPU) | BIT(F_LOST),
	[NMIPROF_REC_LOCKUP] = BIT(F_TIME) | BIT(F_CPU) | BIT(F_KSTACK),
};

struct field {
	int present;
	int dynamic;		/* __data_loc: u32 offset | length << 16 */
	int relative;		/* __rel_loc: offset counts from the field's end */
	unsigned int off, size;
};

struct rec_fmt {
	int present;
	struct field f[NR_FLD];
};

/*
 * A sample's fixed fields as (offset, size), worked out once per format
 * so that decoding a sample reads what it needs and nothing else.  An
 * absent optional field points at a field known to be there, and the
 * decoder ignores it (comm_len 0, ustack_off 0); common_flags stands in
 * for a missing flags field, as in the generic path.
 */
struct plan_field {
	unsigned int off, size;
	uint64_t mask;		/* the low `size` bytes of a u64 load */
};

struct sample_plan {
	int usable;		/* else the generic path decodes samples */
	unsigned int need;	/* bytes every fixed field lies within */
	/*
	 * Bytes from which every field can be read as a whole u64 (and
	 * comm as 16 bytes) and masked: true of any sample with frames
	 * behind its fixed part, and a load and an AND per field beat a
	 * copy of `size` bytes.
	 */
	unsigned int need_wide;
	struct plan_field time, ip, cpu, pid, tid, flags;
	unsigned int comm_off, comm_len;
	uint64_t comm_mask[2];
	unsigned int kstack_off;
	unsigned int ustack_off;	/* 0: no user stacks in this layout */
	int kstack_rel, ustack_rel;
};

struct np_recfmt {
	struct tep_handle *tep;
	struct rec_fmt types[NMIPROF_REC_MAX];
	struct sample_plan plan;
	unsigned long unknown;
	uint64_t kframes[NMIPROF_MAX_FRAMES], uframes[NMIPROF_MAX_FRAMES];
};

struct np_recfmt *np_recfmt_new(void)
{
	struct np_recfmt *f = calloc(1, sizeof(*f));

	if (!f)
		return NULL;
	f->tep = tep_alloc();
	if (!f->tep) {
		free(f);
		return NULL;
	}
	tep_set_long_size(f->tep, 8);
	return f;
}

void np_recfmt_free(struct np_recfmt *f)
{
	if (!f)
		return;
	tep_free(f->tep);
	free(f);
}

/* Note a scalar field in the plan; 0 if the fast path cannot read it. */
static int plan_field(struct sample_plan *p, const struct field *fl,
		      struct plan_field *pf)
{
	if (fl->dynamic || !fl->size || fl->size > 8)
		return 0;
	pf->off = fl->off;
	pf->size = fl->size;
	pf->mask = fl->size == 8 ? ~0ULL : (1ULL << (8 * fl->size)) - 1;
	if (fl->off + fl->size > p->need)
		p->need = fl->off + fl->size;
	if (fl->off + 8 > p->need_wide)
		p->need_wide = fl->off + 8;
	return 1;
}

static void plan_sample(struct sample_plan *p, const struct rec_fmt *rf)
{
	const struct field *fl = rf->f;
	const struct field hdr_flags = {
		.present = 1,
		.off = offsetof(struct nmiprof_rec_header, common_flags),
		.size = sizeof(((struct nmiprof_rec_header *)0)->common_flags),
	};
	int ok;

	memset(p, 0, sizeof(*p));
	p->need = sizeof(struct nmiprof_rec_header);
	ok = plan_field(p, &fl[F_TIME], &p->time) &&
	     plan_field(p, &fl[F_IP], &p->ip) &&
	     plan_field(p, &fl[F_CPU], &p->cpu) &&
	     plan_field(p, &fl[F_PID], &p->pid) &&
	     plan_field(p, &fl[F_TID], &p->tid) &&
	     plan_field(p, fl[F_FLAGS].present ? &fl[F_FLAGS] : &hdr_flags,
			&p->flags);
	/* __data_loc words are 4 bytes (np_recfmt_add checked) */
	if (fl[F_KSTACK].off + 4 > p->need)
		p->need = fl[F_KSTACK].off + 4;
	p->kstack_off = fl[F_KSTACK].off;
	p->kstack_rel = fl[F_KSTACK].relative;
	if (fl[F_USTACK].present) {
		/* offset 0 is the header: never a real ustack field */
		ok = ok && fl[F_USTACK].off;
		if (fl[F_USTACK].off + 4 > p->need)
			p->need = fl[F_USTACK].off + 4;
		p->ustack_off = fl[F_USTACK].off;
		p->ustack_rel = fl[F_USTACK].relative;
	}
	/*
	 * comm is read like get_comm() does: up to its size (at most 15
	 * characters), cut at the record's end; keeping it out of `need`
	 * keeps a short comm field from failing the whole record.
	 */
	if (fl[F_COMM].present && !fl[F_COMM].dynamic) {
		p->comm_off = fl[F_COMM].off;
		p->comm_len = fl[F_COMM].size < NMIPROF_COMM_LEN - 1 ?
			      fl[F_COMM].size : NMIPROF_COMM_LEN - 1;
		memset(p->comm_mask, 0xff, p->comm_len);
		if (p->comm_off + NMIPROF_COMM_LEN > p->need_wide)
			p->need_wide = p->comm_off + NMIPROF_COMM_LEN;
	}
	if (p->need > p->need_wide)
		p->need_wide = p->need;
	p->usable = ok;
}

int np_recfmt_add(struct np_recfmt *f, const char *text, size_t len,
		  char *err, size_t errlen)
{
	struct tep_event *ev = NULL;
	enum tep_errno ret;
	struct rec_fmt *rf;
	char msg[128];

	ret = tep_parse_format(f->tep, &ev, text, len, "nmiprof");
	/* Only the fields matter: a print fmt we cannot parse is harmless. */
	if (!ev) {
		snprintf(err, errlen, "nmiprof format text does not parse "
			 "(expected ftrace-style name:, ID: and format: lines)");
		return -EINVAL;
	}
	if (ret && ret != TEP_ERRNO__READ_PRINT_FAILED &&
	    ret != TEP_ERRNO__PARSE_EVENT_FAILED) {
		tep_strerror(f->tep, ret, msg, sizeof(msg));
		snprintf(err, errlen, "nmiprof format text of %s does not parse: %s",
			 ev->name ? ev->name : "?", msg);
		return -EINVAL;
	}
	if (ev->id <= 0 || ev->id >= NMIPROF_REC_MAX) {
		/* A newer module's record type: it is skipped when met. */
		return 0;
	}
	rf = &f->types[ev->id];
	memset(rf, 0, sizeof(*rf));
	for (int i = 0; i < NR_FLD; i++) {
		struct tep_format_field *tf = tep_find_any_field(ev, fld_name[i]);

		if (!tf)
			continue;
		rf->f[i].present = 1;
		rf->f[i].dynamic = !!(tf->flags & TEP_FIELD_IS_DYNAMIC);
		rf->f[i].relative = !!(tf->flags & TEP_FIELD_IS_RELATIVE);
		rf->f[i].off = tf->offset;
		rf->f[i].size = tf->size;
		if (rf->f[i].dynamic && tf->size != 4) {
			snprintf(err, errlen, "nmiprof format of %s: dynamic field %s has size %d, expected 4",
				 ev->name, tf->name, tf->size);
			return -EINVAL;
		}
	}
	for (int i = 0; i < NR_FLD; i++) {
		if ((required[ev->id] & BIT(i)) && !rf->f[i].present) {
			snprintf(err, errlen, "nmiprof format of %s lacks field '%s' "
				 "(module and daemon versions too far apart)",
				 ev->name, fld_name[i]);
			return -EINVAL;
		}
		if ((i == F_KSTACK || i == F_USTACK) && rf->f[i].present &&
		    !rf->f[i].dynamic) {
			snprintf(err, errlen, "nmiprof format of %s: '%s' is not a __data_loc array",
				 ev->name, fld_name[i]);
			return -EINVAL;
		}
	}
	rf->present = 1;
	if (ev->id == NMIPROF_REC_SAMPLE)
		plan_sample(&f->plan, rf);
	return 0;
}

int np_recfmt_has(const struct np_recfmt *f, unsigned int type)
{
	return type < NMIPROF_REC_MAX && f->types[type].present;
}

unsigned long np_recfmt_unknown(const struct np_recfmt *f)
{
	return f->unknown;
}

/* Little-endian integer of 1..8 bytes; absent fields read as 0. */
static int get_u64(const struct field *fl, const uint8_t *rec, size_t size,
		   uint64_t *v)
{
	*v = 0;
	if (!fl->present)
		return 0;
	if (fl->size > 8 || fl->off + fl->size > size)
		return -EINVAL;
	memcpy(v, rec + fl->off, fl->size);	/* x86_64 only: host is LE */
	return 0;
}

/* Copy a __data_loc u64[] into out; returns entries or -EINVAL. */
static int get_frames(const struct field *fl, const uint8_t *rec, size_t size,
		      uint64_t *out)
{
	uint64_t loc, off, len;

	if (!fl->present)
		return 0;
	if (get_u64(fl, rec, size, &loc) < 0)
		return -EINVAL;
	off = NMIPROF_LOC_OFF(loc);
	len = NMIPROF_LOC_LEN(loc);
	if (fl->relative)
		off += fl->off + fl->size;
	if (off + len > size || len % 8)
		return -EINVAL;
	if (len > NMIPROF_MAX_FRAMES * 8)
		len = NMIPROF_MAX_FRAMES * 8;
	memcpy(out, rec + off, len);
	return (int)(len / 8);
}

static void get_comm(const struct field *fl, const uint8_t *rec, size_t size,
		     char *comm)
{
	size_t n;

	comm[0] = '\0';
	if (!fl->present || fl->off >= size)
		return;
	n = fl->size < NMIPROF_COMM_LEN - 1 ? fl->size : NMIPROF_COMM_LEN - 1;
	if (fl->off + n > size)
		n = size - fl->off;
	memcpy(comm, rec + fl->off, n);
	comm[n] = '\0';
}

/* Little-endian integer of 1..8 bytes at p (x86_64: the host is LE). */
static inline uint64_t ld(const uint8_t *p, unsigned int size)
{
	uint64_t v = 0;

	switch (size) {
	case 8:
		memcpy(&v, p, 8);
		break;
	case 4: {
		uint32_t w;

		memcpy(&w, p, 4);
		v = w;
		break;
	}
	case 2: {
		uint16_t w;

		memcpy(&w, p, 2);
		v = w;
		break;
	}
	default:
		memcpy(&v, p, size);
		break;
	}
	return v;
}

/* A field read as a whole u64 and masked: the caller checked need_wide. */
static inline uint64_t ld_wide(const uint8_t *rec, const struct plan_field *pf)
{
	uint64_t v;

	memcpy(&v, rec + pf->off, 8);
	return v & pf->mask;
}

/*
 * A __data_loc u64[] of the sample as a pointer to its frames: into the
 * record itself when they are 8-byte aligned (always so in a ring,
 * where records and their arrays are 8-byte aligned), else copied to
 * buf.  Returns the number of frames (at most NMIPROF_MAX_FRAMES, as in
 * get_frames()), or -EINVAL.
 */
static inline __attribute__((always_inline)) int
frames_at(const uint8_t *rec, size_t size, unsigned int loc_off, int relative,
	  uint64_t *buf, const uint64_t **out)
{
	uint32_t loc;
	uint64_t off, len;

	memcpy(&loc, rec + loc_off, 4);
	off = NMIPROF_LOC_OFF(loc);
	len = NMIPROF_LOC_LEN(loc);
	if (relative)
		off += loc_off + 4;
	if (off + len > size || len % 8)
		return -EINVAL;
	if (len > NMIPROF_MAX_FRAMES * 8)
		len = NMIPROF_MAX_FRAMES * 8;
	if (!((uintptr_t)(rec + off) % _Alignof(uint64_t))) {
		*out = (const uint64_t *)(const void *)(rec + off);
	} else {
		memcpy(buf, rec + off, len);
		*out = buf;
	}
	return (int)(len / 8);
}

static int decode_sample(struct np_recfmt *f, const uint8_t *rec, size_t size,
			 np_event_fn fn, void *arg)
{
	const struct sample_plan *p = &f->plan;
	struct np_event ev;
	struct np_ev_sample *s = &ev.sample;
	int nk, nu = 0;

	if (size < p->need)
		return -EINVAL;
	nk = frames_at(rec, size, p->kstack_off, p->kstack_rel, f->kframes,
		       &s->kframes);
	if (nk < 0)
		return -EINVAL;
	s->uframes = f->uframes;
	if (p->ustack_off) {
		nu = frames_at(rec, size, p->ustack_off, p->ustack_rel,
			       f->uframes, &s->uframes);
		if (nu < 0)
			return -EINVAL;
	}
	/* every member of the event set, none left to a memset */
	ev.type = NP_EV_SAMPLE;
	s->nr_kframes = nk;
	s->nr_uframes = nu;
	if (size >= p->need_wide) {
		uint64_t c[2];

		s->time_ns = ld_wide(rec, &p->time);
		s->ip = ld_wide(rec, &p->ip);
		s->cpu = ld_wide(rec, &p->cpu);
		s->pid = ld_wide(rec, &p->pid);
		s->tid = ld_wide(rec, &p->tid);
		s->flags = ld_wide(rec, &p->flags);
		/* comm_mask is 0 beyond comm_len, or all of it without comm */
		memcpy(c, rec + p->comm_off, sizeof(c));
		c[0] &= p->comm_mask[0];
		c[1] &= p->comm_mask[1];
		memcpy(s->comm, c, sizeof(c));
		return fn(&ev, arg) ? 1 : 0;
	}
	s->time_ns = ld(rec + p->time.off, p->time.size);
	s->ip = ld(rec + p->ip.off, p->ip.size);
	s->cpu = ld(rec + p->cpu.off, p->cpu.size);
	s->pid = ld(rec + p->pid.off, p->pid.size);
	s->tid = ld(rec + p->tid.off, p->tid.size);
	s->flags = ld(rec + p->flags.off, p->flags.size);
	memset(s->comm, 0, sizeof(s->comm));
	if (p->comm_len && p->comm_off < size)
		memcpy(s->comm, rec + p->comm_off,
		       p->comm_off + p->comm_len <= size ? p->comm_len :
		       size - p->comm_off);
	return fn(&ev, arg) ? 1 : 0;
}

int np_recfmt_decode(struct np_recfmt *f, const void *r, size_t size,
		     np_event_fn fn, void *arg)
{
	const struct nmiprof_rec_header *h = r;
	const uint8_t *rec = r;
	const struct rec_fmt *rf;
	const struct field *fl;
	struct np_event ev;
	uint64_t v[NR_FLD];
	int nk, nu = 0;

	if (size < sizeof(*h))
		return -EINVAL;
	if (h->common_type >= NMIPROF_REC_MAX || !f->types[h->common_type].present) {
		f->unknown++;
		return 0;
	}
	if (h->common_type == NMIPROF_REC_SAMPLE && f->plan.usable)
		return decode_sample(f, rec, size, fn, arg);
	rf = &f->types[h->common_type];
	fl = rf->f;
	for (int i = 0; i < NR_FLD; i++) {
		if (i == F_COMM || i == F_REGS || fl[i].dynamic)
			continue;
		if (get_u64(&fl[i], rec, size, &v[i]) < 0)
			return -EINVAL;
	}
	if (!fl[F_FLAGS].present)
		v[F_FLAGS] = h->common_flags;
	memset(&ev, 0, sizeof(ev));
	switch (h->common_type) {
	case NMIPROF_REC_SAMPLE:
		nk = get_frames(&fl[F_KSTACK], rec, size, f->kframes);
		nu = get_frames(&fl[F_USTACK], rec, size, f->uframes);
		if (nk < 0 || nu < 0)
			return -EINVAL;
		ev.type = NP_EV_SAMPLE;
		ev.sample.time_ns = v[F_TIME];
		ev.sample.ip = v[F_IP];
		ev.sample.cpu = v[F_CPU];
		ev.sample.pid = v[F_PID];
		ev.sample.tid = v[F_TID];
		ev.sample.flags = v[F_FLAGS];
		get_comm(&fl[F_COMM], rec, size, ev.sample.comm);
		ev.sample.nr_kframes = nk;
		ev.sample.nr_uframes = nu;
		ev.sample.kframes = f->kframes;
		ev.sample.uframes = f->uframes;
		break;
	case NMIPROF_REC_LOST:
		ev.type = NP_EV_LOST;
		ev.lost.cpu = v[F_CPU];
		ev.lost.lost = v[F_LOST];
		break;
	case NMIPROF_REC_LOCKUP:
		nk = get_frames(&fl[F_KSTACK], rec, size, f->kframes);
		if (nk < 0)
			return -EINVAL;
		ev.type = NP_EV_LOCKUP;
		ev.lockup.time_ns = v[F_TIME];
		ev.lockup.stuck_ns = v[F_STUCK];
		ev.lockup.real_ns = v[F_REAL];
		ev.lockup.cpu = v[F_CPU];
		ev.lockup.pid = v[F_PID];
		ev.lockup.tid = v[F_TID];
		ev.lockup.flags = v[F_LFLAGS];
		get_comm(&fl[F_COMM], rec, size, ev.lockup.comm);
		if (fl[F_REGS].present && fl[F_REGS].off < size) {
			size_t n = fl[F_REGS].size;

			if (n > sizeof(ev.lockup.regs))
				n = sizeof(ev.lockup.regs);
			if (fl[F_REGS].off + n > size)
				return -EINVAL;
			memcpy(&ev.lockup.regs, rec + fl[F_REGS].off, n);
		}
		ev.lockup.nr_kframes = nk;
		ev.lockup.kframes = f->kframes;
		break;
	default:
		f->unknown++;
		return 0;
	}
	return fn(&ev, arg) ? 1 : 0;
}
