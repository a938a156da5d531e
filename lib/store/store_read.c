// SPDX-License-Identifier: GPL-2.0
/*
 * Reading segments back: the version dispatch (v4 through its stack
 * dictionary, the others self-contained) over a buffer of segments, for
 * store directories and standalone profile files alike.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "store_seg.h"

void np_store_warnf(np_warn_fn warn, void *arg, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (warn)
		warn(arg, msg);
	else
		fprintf(stderr, "nmiprof: %s\n", msg);
}

void np_read_opts_init(struct np_read_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->pid = -1;
}

static int overlaps(const struct np_seg_info *in, const struct np_read_opts *o)
{
	if (o->since_ns && in->end_ns < o->since_ns)
		return 0;
	if (o->until_ns && in->start_ns > o->until_ns)
		return 0;
	return 1;
}

static void stats_add(struct np_read_stats *st, const struct np_seg_info *in)
{
	if (!st->segments || in->start_ns < st->first_ns)
		st->first_ns = in->start_ns;
	if (!st->segments || in->end_ns > st->last_ns)
		st->last_ns = in->end_ns;
	st->segments++;
	if (in->period_ns && !st->period_ns)
		st->period_ns = in->period_ns;
	else if (in->period_ns && in->period_ns != st->period_ns)
		st->period_mixed = 1;
	st->samples += in->samples;
	st->lost += in->lost;
}

int np_seg_read_buf(const char *name, const uint8_t *buf, size_t len,
		    const struct np_read_opts *o, struct np_agg *a,
		    struct np_read_stats *st, struct np_dict_rd *rd)
{
	size_t off = 0;

	while (off < len) {
		struct np_seg_info in;
		char why[160];
		int ret = np_seg_header(buf + off, len - off, &in, why, sizeof(why));

		if (!ret && in.size > len - off) {
			snprintf(why, sizeof(why),
				 "truncated segment (%zu of %llu bytes)",
				 len - off, (unsigned long long)in.size);
			ret = -EBADMSG;
		}
		if (!ret && overlaps(&in, o))
			ret = rd && in.version == NP_SEG_VERSION_DICT ?
			      np_seg_decode_dict(rd, buf + off, in.size, a,
						 o->pid, why, sizeof(why)) :
			      np_seg_decode(buf + off, in.size, a, o->pid, why,
					    sizeof(why));
		if (!ret) {
			if (overlaps(&in, o))
				stats_add(st, &in);
			off += in.size;
			continue;
		}
		np_store_warnf(o->warn, o->warn_arg,
			       "%s: offset %zu: %s, skipped", name, off, why);
		st->skipped++;
		if (np_store_err_transient(ret))
			return ret;
		{
			const uint8_t *next = memmem(buf + off + 1, len - off - 1,
						     NP_SEG_MAGIC, 8);

			if (!next)
				return 0;
			off = next - buf;
		}
	}
	return 0;
}

int np_seg_read_one(const char *path, const struct np_read_opts *o,
		    struct np_agg *a, struct np_read_stats *st,
		    struct np_dict_rd *rd)
{
	uint32_t before = st->skipped;
	size_t len;
	void *buf;
	int ret = np_read_file(path, NP_SEG_MAX_PAYLOAD + 4096, &buf, &len);

	if (ret) {
		np_store_warnf(o->warn, o->warn_arg, "%s: %s, skipped", path,
			       strerror(-ret));
		st->skipped++;
		return ret;
	}
	ret = np_seg_read_buf(path, buf, len, o, a, st, rd);
	free(buf);
	if (ret)
		return ret;
	return st->skipped == before ? 0 : -EBADMSG;
}
