// SPDX-License-Identifier: GPL-2.0
/*
 * nmiprof.ko record decoding by field name (see np_format.h).
 *
 * Slow path once per record type: libtraceevent parses the format text.
 * Fast path per record: fixed offsets from the cache below, bounds
 * checked against the record's size, so a corrupt or truncated record
 * is rejected rather than read past.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <traceevent/event-parse.h>
#include "np_format.h"

enum fld {
	F_FLAGS, F_SEQ, F_TIME, F_IP, F_CPU, F_PID, F_TID, F_COMM,
	F_KSTACK, F_USTACK, F_LOST, F_STUCK, F_LFLAGS, F_REGS, NR_FLD
};

static const char *const fld_name[NR_FLD] = {
	[F_FLAGS] = "common_flags", [F_SEQ] = "seq", [F_TIME] = "time_ns",
	[F_IP] = "ip", [F_CPU] = "cpu", [F_PID] = "pid", [F_TID] = "tid",
	[F_COMM] = "comm", [F_KSTACK] = "kstack", [F_USTACK] = "ustack",
	[F_LOST] = "lost", [F_STUCK] = "stuck_ns", [F_LFLAGS] = "lockup_flags",
	[F_REGS] = "regs",
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

struct np_format {
	struct tep_handle *tep;
	struct rec_fmt types[NMIPROF_REC_MAX];
	unsigned long unknown;
	uint64_t kframes[NMIPROF_MAX_FRAMES], uframes[NMIPROF_MAX_FRAMES];
};

struct np_format *np_format_new(void)
{
	struct np_format *f = calloc(1, sizeof(*f));

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

void np_format_free(struct np_format *f)
{
	if (!f)
		return;
	tep_free(f->tep);
	free(f);
}

int np_format_add(struct np_format *f, const char *text, size_t len,
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
	return 0;
}

int np_format_has(const struct np_format *f, unsigned int type)
{
	return type < NMIPROF_REC_MAX && f->types[type].present;
}

unsigned long np_format_unknown(const struct np_format *f)
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

int np_format_decode(struct np_format *f, const void *r, size_t size,
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
