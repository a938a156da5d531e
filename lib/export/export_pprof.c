// SPDX-License-Identifier: GPL-2.0
/*
 * pprof export: a perftools.profiles.Profile message (profile.proto),
 * written uncompressed (`pprof` and `go tool pprof` accept it as is;
 * gzip it for tools that insist).
 *
 * Frames are symbolized at record time, so there are no addresses to
 * give: every distinct (dso, symbol) becomes one Function and one
 * Location (same id) whose Line points at it, and every dso (per
 * build-id, when frames carry one) one Mapping with has_functions set
 * and the build-id in hex, as perf and pprof give it.  Each sample
 * carries two values, samples/count and cpu/nanoseconds (count *
 * period), and labels comm and pid.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "export.h"
#include "export_pb.h"
#include "export_strmap.h"

/* profile.proto field numbers */
enum {
	PROFILE_SAMPLE_TYPE = 1, PROFILE_SAMPLE = 2, PROFILE_MAPPING = 3,
	PROFILE_LOCATION = 4, PROFILE_FUNCTION = 5, PROFILE_STRING_TABLE = 6,
	PROFILE_TIME_NANOS = 9, PROFILE_DURATION_NANOS = 10,
	PROFILE_PERIOD_TYPE = 11, PROFILE_PERIOD = 12,
	VALUETYPE_TYPE = 1, VALUETYPE_UNIT = 2,
	SAMPLE_LOCATION_ID = 1, SAMPLE_VALUE = 2, SAMPLE_LABEL = 3,
	LABEL_KEY = 1, LABEL_STR = 2, LABEL_NUM = 3,
	MAPPING_ID = 1, MAPPING_FILENAME = 5, MAPPING_BUILD_ID = 6,
	MAPPING_HAS_FUNCTIONS = 7,
	LOCATION_ID = 1, LOCATION_MAPPING_ID = 2, LOCATION_LINE = 4,
	LINE_FUNCTION_ID = 1,
	FUNCTION_ID = 1, FUNCTION_NAME = 2, FUNCTION_SYSTEM_NAME = 3,
	FUNCTION_FILENAME = 4,
};

struct pprof {
	struct np_strmap strs;	/* string_table; id 0 is "" */
	struct np_strmap funcs;	/* "dso\x01name\x01k" -> function/location id - 1 */
	struct np_strmap maps;	/* "dso[\x01build-id]" -> mapping id - 1 */
	struct np_buf out;	/* the Profile, samples first */
	struct np_buf defs;	/* functions, locations, mappings */
	struct np_buf sub, sub2;
	uint64_t *locs;
	size_t cap_locs;
	uint64_t period;
	char *key;
	size_t cap_key;
	int oom;
};

static uint64_t str_id(struct pprof *p, const char *s)
{
	int is_new;
	int64_t id = np_strmap_get(&p->strs, s, &is_new);

	if (id < 0) {
		p->oom = 1;
		return 0;
	}
	return (uint64_t)id;
}

/* p->key: "a" or "a\x01b"; 0 or -ENOMEM. */
static int set_key(struct pprof *p, const char *a, const char *b)
{
	size_t need = strlen(a) + (b ? strlen(b) + 1 : 0) + 1;

	if (need > p->cap_key) {
		char *k = realloc(p->key, need);

		if (!k) {
			p->oom = 1;
			return -ENOMEM;
		}
		p->key = k;
		p->cap_key = need;
	}
	snprintf(p->key, need, b ? "%s\x01%s" : "%s", a, b);
	return 0;
}

static uint64_t mapping_id(struct pprof *p, const char *dso, const char *bid)
{
	int64_t id;
	int is_new;

	if (bid && !*bid)
		bid = NULL;
	if (set_key(p, dso, bid))
		return 0;
	id = np_strmap_get(&p->maps, p->key, &is_new);
	if (id < 0) {
		p->oom = 1;
		return 0;
	}
	if (is_new) {
		np_buf_reset(&p->sub);
		np_pb_uint(&p->sub, MAPPING_ID, (uint64_t)id + 1);
		np_pb_uint(&p->sub, MAPPING_FILENAME, str_id(p, dso));
		if (bid)
			np_pb_uint(&p->sub, MAPPING_BUILD_ID, str_id(p, bid));
		np_pb_uint(&p->sub, MAPPING_HAS_FUNCTIONS, 1);
		np_pb_msg(&p->defs, PROFILE_MAPPING, &p->sub);
	}
	return (uint64_t)id + 1;
}

static uint64_t location_id(struct pprof *p, const struct np_frame *f)
{
	const char *dso = f->dso ? f->dso : "[unknown]";
	const char *name = f->sym ? f->sym : "[unknown]";
	size_t need = strlen(dso) + strlen(name) + 8;
	int64_t id;
	int is_new;

	if (need > p->cap_key) {
		char *k = realloc(p->key, need);

		if (!k) {
			p->oom = 1;
			return 0;
		}
		p->key = k;
		p->cap_key = need;
	}
	snprintf(p->key, need, "%s\x01%s\x01%d", dso, name, !!f->kernel);
	id = np_strmap_get(&p->funcs, p->key, &is_new);
	if (id < 0) {
		p->oom = 1;
		return 0;
	}
	if (is_new) {
		uint64_t fid = (uint64_t)id + 1;
		uint64_t mid = mapping_id(p, dso, f->build_id);

		np_buf_reset(&p->sub);
		np_pb_uint(&p->sub, FUNCTION_ID, fid);
		np_pb_uint(&p->sub, FUNCTION_NAME, str_id(p, name));
		np_pb_uint(&p->sub, FUNCTION_SYSTEM_NAME, str_id(p, name));
		np_pb_uint(&p->sub, FUNCTION_FILENAME, str_id(p, dso));
		np_pb_msg(&p->defs, PROFILE_FUNCTION, &p->sub);

		np_buf_reset(&p->sub2);
		np_pb_uint(&p->sub2, LINE_FUNCTION_ID, fid);
		np_buf_reset(&p->sub);
		np_pb_uint(&p->sub, LOCATION_ID, fid);
		np_pb_uint(&p->sub, LOCATION_MAPPING_ID, mid);
		np_pb_msg(&p->sub, LOCATION_LINE, &p->sub2);
		np_pb_msg(&p->defs, PROFILE_LOCATION, &p->sub);
	}
	return (uint64_t)id + 1;
}

