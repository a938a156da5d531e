// SPDX-License-Identifier: GPL-2.0
/*
 * Garbage never crashes a reader: truncations, bit flips, payloads that
 * are mutated and then re-checksummed (so the decoder's own bounds checks
 * are what stands between garbage and memory), random files in a store
 * directory, and damaged stack dictionaries (bit flips, cuts, chunks
 * mutated behind valid checksums).  Most useful under -fsanitize=address.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>
#include <sys/stat.h>
#include <zstd.h>
#include "test_store_util.h"
#include "np_crc32c.h"
#include "store_seg.h"

static uint64_t seed = 42;

static int decode(const void *buf, size_t len, int *ok)
{
	struct np_agg *a = np_agg_new(NULL);
	char err[256];
	int ret = np_seg_decode(buf, len, a, -1, err, sizeof(err));

	if (ret)
		CHECK(np_agg_samples(a) == 0);	/* nothing half-merged */
	*ok += !ret;
	np_agg_free(a);
	return ret;
}

/* Rebuild a valid-checksum segment around a (mutated) raw payload. */
static size_t reseal(const struct np_seg_hdr *h0, const uint8_t *raw,
		     size_t rawlen, uint8_t *out, size_t cap)
{
	struct np_seg_hdr h = *h0;
	size_t c = ZSTD_compress(out + sizeof(h), cap - sizeof(h), raw, rawlen, 1);

	if (ZSTD_isError(c))
		return 0;
	h.raw_size = rawlen;
	h.comp_size = c;
	h.payload_crc = np_crc32c(0, out + sizeof(h), c);
	h.hdr_crc = np_crc32c(0, &h, offsetof(struct np_seg_hdr, hdr_crc));
	memcpy(out, &h, sizeof(h));
	return sizeof(h) + c;
}

/* the directory the cases write in, removed when they all pass */
static char base[4096];

static void test_memory(void)
{
	struct np_agg *a = util_agg();
	struct np_seg_hdr h;
	uint8_t *seg, *raw, *mut, *out;
	size_t len, rawlen, cap;
	int ok = 0;

	util_slice(a, 1, 400, 60);
	CHECK(np_seg_encode(a, 1, 2, 3, (void **)&seg, &len) == 0);
	np_agg_free(a);
	CHECK(decode(seg, len, &ok) == 0);

	/* every truncation */
	ok = 0;
	for (size_t l = 0; l < len; l++)
		CHECK(decode(seg, l, &ok) < 0);
	/* single bit flips anywhere: the CRCs catch every one */
	mut = malloc(len);
	for (int i = 0; i < 2000; i++) {
		size_t at = rng_next(&seed) % len;

		memcpy(mut, seg, len);
		mut[at] ^= 1u << (rng_next(&seed) % 8);
		CHECK(decode(mut, len, &ok) < 0);
	}
	free(mut);

	/* mutated payloads behind valid checksums */
	memcpy(&h, seg, sizeof(h));
	rawlen = h.raw_size;
	raw = malloc(rawlen);
	CHECK(ZSTD_decompress(raw, rawlen, seg + sizeof(h), h.comp_size) == rawlen);
	cap = sizeof(h) + ZSTD_compressBound(rawlen + 64) ;
	out = malloc(cap);
	mut = malloc(rawlen + 64);
	ok = 0;
	for (int i = 0; i < 3000; i++) {
		size_t ml = rawlen, n;
		int kind = (int)(rng_next(&seed) % 4);

		memcpy(mut, raw, rawlen);
		if (kind == 0) {		/* random bytes */
			for (int k = 0, nk = 1 + (int)(rng_next(&seed) % 4); k < nk; k++)
				mut[rng_next(&seed) % ml] = (uint8_t)rng_next(&seed);
		} else if (kind == 1) {		/* big varints */
			size_t at = rng_next(&seed) % (ml - 5);

			memset(mut + at, 0xff, 4);
			mut[at + 4] = 0x0f;
		} else if (kind == 2) {		/* cut the tail */
			ml = rng_next(&seed) % ml;
		} else {			/* lie about table sizes */
			struct np_seg_hdr hh = h;

			hh.nr_nodes += (uint32_t)(rng_next(&seed) % 5) - 2;
			hh.nr_frames += (uint32_t)(rng_next(&seed) % 3) - 1;
			hh.nr_records ^= (uint32_t)(rng_next(&seed) % 2);
			n = reseal(&hh, mut, ml, out, cap);
			decode(out, n, &ok);
			continue;
		}
		n = reseal(&h, mut, ml, out, cap);
		decode(out, n, &ok);
	}
	if (getenv("TEST_VERBOSE"))
		fprintf(stderr, "mutated payloads accepted: %d of 3000\n", ok);
	free(mut);
	free(out);
	free(raw);
	free(seg);
}

