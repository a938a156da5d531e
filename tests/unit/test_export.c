// SPDX-License-Identifier: GPL-2.0
/*
 * Unit tests for the exporters: protobuf wire encoding, folded lines,
 * a pprof Profile decoded back by an independent minimal reader, and the
 * svg flame graph's frames.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "export.h"
#include "export_pb.h"

#include "check.h"

static int bytes_are(const struct np_buf *b, const char *hex)
{
	char buf[256] = "";

	for (size_t i = 0; i < b->len && i < 100; i++)
		sprintf(buf + strlen(buf), "%02x", b->p[i]);
	if (strcmp(buf, hex))
		fprintf(stderr, "  got %s want %s\n", buf, hex);
	return !strcmp(buf, hex);
}

static void test_pb(void)
{
	struct np_buf b;
	uint64_t v[3] = { 1, 300, 0 };

	np_buf_init(&b);
	np_put_var(&b, 0);
	CHECK(bytes_are(&b, "00"));
	np_buf_reset(&b);
	np_put_var(&b, 127);
	np_put_var(&b, 128);
	np_put_var(&b, 300);
	CHECK(bytes_are(&b, "7f8001ac02"));
	np_buf_reset(&b);
	np_put_var(&b, UINT64_MAX);
	CHECK(bytes_are(&b, "ffffffffffffffffff01"));
	np_buf_reset(&b);
	np_pb_uint(&b, 1, 150);		/* the protobuf docs' example */
	CHECK(bytes_are(&b, "089601"));
	np_buf_reset(&b);
	np_pb_str(&b, 2, "testing");
	CHECK(bytes_are(&b, "120774657374696e67"));
	np_buf_reset(&b);
	np_pb_packed(&b, 4, v, 3);
	CHECK(bytes_are(&b, "220401ac0200"));
	np_buf_reset(&b);
	np_pb_packed(&b, 4, v, 0);	/* empty packed field: omitted */
	CHECK(b.len == 0);
	np_pb_uint(&b, 20, 1);		/* two-byte tag */
	CHECK(bytes_are(&b, "a00101"));
	np_buf_free(&b);
}

#define APP_BID	"5e1f00d2a3b4c5d6e7f8091a2b3c4d5e6f708192"
static const struct np_frame A = { "/bin/app", "a", 0, APP_BID };
static const struct np_frame B = { "/bin/app", "b;x", 0, NULL };	/* ';' gets escaped */
static const struct np_frame M = { "/bin/app", "main", 0, APP_BID };
static const struct np_frame K = { "[kernel.kallsyms]", "clear_page", 1, NULL };

static struct topview *fixture(void)
{
	struct topview *tv = topview_new();
	struct np_frame s1[] = { A, B, M }, s2[] = { K, A, M }, s3[] = { M };
	struct topview_sample s[] = {
		{ 0, 10, "app", s1, 3, 5, 0 },
		{ 1, 10, "app", s1, 3, 2, 0 },	/* other cpu: merged in folded */
		{ 0, 10, "app", s2, 3, 1, 0 },
		{ 0, 11, "tool", s3, 1, 4, 0 },
	};

	for (size_t i = 0; i < sizeof(s) / sizeof(s[0]); i++)
		CHECK(topview_add(tv, &s[i]) == 0);
	return tv;
}

static char *run_export(struct topview *tv, enum np_export_format fmt,
			const struct np_export_opts *o, size_t *len)
{
	char *buf = NULL, err[256] = "";
	FILE *f = open_memstream(&buf, len);

	CHECK(np_export(tv, fmt, o, f, err, sizeof(err)) == 0);
	fclose(f);
	return buf;
}

static void test_folded(void)
{
	struct topview *tv = fixture();
	struct np_export_opts o;
	size_t len;
	char *out;

	np_export_opts_init(&o);
	out = run_export(tv, NP_EXPORT_FOLDED, &o, &len);
	CHECK(!strcmp(out,
		"app;main;a;clear_page_[k] 1\n"
		"app;main;b_x;a 7\n"
		"tool;main 4\n"));
	free(out);
	o.no_comm = 1;
	out = run_export(tv, NP_EXPORT_FOLDED, &o, &len);
	CHECK(!strcmp(out, "main 4\nmain;a;clear_page_[k] 1\nmain;b_x;a 7\n"));
	free(out);
	CHECK(np_export_parse_format("pprof") == NP_EXPORT_PPROF);
	CHECK(np_export_parse_format("png") == -1);
	topview_free(tv);
}

/* An independent reader: just enough protobuf to check the Profile. */
struct rd {
	const uint8_t *p, *end;
	int bad;
};

static uint64_t rd_varint(struct rd *r)
{
	uint64_t v = 0;

	for (int shift = 0; shift < 64; shift += 7) {
		if (r->p >= r->end) {
			r->bad = 1;
			return 0;
		}
		v |= (uint64_t)(*r->p & 0x7f) << shift;
		if (!(*r->p++ & 0x80))
			return v;
	}
	r->bad = 1;
	return 0;
}

/* Next field: returns 0 at the end; sub is set for length-delimited. */
static int rd_field(struct rd *r, uint32_t *field, uint64_t *val, struct rd *sub)
{
	uint64_t key;

	if (r->p >= r->end || r->bad)
		return 0;
	key = rd_varint(r);
	*field = (uint32_t)(key >> 3);
	switch (key & 7) {
	case 0:
		*val = rd_varint(r);
		return !r->bad;
	case 2:
		*val = rd_varint(r);
		if (r->bad || *val > (uint64_t)(r->end - r->p)) {
			r->bad = 1;
			return 0;
		}
		sub->p = r->p;
		sub->end = r->p + *val;
		sub->bad = 0;
		r->p += *val;
		return 1;
	default:
		r->bad = 1;
		return 0;
	}
}