static int add_sample(const struct np_frame *frames, unsigned nr, uint32_t pid,
		      const char *comm, double w, void *arg)
{
	struct pprof *p = arg;
	uint64_t count = (uint64_t)llround(w), values[2];

	if (!count)
		return 0;
	if (nr > p->cap_locs) {
		uint64_t *l = realloc(p->locs, nr * sizeof(*l));

		if (!l)
			return -ENOMEM;
		p->locs = l;
		p->cap_locs = nr;
	}
	/* pprof wants the leaf first, which is how frames[] comes. */
	for (unsigned i = 0; i < nr; i++)
		p->locs[i] = location_id(p, &frames[i]);
	values[0] = count;
	values[1] = count * p->period;

	np_buf_reset(&p->sub);
	np_pb_packed(&p->sub, SAMPLE_LOCATION_ID, p->locs, nr);
	np_pb_packed(&p->sub, SAMPLE_VALUE, values, 2);
	np_buf_reset(&p->sub2);
	np_pb_uint(&p->sub2, LABEL_KEY, str_id(p, "comm"));
	np_pb_uint(&p->sub2, LABEL_STR, str_id(p, comm));
	np_pb_msg(&p->sub, SAMPLE_LABEL, &p->sub2);
	np_buf_reset(&p->sub2);
	np_pb_uint(&p->sub2, LABEL_KEY, str_id(p, "pid"));
	np_pb_uint(&p->sub2, LABEL_NUM, pid);
	np_pb_msg(&p->sub, SAMPLE_LABEL, &p->sub2);
	np_pb_msg(&p->out, PROFILE_SAMPLE, &p->sub);
	return p->oom || p->out.oom ? -ENOMEM : 0;
}

static void value_type(struct pprof *p, uint32_t field, const char *type,
		       const char *unit)
{
	np_buf_reset(&p->sub);
	np_pb_uint(&p->sub, VALUETYPE_TYPE, str_id(p, type));
	np_pb_uint(&p->sub, VALUETYPE_UNIT, str_id(p, unit));
	np_pb_msg(&p->out, field, &p->sub);
}

int np_export_pprof(struct topview *tv, const struct np_export_opts *o,
		    FILE *out, char *err, size_t errlen)
{
	struct pprof p = { 0 };
	int ret;

	np_buf_init(&p.out);
	np_buf_init(&p.defs);
	np_buf_init(&p.sub);
	np_buf_init(&p.sub2);
	/* --freq, else the profile's own period; unknown (profiles written
	 * before it was recorded): the backends' default, 99 Hz. */
	p.period = o->freq_hz ? 1000000000ULL / o->freq_hz :
		   o->period_ns ? o->period_ns : 1000000000ULL / 99;
	str_id(&p, "");		/* string_table[0] must be "" */

	value_type(&p, PROFILE_SAMPLE_TYPE, "samples", "count");
	value_type(&p, PROFILE_SAMPLE_TYPE, "cpu", "nanoseconds");
	ret = topview_foreach_stack(tv, add_sample, &p);
	if (!ret) {
		np_put_bytes(&p.out, p.defs.p, p.defs.len);
		value_type(&p, PROFILE_PERIOD_TYPE, "cpu", "nanoseconds");
		np_pb_uint(&p.out, PROFILE_PERIOD, p.period);
		if (o->time_ns)
			np_pb_uint(&p.out, PROFILE_TIME_NANOS, o->time_ns);
		if (o->duration_ns)
			np_pb_uint(&p.out, PROFILE_DURATION_NANOS, o->duration_ns);
		/* Last, so that every string interned above is in it. */
		for (size_t i = 0; i < p.strs.nr; i++)
			np_pb_str(&p.out, PROFILE_STRING_TABLE, p.strs.keys[i]);
	}
	if (ret || p.oom || p.out.oom || p.defs.oom) {
		snprintf(err, errlen, "out of memory encoding the pprof profile");
		ret = -ENOMEM;
	} else if (fwrite(p.out.p, 1, p.out.len, out) != p.out.len ||
		   fflush(out)) {
		snprintf(err, errlen, "write error: %s", strerror(errno));
		ret = -EIO;
	}
	np_buf_free(&p.out);
	np_buf_free(&p.defs);
	np_buf_free(&p.sub);
	np_buf_free(&p.sub2);
	np_strmap_free(&p.strs);
	np_strmap_free(&p.funcs);
	np_strmap_free(&p.maps);
	free(p.locs);
	free(p.key);
	return ret;
}