static void write_file(const char *path, const void *buf, size_t len)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);

	CHECK(fd >= 0 && write(fd, buf, len) == (ssize_t)len);
	close(fd);
}

static void test_dir(void)
{
	char dir[4200], p[4400], err[256];
	struct np_agg *a = util_agg(), *r;
	struct np_read_opts o;
	struct np_read_stats st;
	struct warns w = { 0 };
	uint8_t junk[8192];
	uint8_t *seg;
	size_t len;
	int garbage = 0;

	snprintf(dir, sizeof(dir), "%s/profile", base);
	mkdir(base, 0755);
	mkdir(dir, 0755);
	util_slice(a, 7, 300, 50);
	CHECK(np_seg_encode(a, 1000, 2000, 3, (void **)&seg, &len) == 0);
	snprintf(p, sizeof(p), "%s/seg-00000000000003e8.nps", dir);
	write_file(p, seg, len);
	for (int i = 0; i < 60; i++) {
		size_t jl = rng_next(&seed) % sizeof(junk);

		for (size_t k = 0; k < jl; k++)
			junk[k] = (uint8_t)rng_next(&seed);
		if (i % 3 == 0 && jl > 8)
			memcpy(junk, NP_SEG_MAGIC, 8);
		if (i % 5 == 0 && jl > len)
			memcpy(junk, seg, len / 2);
		snprintf(p, sizeof(p), "%s/seg-%016x.nps", dir, 0x10000 + i);
		write_file(p, junk, jl);
		garbage++;
	}
	/* names that are not segments are ignored; a directory named like
	 * a segment is not a file */
	snprintf(p, sizeof(p), "%s/seg-zz.nps", dir);
	write_file(p, "x", 1);
	snprintf(p, sizeof(p), "%s/seg-00000000000fffff.nps", dir);
	mkdir(p, 0755);
	snprintf(p, sizeof(p), "%s/index", dir);
	write_file(p, junk, 100);

	np_read_opts_init(&o);
	o.warn = util_warn;
	o.warn_arg = &w;
	r = np_agg_new(NULL);
	CHECK(np_store_read(base, &o, r, &st, err, sizeof(err)) == 0);
	CHECK(st.segments == 1 && np_agg_samples(r) == 300);
	CHECK(st.skipped == (uint32_t)garbage && w.n == garbage);
	np_agg_free(r);

	/* a standalone file of garbage with valid segments inside */
	{
		uint8_t *f = malloc(3 * sizeof(junk) + 2 * len);
		size_t fl = 0;

		for (int part = 0; part < 3; part++) {
			for (size_t k = 0; k < sizeof(junk); k++)
				junk[k] = (uint8_t)rng_next(&seed);
			memcpy(junk + 100, NP_SEG_MAGIC, 8);
			memcpy(f + fl, junk, sizeof(junk));
			fl += sizeof(junk);
			if (part < 2) {
				memcpy(f + fl, seg, len);
				fl += len;
			}
		}
		snprintf(p, sizeof(p), "%s/junk.nmiprof", base);
		write_file(p, f, fl);
		free(f);
		r = np_agg_new(NULL);
		w.n = 0;
		CHECK(np_profile_read(p, &o, r, &st, err, sizeof(err)) == 0);
		CHECK(st.segments == 2 && np_agg_samples(r) == 600 && w.n >= 3);
		np_agg_free(r);
	}
	free(seg);
	np_agg_free(a);
}

static void copy_file(const char *from, const char *to)
{
	char cmd[9000];

	snprintf(cmd, sizeof(cmd), "cp '%s' '%s'", from, to);
	CHECK(system(cmd) == 0);
}

/* Re-checksum every chunk header and payload of a dictionary in place. */
static void reseal_dict(uint8_t *d, size_t len)
{
	size_t off = 0;

	while (off + sizeof(struct np_dict_hdr) <= len) {
		struct np_dict_hdr h;

		memcpy(&h, d + off, sizeof(h));
		if (h.comp_size > len - off - sizeof(h))
			break;
		h.payload_crc = np_crc32c(0, d + off + sizeof(h), h.comp_size);
		h.hdr_crc = np_crc32c(0, &h, offsetof(struct np_dict_hdr, hdr_crc));
		memcpy(d + off, &h, sizeof(h));
		off += sizeof(h) + h.comp_size;
	}
}