static void test_pprof(void)
{
	struct topview *tv = fixture();
	struct np_export_opts o;
	char strings[64][48];
	size_t len, nr_str = 0, nr_samples = 0, nr_func = 0, nr_loc = 0, nr_map = 0;
	uint64_t value_sum = 0, ns_sum = 0, period = 0, f2name[16] = { 0 };
	uint64_t leaf_of_5 = 0, map_file[4] = { 0 }, map_bid[4] = { 0 };
	struct rd r, sub, s2;
	uint32_t field;
	uint64_t val;
	char *out;

	np_export_opts_init(&o);
	o.freq_hz = 100;
	out = run_export(tv, NP_EXPORT_PPROF, &o, &len);
	r = (struct rd){ (const uint8_t *)out, (const uint8_t *)out + len, 0 };
	while (rd_field(&r, &field, &val, &sub)) {
		switch (field) {
		case 2: {	/* Sample */
			uint64_t locs[8], vals[2];
			size_t nl = 0, nv = 0;

			nr_samples++;
			while (rd_field(&sub, &field, &val, &s2)) {
				if (field == 1)
					while (s2.p < s2.end && nl < 8)
						locs[nl++] = rd_varint(&s2);
				if (field == 2)
					while (s2.p < s2.end && nv < 2)
						vals[nv++] = rd_varint(&s2);
			}
			CHECK(nv == 2);
			if (nv == 2) {
				value_sum += vals[0];
				ns_sum += vals[1];
				if (vals[0] == 5 && nl)
					leaf_of_5 = locs[0];
			}
			break;
		}
		case 3:	/* Mapping: filename, build_id */
			while (rd_field(&sub, &field, &val, &s2)) {
				if (field == 5 && nr_map < 4)
					map_file[nr_map] = val;
				if (field == 6 && nr_map < 4)
					map_bid[nr_map] = val;
			}
			nr_map++;
			break;
		case 4:
			nr_loc++;
			break;
		case 5: {	/* Function: id, name */
			uint64_t id = 0, name = 0;

			nr_func++;
			while (rd_field(&sub, &field, &val, &s2)) {
				if (field == 1)
					id = val;
				if (field == 2)
					name = val;
			}
			if (id < 16)
				f2name[id] = name;
			break;
		}
		case 6:
			if (nr_str < 64) {
				size_t n = (size_t)(sub.end - sub.p);

				snprintf(strings[nr_str], sizeof(strings[0]), "%.*s",
					 (int)n, (const char *)sub.p);
			}
			nr_str++;
			break;
		case 12:
			period = val;
			break;
		}
	}
	CHECK(!r.bad);
	CHECK(nr_str > 0 && strings[0][0] == 0);
	/* s1 on two cpus stays two samples; weights add up either way */
	CHECK(nr_samples == 4);
	CHECK(value_sum == 12);
	CHECK(period == 10000000);
	CHECK(ns_sum == 12 * period);
	CHECK(nr_func == 4 && nr_loc == 4);
	/* /bin/app's build-id (a frame without one: the dso's, from another
	 * frame), none for the kernel */
	CHECK(nr_map == 2);
	for (size_t i = 0; i < 2; i++) {
		int app;

		CHECK(map_file[i] && map_file[i] < nr_str && map_bid[i] < nr_str);
		if (!map_file[i] || map_file[i] >= nr_str || map_bid[i] >= nr_str)
			continue;
		app = !strcmp(strings[map_file[i]], "/bin/app");
		CHECK(app || !strcmp(strings[map_file[i]], "[kernel.kallsyms]"));
		CHECK(app ? !strcmp(strings[map_bid[i]], APP_BID) : !map_bid[i]);
	}
	/* the leaf of the heaviest sample is function "a" */
	CHECK(leaf_of_5 && leaf_of_5 < 16 && f2name[leaf_of_5] < nr_str &&
	      !strcmp(strings[f2name[leaf_of_5]], "a"));
	free(out);
	topview_free(tv);
}

static void test_svg(void)
{
	struct topview *tv = fixture();
	struct np_export_opts o;
	size_t len;
	char *out, *again;

	np_export_opts_init(&o);
	o.title = "t<1>";
	out = run_export(tv, NP_EXPORT_SVG, &o, &len);
	CHECK(strstr(out, "<svg") && strstr(out, "</svg>\n"));
	CHECK(strstr(out, "t&lt;1&gt;"));
	CHECK(strstr(out, "<title>all (12 samples, 100.00%)</title>"));
	CHECK(strstr(out, "<title>a (7 samples, 58.33%)</title>"));
	CHECK(strstr(out, "<title>clear_page_[k] (1 samples, 8.33%)</title>"));
	CHECK(strstr(out, "function zoom("));
	/* deterministic */
	again = run_export(tv, NP_EXPORT_SVG, &o, &len);
	CHECK(!strcmp(out, again));
	free(again);
	free(out);
	topview_free(tv);

	/* an empty profile is still a valid document */
	tv = topview_new();
	out = run_export(tv, NP_EXPORT_SVG, &o, &len);
	CHECK(strstr(out, "</svg>\n") != NULL);
	free(out);
	topview_free(tv);
}

static const struct np_test_case cases[] = {
	NP_CASE(test_pb),
	NP_CASE(test_folded),
	NP_CASE(test_pprof),
	NP_CASE(test_svg),
	{ 0 }
};

int main(int argc, char **argv)
{
	return np_test_main(argc, argv, cases);
}
