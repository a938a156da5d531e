// SPDX-License-Identifier: GPL-2.0
/*
 * Record layouts as ftrace format text, so the daemon decodes records by
 * field name with libtraceevent's tep_parse_format() instead of trusting
 * a compiled-in struct.  The syntax is that of f_show() in
 * kernel/trace/trace_events.c: common fields, a blank line, the event's
 * own fields, a blank line and the print fmt.
 *
 * Offsets and sizes come from offsetof()/sizeof_field() on the ABI
 * structs, so the text cannot drift from the layout.  ID is the record
 * type.
 */
#include <linux/kernel.h>
#include <linux/stddef.h>
#include <linux/errno.h>
#include <linux/stdarg.h>
#include <nmiprof/nmiprof_abi.h>

#include "format.h"

struct np_field {
	const char	*type;
	const char	*name;
	unsigned int	offset;
	unsigned int	size;
	bool		is_signed;
};

#define NP_FIELD(st, ty, f, sgn) \
	{ ty, #f, offsetof(struct st, f), sizeof_field(struct st, f), sgn }
#define NP_ARRAY(st, ty, f, n) \
	{ ty, #f "[" #n "]", offsetof(struct st, f), sizeof_field(struct st, f), false }
#define NP_DATA_LOC(st, ty, f) \
	{ "__data_loc " ty "[]", #f, offsetof(struct st, f), 4, false }

/* Every record starts with the header, so these are the same for all. */
static const struct np_field np_common_fields[] = {
	NP_FIELD(nmiprof_rec_header, "unsigned short", common_type, false),
	NP_FIELD(nmiprof_rec_header, "unsigned short", common_flags, false),
	NP_FIELD(nmiprof_rec_header, "unsigned int", common_size, false),
};

static const struct np_field np_sample_fields[] = {
	NP_FIELD(nmiprof_sample, "u64", seq, false),
	NP_FIELD(nmiprof_sample, "u64", time_ns, false),
	NP_FIELD(nmiprof_sample, "u64", ip, false),
	NP_FIELD(nmiprof_sample, "u32", cpu, false),
	NP_FIELD(nmiprof_sample, "u32", pid, false),
	NP_FIELD(nmiprof_sample, "u32", tid, false),
	NP_FIELD(nmiprof_sample, "u16", nr_kframes, false),
	NP_FIELD(nmiprof_sample, "u16", nr_uframes, false),
	NP_ARRAY(nmiprof_sample, "char", comm, 16),
	NP_DATA_LOC(nmiprof_sample, "u64", kstack),
	NP_DATA_LOC(nmiprof_sample, "u64", ustack),
	NP_DATA_LOC(nmiprof_sample, "u64", uregs),
	NP_DATA_LOC(nmiprof_sample, "u8", ustack_raw),
};

static const struct np_field np_lost_fields[] = {
	NP_FIELD(nmiprof_lost, "u64", seq, false),
	NP_FIELD(nmiprof_lost, "u64", time_ns, false),
	NP_FIELD(nmiprof_lost, "u64", lost, false),
	NP_FIELD(nmiprof_lost, "u32", cpu, false),
};

/* regs is struct nmiprof_regs: 21 u64s in struct pt_regs order. */
static const struct np_field np_lockup_fields[] = {
	NP_FIELD(nmiprof_lockup, "u64", seq, false),
	NP_FIELD(nmiprof_lockup, "u64", time_ns, false),
	NP_FIELD(nmiprof_lockup, "u64", stuck_ns, false),
	NP_FIELD(nmiprof_lockup, "u32", cpu, false),
	NP_FIELD(nmiprof_lockup, "u32", pid, false),
	NP_FIELD(nmiprof_lockup, "u32", tid, false),
	NP_FIELD(nmiprof_lockup, "u16", nr_kframes, false),
	NP_FIELD(nmiprof_lockup, "u16", lockup_flags, false),
	NP_ARRAY(nmiprof_lockup, "char", comm, 16),
	NP_ARRAY(nmiprof_lockup, "u64", regs, 21),
	NP_DATA_LOC(nmiprof_lockup, "u64", kstack),
	NP_FIELD(nmiprof_lockup, "u64", real_ns, false),
};

struct np_event_desc {
	const char		*name;
	const struct np_field	*fields;
	unsigned int		nr_fields;
	const char		*print_fmt;
};

static const struct np_event_desc np_events[NMIPROF_REC_MAX] = {
	[NMIPROF_REC_SAMPLE] = {
		"sample", np_sample_fields, ARRAY_SIZE(np_sample_fields),
		"\"cpu=%u pid=%u tid=%u comm=%s ip=0x%llx kframes=%u uframes=%u\", REC->cpu, REC->pid, REC->tid, REC->comm, REC->ip, REC->nr_kframes, REC->nr_uframes",
	},
	[NMIPROF_REC_LOST] = {
		"lost", np_lost_fields, ARRAY_SIZE(np_lost_fields),
		"\"cpu=%u seq=%llu lost=%llu\", REC->cpu, REC->seq, REC->lost",
	},
	[NMIPROF_REC_LOCKUP] = {
		"lockup", np_lockup_fields, ARRAY_SIZE(np_lockup_fields),
		"\"cpu=%u pid=%u comm=%s stuck_ns=%llu\", REC->cpu, REC->pid, REC->comm, REC->stuck_ns",
	},
};

/* The ABI pins these; the format text must agree with the header. */
static_assert(sizeof(struct nmiprof_rec_header) == 8);
static_assert(offsetof(struct nmiprof_sample, hdr) == 0);
static_assert(offsetof(struct nmiprof_lost, hdr) == 0);
static_assert(offsetof(struct nmiprof_lockup, hdr) == 0);
static_assert(sizeof(struct nmiprof_sample) % 8 == 0);
static_assert(sizeof(struct nmiprof_lost) % 8 == 0);
static_assert(sizeof(struct nmiprof_lockup) % 8 == 0);
static_assert(sizeof(struct nmiprof_regs) == 21 * 8);
static_assert(sizeof_field(struct nmiprof_sample, comm) == 16);

/* Append to @buf like scnprintf(), but return the untruncated length. */
static __printf(4, 5) size_t np_put(char *buf, size_t len, size_t n,
				   const char *fmt, ...)
{
	va_list args;

	va_start(args, fmt);
	n += vsnprintf(n < len ? buf + n : NULL, n < len ? len - n : 0,
		       fmt, args);
	va_end(args);
	return n;
}

static size_t np_put_field(char *buf, size_t len, size_t n,
			   const struct np_field *f)
{
	return np_put(buf, len, n,
		      "\tfield:%s %s;\toffset:%u;\tsize:%u;\tsigned:%d;\n",
		      f->type, f->name, f->offset, f->size, f->is_signed);
}

int np_format(u32 type, char *buf, size_t len)
{
	const struct np_event_desc *ev;
	unsigned int i;
	size_t n;

	if (type >= NMIPROF_REC_MAX || !np_events[type].name)
		return -EINVAL;
	ev = &np_events[type];

	n = np_put(buf, len, 0, "name: %s\nID: %u\nformat:\n", ev->name, type);
	for (i = 0; i < ARRAY_SIZE(np_common_fields); i++)
		n = np_put_field(buf, len, n, &np_common_fields[i]);
	n = np_put(buf, len, n, "\n");
	for (i = 0; i < ev->nr_fields; i++)
		n = np_put_field(buf, len, n, &ev->fields[i]);
	n = np_put(buf, len, n, "\nprint fmt: %s\n", ev->print_fmt);
	return n + 1;
}