/*
 * A store of 4 slices in one epoch; its dictionary damaged 400 ways.
 * Every read must merge whole segments only (the samples merged are the
 * merged segments' samples) and account for all 4.
 */
static void test_dict(void)
{
	char dir[4200], p[4400], pristine[4400], err[256];
	struct np_store_opts so;
	struct np_store *s;
	struct np_agg *a = util_agg();
	struct dirent *de;
	uint8_t *d, *raw;
	size_t dlen;
	DIR *dd;
	int intact = 0;

	snprintf(dir, sizeof(dir), "%s/dictstore", base);
	np_store_opts_init(&so);
	so.dir = dir;
	so.max_bytes = so.max_age_ns = 0;
	s = np_store_open(&so, err, sizeof(err));
	CHECK(s != NULL);
	if (!s)
		return;
	for (uint32_t i = 0; i < 4; i++) {
		np_agg_reset(a);
		util_slice(a, i, 500, 80);
		CHECK(np_store_write(s, a, (i + 1) * 1000000000ULL,
				     (i + 2) * 1000000000ULL, err, sizeof(err)) == 0);
	}
	np_store_close(s);
	np_agg_free(a);
	snprintf(pristine, sizeof(pristine), "%s/dict.pristine", base);
	snprintf(p, sizeof(p), "%s/profile", dir);
	dd = opendir(p);
	while (dd && (de = readdir(dd)))
		if (!strncmp(de->d_name, "dict-", 5))
			snprintf(p + strlen(p), sizeof(p) - strlen(p), "/%s",
				 de->d_name);
	if (dd)
		closedir(dd);
	CHECK(strstr(p, "dict-") != NULL);
	copy_file(p, pristine);
	CHECK(np_read_file(pristine, 1 << 24, (void **)&d, &dlen) == 0);
	raw = malloc(dlen + 1);
	for (int i = 0; i < 400; i++) {
		struct np_read_stats st;
		struct np_read_opts o;
		struct warns w = { 0 };
		size_t ml = dlen;
		int kind = i % 4, fd;
		struct np_agg *r;

		memcpy(raw, d, dlen);
		if (kind == 0) {
			raw[rng_next(&seed) % dlen] ^= 1u << (rng_next(&seed) % 8);
		} else if (kind == 1) {
			ml = rng_next(&seed) % dlen;
		} else {
			/* garbage inside a chunk behind valid checksums
			 * (compressed bytes, so zstd or the column
			 * decoder must catch it) */
			for (int k = 0, nk = 1 + kind; k < nk; k++)
				raw[sizeof(struct np_dict_hdr) +
				    rng_next(&seed) % (dlen - sizeof(struct np_dict_hdr))] =
					(uint8_t)rng_next(&seed);
			reseal_dict(raw, dlen);
		}
		fd = open(p, O_WRONLY | O_TRUNC);
		CHECK(fd >= 0 && write(fd, raw, ml) == (ssize_t)ml);
		close(fd);
		np_read_opts_init(&o);
		o.warn = util_warn;
		o.warn_arg = &w;
		r = np_agg_new(NULL);
		CHECK(np_store_read(dir, &o, r, &st, err, sizeof(err)) == 0);
		CHECK(st.segments + st.skipped == 4 && (int)st.skipped == w.n);
		CHECK(np_agg_samples(r) == st.samples);
		intact += st.skipped == 0;
		np_agg_free(r);
	}
	if (getenv("TEST_VERBOSE"))
		fprintf(stderr, "damaged dictionaries read intact: %d of 400\n",
			intact);
	copy_file(pristine, p);
	free(raw);
	free(d);
}

static const struct np_test_case cases[] = {
	NP_CASE(test_memory),
	NP_CASE(test_dir),
	NP_CASE(test_dict),
	{ 0 }
};

int main(int argc, char **argv)
{
	char cmd[4200];
	int ret;

	snprintf(base, sizeof(base), "%s/fuzz-test.%d", NMIPROF_TEST_BINDIR,
		 (int)getpid());
	ret = np_test_main(argc, argv, cases);
	if (!failures) {
		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", base);
		CHECK(system(cmd) == 0);
	}
	return ret || failures;
}
