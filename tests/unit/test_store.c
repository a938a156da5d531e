// SPDX-License-Identifier: GPL-2.0
/*
 * On-disk store: round trip, index loss, corruption, truncation,
 * standalone files, retention, crash safety under SIGKILL; stack
 * dictionaries (segment version 4): epochs, a damaged or truncated
 * dictionary costing only the segments that need it, retention across
 * epochs, older segment versions in a store.
 * Lockups and garbage input: test_store_lockup.c, test_store_fuzz.c.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include "test_store_util.h"
#include "lockstore.h"
#include "np_crc32c.h"
#include "store_seg.h"
#include "np_clock.h"

#define SEC 1000000000ULL
/* a fixed realtime origin for the synthetic slices: 2026-01-01 */
#define T0 (1767225600ULL * SEC)

static char base[4096];

static int seg_slice(const char *name, const struct np_seg_info *in, void *arg);
static int seg_version(const char *dir, uint32_t slice);

static void rm_rf(const char *path)
{
	char cmd[4300];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", path);
	if (system(cmd))
		fprintf(stderr, "rm -rf %s failed\n", path);
}

static const char *tdir(const char *name)
{
	static char p[4200];

	snprintf(p, sizeof(p), "%s/%s", base, name);
	rm_rf(p);
	return p;
}

static struct np_store *open_store(const char *dir, uint64_t max_bytes,
				   uint64_t max_age, struct warns *w)
{
	struct np_store_opts o;
	struct np_store *s;
	char err[256];

	np_store_opts_init(&o);
	o.dir = dir;
	o.max_bytes = max_bytes;
	o.max_age_ns = max_age;
	o.warn = util_warn;
	o.warn_arg = w;
	s = np_store_open(&o, err, sizeof(err));
	if (!s)
		fprintf(stderr, "np_store_open: %s\n", err);
	return s;
}

/* Write slices [from, to) at T0 + i minutes. */
static void write_slices(struct np_store *s, uint32_t from, uint32_t to,
			 uint32_t n, uint32_t pool)
{
	struct np_agg *a = util_agg();
	char err[256];

	for (uint32_t i = from; i < to; i++) {
		np_agg_reset(a);
		util_slice(a, i, n, pool);
		if (np_store_write(s, a, T0 + i * 60 * SEC, T0 + (i + 1) * 60 * SEC,
				   err, sizeof(err))) {
			fprintf(stderr, "np_store_write: %s\n", err);
			failures++;
		}
	}
	np_agg_free(a);
}

/* Expected merge of the given slices. */
static char *expect(const uint32_t *slices, int nr, uint32_t n, uint32_t pool)
{
	struct np_agg *a = util_agg();
	char *c;

	for (int i = 0; i < nr; i++)
		util_slice(a, slices[i], n, pool);
	c = util_canon(a);
	np_agg_free(a);
	return c;
}

static char *read_store(const char *dir, uint64_t since, uint64_t until,
			struct warns *w, struct np_read_stats *st)
{
	struct np_agg *a = np_agg_new(NULL);
	struct np_read_opts o;
	char err[256], *c;

	np_read_opts_init(&o);
	o.since_ns = since;
	o.until_ns = until;
	o.warn = util_warn;
	o.warn_arg = w;
	CHECK(np_store_read(dir, &o, a, st, err, sizeof(err)) == 0);
	c = util_canon(a);
	np_agg_free(a);
	return c;
}

static char *seg_path(const char *dir, uint32_t slice)
{
	static char p[4300];

	snprintf(p, sizeof(p), "%s/profile/seg-%016llx.nps", dir,
		 (unsigned long long)(T0 + slice * 60 * SEC));
	return p;
}

static void flip_byte(const char *path, off_t off)
{
	int fd = open(path, O_RDWR);
	unsigned char c = 0;

	CHECK(fd >= 0);
	if (off < 0)
		off += lseek(fd, 0, SEEK_END);
	CHECK(pread(fd, &c, 1, off) == 1);
	c ^= 0x40;
	CHECK(pwrite(fd, &c, 1, off) == 1);
	close(fd);
}

static void test_roundtrip(void)
{
	const char *dir = tdir("rt");
	uint32_t all[] = { 0, 1, 2, 3, 4 }, mid[] = { 1, 2 };
	struct np_read_stats st;
	struct warns w = { 0 };
	struct np_store *s = open_store(dir, 0, 0, &w);
	char *got, *exp;

	CHECK(s != NULL);
	if (!s)
		return;
	write_slices(s, 0, 5, 3000, 500);
	np_store_close(s);

	got = read_store(dir, 0, 0, &w, &st);
	exp = expect(all, 5, 3000, 500);
	CHECK(!strcmp(got, exp));
	CHECK(st.segments == 5 && st.skipped == 0 && st.samples == 15000);
	CHECK(st.first_ns == T0 && st.last_ns == T0 + 300 * SEC);
	free(got);
	free(exp);
	/* time range: segments overlapping [1m30s, 2m30s] are slices 1, 2 */
	got = read_store(dir, T0 + 90 * SEC, T0 + 150 * SEC, &w, &st);
	exp = expect(mid, 2, 3000, 500);
	CHECK(!strcmp(got, exp) && st.segments == 2);
	free(got);
	free(exp);
	CHECK(w.n == 0);

	/* index lost, then corrupt: same answer, no data lost */
	{
		char p[4300];

		snprintf(p, sizeof(p), "%s/profile/index", dir);
		CHECK(unlink(p) == 0);
		got = read_store(dir, 0, 0, &w, &st);
		exp = expect(all, 5, 3000, 500);
		CHECK(!strcmp(got, exp) && st.segments == 5);
		free(got);
		/* the writer rebuilds it */
		s = open_store(dir, 0, 0, &w);
		np_store_close(s);
		CHECK(access(p, F_OK) == 0);
		flip_byte(p, 40);
		got = read_store(dir, 0, 0, &w, &st);
		CHECK(!strcmp(got, exp) && st.segments == 5);
		free(got);
		free(exp);
	}
	CHECK(w.n == 0);

	/* pid filter */
	{
		struct np_agg *a = np_agg_new(NULL);
		struct np_read_opts o;
		const struct np_agg_entry *e;
		uint32_t n;
		char err[256];

		np_read_opts_init(&o);
		o.pid = 101;
		CHECK(np_store_read(dir, &o, a, NULL, err, sizeof(err)) == 0);
		e = np_agg_entries(a, &n);
		CHECK(n > 0);
		for (uint32_t i = 0; i < n; i++)
			CHECK(e[i].pid == 101);
		np_agg_free(a);
	}
	/* a second writer is refused while the first holds the store */
	s = open_store(dir, 0, 0, &w);
	CHECK(s != NULL);
	{
		struct np_store_opts o;
		char err[256];

		np_store_opts_init(&o);
		o.dir = dir;
		CHECK(np_store_open(&o, err, sizeof(err)) == NULL);
		CHECK(strstr(err, "in use") != NULL);
	}
	np_store_close(s);
}

static void test_corruption(void)
{
	const char *dir = tdir("corrupt");
	uint32_t good[] = { 0, 3, 4 };
	struct np_read_stats st;
	struct warns w = { 0 };
	struct np_store *s = open_store(dir, 0, 0, &w);
	char *got, *exp;

	if (!s)
		return;
	write_slices(s, 0, 5, 2000, 300);
	np_store_close(s);
	flip_byte(seg_path(dir, 1), 200);	/* payload */
	flip_byte(seg_path(dir, 2), 20);	/* header */
	got = read_store(dir, 0, 0, &w, &st);
	exp = expect(good, 3, 2000, 300);
	CHECK(!strcmp(got, exp));
	CHECK(st.segments == 3 && st.skipped == 2);
	CHECK(w.n == 2);	/* one line per damaged segment */
	CHECK(strstr(w.last, "seg-") != NULL);
	free(got);
	free(exp);

	/* truncation: slice 3 cut in half, slice 4 cut to 10 bytes */
	{
		uint32_t left[] = { 0 };
		struct stat sb;

		stat(seg_path(dir, 3), &sb);
		CHECK(truncate(seg_path(dir, 3), sb.st_size / 2) == 0);
		CHECK(truncate(seg_path(dir, 4), 10) == 0);
		w.n = 0;
		got = read_store(dir, 0, 0, &w, &st);
		exp = expect(left, 1, 2000, 300);
		CHECK(!strcmp(got, exp));
		CHECK(st.segments == 1 && st.skipped == 4 && w.n == 4);
		free(got);
		free(exp);
	}
	/* a writer still opens it and appends; retention can drop the bad */
	s = open_store(dir, 0, 0, &w);
	CHECK(s != NULL);
	if (s) {
		write_slices(s, 5, 6, 100, 10);
		np_store_close(s);
	}
}

static void test_file(void)
{
	char path[4300], err[256];
	struct np_read_stats st;
	struct warns w = { 0 };
	struct np_read_opts o;
	uint32_t all[] = { 0, 1, 2 }, ends[] = { 0, 2 }, first[] = { 0 };
	struct np_agg *a = util_agg(), *r;
	struct np_profile *f;
	char *got, *exp;
	struct stat sb;
	off_t seg0 = 0;

	snprintf(path, sizeof(path), "%s/standalone.nmiprof", base);
	f = np_profile_create(path, 3, err, sizeof(err));
	CHECK(f != NULL);
	if (!f)
		return;
	CHECK(np_profile_commit(f, err, sizeof(err)) == 0);
	CHECK(stat(path, &sb) == 0 && (sb.st_mode & 0777) == 0600);
	for (uint32_t i = 0; i < 3; i++) {
		np_agg_reset(a);
		util_slice(a, i, 2000, 300);
		CHECK(np_profile_write(f, a, T0 + i * SEC, T0 + (i + 1) * SEC,
				    err, sizeof(err)) == 0);
		if (i == 0) {
			stat(path, &sb);
			seg0 = sb.st_size;	/* segment 1 starts here */
		}
	}
	CHECK(np_profile_close(f) == 0);
	np_agg_free(a);
	np_read_opts_init(&o);
	o.warn = util_warn;
	o.warn_arg = &w;

	r = np_agg_new(NULL);
	CHECK(np_profile_read(path, &o, r, &st, err, sizeof(err)) == 0);
	got = util_canon(r);
	exp = expect(all, 3, 2000, 300);
	CHECK(!strcmp(got, exp) && st.segments == 3 && w.n == 0);
	free(got);
	free(exp);
	np_agg_free(r);

	/* damage the middle segment: the reader resyncs on the next one */
	flip_byte(path, seg0 + 150);
	r = np_agg_new(NULL);
	CHECK(np_profile_read(path, &o, r, &st, err, sizeof(err)) == 0);
	got = util_canon(r);
	exp = expect(ends, 2, 2000, 300);
	CHECK(!strcmp(got, exp) && st.segments == 2 && st.skipped == 1);
	CHECK(w.n == 1);
	free(got);
	free(exp);
	np_agg_free(r);

	/* torn tail */
	stat(path, &sb);
	CHECK(truncate(path, sb.st_size - 7) == 0);
	r = np_agg_new(NULL);
	w.n = 0;
	CHECK(np_profile_read(path, &o, r, &st, err, sizeof(err)) == 0);
	got = util_canon(r);
	exp = expect(first, 1, 2000, 300);
	CHECK(!strcmp(got, exp) && st.segments == 1 && w.n == 2);
	free(got);
	free(exp);
	np_agg_free(r);

	/* not a profile at all */
	r = np_agg_new(NULL);
	CHECK(np_profile_read("/etc/hostname", &o, r, &st, err, sizeof(err)) < 0);
	CHECK(strstr(err, "not an nmiprof profile") != NULL);
	CHECK(np_profile_read("/nonexistent/x", &o, r, &st, err, sizeof(err)) < 0);
	np_agg_free(r);
}

static int count_segs(const char *name, const struct np_seg_info *in, void *arg)
{
	(*(int *)arg)++;
	return 0;
}

static int nr_segs(const char *dir)
{
	int n = 0;
	char err[256];

	np_store_list(dir, count_segs, &n, NULL, NULL, err, sizeof(err));
	return n;
}

static int nr_lockups(const char *dir)
{
	struct np_lockfile *v;
	size_t n = 0;

	np_lockstore_scan(dir, &v, &n);
	free(v);
	return (int)n;
}

static void put_lockup(const char *dir, uint64_t wall_ns, uint32_t cpu)
{
	uint64_t frames[3] = { 0xffffffff81001000, 0xffffffff81002000, 0xffffffff81003000 };
	struct np_ev_lockup l = { 0 };
	char err[256];

	l.cpu = cpu;
	l.nr_kframes = 3;
	l.kframes = frames;
	CHECK(np_lockstore_write(dir, &l, NULL, wall_ns, NULL, 0, err,
				 sizeof(err)) == 0);
}

static int nr_dicts(const char *dir)
{
	char p[4300];
	struct dirent *de;
	DIR *d;
	int n = 0;

	snprintf(p, sizeof(p), "%s/profile", dir);
	d = opendir(p);
	while (d && (de = readdir(d)))
		n += !strncmp(de->d_name, "dict-", 5);
	if (d)
		closedir(d);
	return n;
}

static long long file_bytes(const char *path)
{
	struct stat sb;

	return stat(path, &sb) ? -1 : (long long)sb.st_size;
}

/* Sum of the dictionary files' sizes. */
static long long dict_bytes(const char *dir)
{
	char p[4300], f[8600];
	struct dirent *de;
	long long sum = 0;
	DIR *d;

	snprintf(p, sizeof(p), "%s/profile", dir);
	d = opendir(p);
	while (d && (de = readdir(d))) {
		if (strncmp(de->d_name, "dict-", 5))
			continue;
		snprintf(f, sizeof(f), "%s/%s", p, de->d_name);
		sum += file_bytes(f);
	}
	if (d)
		closedir(d);
	return sum;
}

static void test_retention(void)
{
	const char *dir = tdir("retain");
	struct warns w = { 0 };
	struct np_store *s;
	uint64_t now = np_real_ns(), seg_size, budget, dsize;

	/* size: learn one segment's and one fresh dictionary's size, then
	 * allow the dictionary and ~3.5 segments */
	s = open_store(dir, 0, 0, &w);
	if (!s)
		return;
	write_slices(s, 0, 1, 2000, 300);
	seg_size = file_bytes(seg_path(dir, 0));
	dsize = dict_bytes(dir);
	CHECK(np_store_bytes(s) == seg_size + dsize);
	np_store_close(s);
	/* a lockup newer than slice 0: must outlive slice 0 */
	put_lockup(dir, T0 + 30 * SEC, 0);
	/* a new writer starts a new epoch: slice 0's dictionary must go
	 * with slice 0, not before */
	budget = dsize + seg_size * 7 / 2 + 2048;
	s = open_store(dir, budget, 0, &w);
	write_slices(s, 1, 10, 2000, 300);
	CHECK(np_store_bytes(s) <= budget);
	CHECK(nr_segs(dir) == 3);
	CHECK(access(seg_path(dir, 9), F_OK) == 0);
	CHECK(access(seg_path(dir, 6), F_OK) != 0);
	CHECK(nr_dicts(dir) == 1);	/* epoch of slice 0 went with it */
	/* slices 0..6 went, the lockup only after its older profiles: it
	 * has no older profile left but is within the budget -> kept */
	CHECK(nr_lockups(dir) == 1);
	np_store_close(s);
	{
		uint32_t left[] = { 7, 8, 9 };
		struct np_read_stats st;
		char *got = read_store(dir, 0, 0, &w, &st), *exp;

		exp = expect(left, 3, 2000, 300);
		CHECK(!strcmp(got, exp) && st.skipped == 0);
		free(got);
		free(exp);
	}

	/* budget smaller than one segment: newest segment kept, lockups go */
	s = open_store(dir, 1, 0, &w);
	write_slices(s, 10, 11, 2000, 300);
	CHECK(nr_segs(dir) == 1 && access(seg_path(dir, 10), F_OK) == 0);
	CHECK(nr_lockups(dir) == 0);
	CHECK(nr_dicts(dir) == 1);	/* the newest segment's */
	np_store_close(s);

	/* age: one week, slices from T0 (2026-01-01) are older than that
	 * relative to "now + 1 year"... use explicit now via prune */
	dir = tdir("age");
	s = open_store(dir, 0, 3600 * SEC, &w);
	write_slices(s, 0, 3, 1000, 100);	/* all at T0, far in the past */
	/* written now, but older than an hour -> pruned by np_store_write;
	 * the newest is dropped too since age applies to every segment */
	CHECK(nr_segs(dir) == 0);
	np_store_close(s);
	s = open_store(dir, 0, 3600 * SEC, &w);
	{
		struct np_agg *a = util_agg();
		char err[256];

		put_lockup(dir, now - 2 * 3600 * SEC, 1);	/* too old */
		put_lockup(dir, now - 60 * SEC, 2);		/* recent */
		util_slice(a, 1, 1000, 100);
		CHECK(np_store_write(s, a, now - 2 * 60 * SEC, now - 60 * SEC,
				     err, sizeof(err)) == 0);
		CHECK(np_store_write(s, a, now - 30 * 3600 * SEC,
				     now - 29 * 3600 * SEC, err, sizeof(err)) == 0);
		np_agg_free(a);
	}
	CHECK(nr_segs(dir) == 1 && nr_lockups(dir) == 1);
	/* the aged-out epoch's dictionary went (no segment needed it) */
	CHECK(nr_dicts(dir) <= 2);
	np_store_close(s);
	CHECK(w.n == 0);
}

/* Offset of chunk k of a dictionary file, or -1. */
static long long chunk_off(const char *path, int k)
{
	struct np_dict_hdr h;
	long long off = 0;
	int fd = open(path, O_RDONLY);

	for (int i = 0; fd >= 0 && i < k; i++) {
		if (pread(fd, &h, sizeof(h), off) != sizeof(h))
			off = -1;
		if (off < 0)
			break;
		off += sizeof(h) + h.comp_size;
	}
	if (fd >= 0)
		close(fd);
	return fd < 0 ? -1 : off;
}

static const char *dict_path(const char *dir, uint32_t first_slice)
{
	static char p[4300];

	snprintf(p, sizeof(p), "%s/profile/dict-%016llx.npd", dir,
		 (unsigned long long)(T0 + first_slice * 60 * SEC));
	return p;
}

/*
 * Epochs: three writers (three epochs, three dictionaries) read back as
 * one profile.  Then damage: a flipped byte in a chunk, a truncated
 * dictionary and a deleted one each cost exactly the segments that need
 * them, with one line per segment; the other epochs read intact.
 */
static void test_dict(void)
{
	const char *dir = tdir("dict");
	uint32_t all[] = { 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11 };
	struct np_read_stats st;
	struct warns w = { 0 };
	char *got, *exp, p[4300];
	struct np_store *s;

	for (uint32_t e = 0; e < 3; e++) {
		s = open_store(dir, 0, 0, &w);
		if (!s)
			return;
		write_slices(s, e * 4, e * 4 + 4, 2000, 300);
		np_store_close(s);
	}
	CHECK(nr_dicts(dir) == 3 && nr_segs(dir) == 12);
	got = read_store(dir, 0, 0, &w, &st);
	exp = expect(all, 12, 2000, 300);
	CHECK(!strcmp(got, exp) && st.segments == 12 && st.skipped == 0);
	free(got);
	free(exp);
	/* a range inside an epoch */
	got = read_store(dir, T0 + 5 * 60 * SEC + 1, T0 + 6 * 60 * SEC - 1, &w, &st);
	exp = expect(all + 5, 1, 2000, 300);
	CHECK(!strcmp(got, exp) && st.segments == 1);
	free(got);
	free(exp);
	CHECK(w.n == 0);
	/* every slice adds a stack of its own: one chunk per segment */
	CHECK(chunk_off(dict_path(dir, 0), 4) == file_bytes(dict_path(dir, 0)));

	/* epoch 0: chunk 2 damaged -> slices 2, 3 lost, 0, 1 intact */
	snprintf(p, sizeof(p), "%s", dict_path(dir, 0));
	flip_byte(p, chunk_off(p, 2) + 80);
	/* epoch 1: cut in the middle of chunk 1 -> slices 5, 6, 7 lost */
	snprintf(p, sizeof(p), "%s", dict_path(dir, 4));
	CHECK(truncate(p, chunk_off(p, 1) + 40) == 0);
	{
		uint32_t good[] = { 0, 1, 4, 8, 9, 10, 11 };

		got = read_store(dir, 0, 0, &w, &st);
		exp = expect(good, 7, 2000, 300);
		CHECK(!strcmp(got, exp));
		CHECK(st.segments == 7 && st.skipped == 5 && w.n == 5);
		CHECK(strstr(w.last, "dict-") && strstr(w.last, "damaged"));
		free(got);
		free(exp);
	}
	/* epoch 2's dictionary gone: its segments are skipped, reported */
	w.n = 0;
	CHECK(unlink(dict_path(dir, 8)) == 0);
	{
		uint32_t good[] = { 0, 1, 4 };

		got = read_store(dir, 0, 0, &w, &st);
		exp = expect(good, 3, 2000, 300);
		CHECK(!strcmp(got, exp));
		CHECK(st.segments == 3 && st.skipped == 9 && w.n == 9);
		CHECK(strstr(w.last, "No such file") != NULL);
		free(got);
		free(exp);
	}
	/* a standalone reader of one v4 segment says what it lacks */
	{
		struct np_agg *a = np_agg_new(NULL);
		struct np_read_opts o;
		char err[256];

		np_read_opts_init(&o);
		o.warn = util_warn;
		o.warn_arg = &w;
		CHECK(np_profile_read(seg_path(dir, 0), &o, a, &st, err,
				   sizeof(err)) == 0);
		CHECK(st.segments == 0 && st.skipped == 1);
		CHECK(strstr(w.last, "needs the stack dictionary") != NULL);
		np_agg_free(a);
	}
	/* the writer carries on in a fresh epoch */
	s = open_store(dir, 0, 0, &w);
	CHECK(s != NULL);
	if (s) {
		write_slices(s, 12, 13, 500, 50);
		np_store_close(s);
	}
	CHECK(nr_dicts(dir) == 3);
}

/* Slice i of write_slices(s, 0, n, 2000, 300), read into a: exactly it. */
static void read_slice_check(struct np_store_reader *rd, const char *dir,
			     uint32_t i, struct np_agg *a)
{
	struct np_read_stats st;
	char err[256], *got, *exp;
	int ret;

	ret = np_store_reader_read(rd, strrchr(seg_path(dir, i), '/') + 1, a,
				   &st, err, sizeof(err));
	if (ret)
		fprintf(stderr, "slice %u: %s\n", i, err);
	CHECK(ret == 0);
	got = util_canon(a);
	exp = expect(&i, 1, 2000, 300);
	CHECK(!strcmp(got, exp));
	free(got);
	free(exp);
}

/*
 * The fleet exporter reads one segment at a time into one aggregate that
 * it resets between slices; a reset past the stack table's cap clears
 * the table, and the reader's id maps into it must not outlive it.
 */
static void test_reader_reset(void)
{
	const char *dir = tdir("reader_reset");
	struct np_store_reader *rd;
	struct warns w = { 0 };
	struct np_agg_opts ao;
	struct np_store *s;
	struct np_agg *a;

	s = open_store(dir, 0, 0, &w);
	CHECK(s != NULL);
	if (!s)
		return;
	write_slices(s, 0, 4, 2000, 300);
	np_store_close(s);
	np_agg_opts_init(&ao);
	ao.stacktab_cap = 1;	/* every reset clears the stack table */
	a = np_agg_new(&ao);
	rd = np_store_reader_open(dir);
	CHECK(a && rd);
	for (uint32_t i = 0; a && rd && i < 4; i++) {
		np_agg_reset(a);
		read_slice_check(rd, dir, i, a);
	}
	np_store_reader_close(rd);
	np_agg_free(a);
}

/*
 * The exporter keeps its reader open while the daemon writes: the
 * epoch's dictionary grows under it, and the next slice needs chunks
 * the reader has not loaded yet.
 */
static void test_reader_kept(void)
{
	const char *dir = tdir("reader_kept");
	struct np_store_reader *rd;
	struct warns w = { 0 };
	struct np_store *s;
	struct np_agg *a = np_agg_new(NULL);

	s = open_store(dir, 0, 0, &w);
	rd = np_store_reader_open(dir);
	CHECK(s && rd && a);
	for (uint32_t i = 0; s && rd && a && i < 3; i++) {
		write_slices(s, i, i + 1, 2000, 300);
		CHECK(seg_version(dir, i) == 4);
		np_agg_reset(a);
		read_slice_check(rd, dir, i, a);
	}
	if (s)
		np_store_close(s);
	np_store_reader_close(rd);
	np_agg_free(a);
}

/*
 * A reader used with one aggregator, then with another that malloc() put
 * at the freed one's address: the id maps of the first must not be taken
 * for the second's (its stack table is empty, every id unknown).
 */
static void test_reader_new_agg(void)
{
	const char *dir = tdir("reader_new_agg");
	struct np_store_reader *rd;
	struct warns w = { 0 };
	struct np_agg_opts ao;
	struct np_store *s;
	struct np_agg *a;
	bool reused = false;
	uintptr_t last = 0;

	s = open_store(dir, 0, 0, &w);
	CHECK(s != NULL);
	if (!s)
		return;
	write_slices(s, 0, 3, 2000, 300);
	np_store_close(s);
	np_agg_opts_init(&ao);
	rd = np_store_reader_open(dir);
	CHECK(rd != NULL);
	for (uint32_t i = 0; rd && i < 3; i++) {
		a = np_agg_new(&ao);
		CHECK(a != NULL);
		if (!a)
			break;
		reused |= (uintptr_t)a == last;
		last = (uintptr_t)a;
		read_slice_check(rd, dir, i, a);
		np_agg_free(a);
	}
	if (!reused)
		fprintf(stderr, "reader_new_agg: malloc() never reused the address; the case was not exercised\n");
	np_store_reader_close(rd);
}

/*
 * A crash in the middle of a dictionary append (kill -9 between write and
 * fdatasync, or a full disk) leaves a torn chunk at the end of the file;
 * no segment needs it, so nothing is lost or reported, and the next
 * writer starts a new epoch instead of appending after it.
 */
static void test_torn_dict(void)
{
	const char *dir = tdir("torn");
	uint32_t all[] = { 0, 1, 2, 3 };
	struct np_read_stats st;
	struct warns w = { 0 };
	char *got, *exp, *chunk;
	long long c1, end;
	struct np_store *s = open_store(dir, 0, 0, &w);
	int fd;

	if (!s)
		return;
	write_slices(s, 0, 2, 2000, 300);
	np_store_close(s);
	/* half of chunk 1 again, as a torn append */
	c1 = chunk_off(dict_path(dir, 0), 1);
	end = file_bytes(dict_path(dir, 0));
	CHECK(c1 > 0 && end > c1);
	chunk = malloc(end - c1);
	fd = open(dict_path(dir, 0), O_RDWR | O_APPEND);
	CHECK(fd >= 0 && pread(fd, chunk, end - c1, c1) == end - c1);
	CHECK(write(fd, chunk, (end - c1) / 2) == (end - c1) / 2);
	close(fd);
	free(chunk);
	s = open_store(dir, 0, 0, &w);
	CHECK(s != NULL);
	if (s) {
		write_slices(s, 2, 4, 2000, 300);
		np_store_close(s);
	}
	CHECK(nr_dicts(dir) == 2);
	CHECK(file_bytes(dict_path(dir, 0)) == end + (end - c1) / 2);
	got = read_store(dir, 0, 0, &w, &st);
	exp = expect(all, 4, 2000, 300);
	CHECK(!strcmp(got, exp) && st.segments == 4 && st.skipped == 0);
	CHECK(w.n == 0);
	free(got);
	free(exp);
}

/* Segment version (u16 at offset 8) of a slice's file. */
static int seg_version(const char *dir, uint32_t slice)
{
	unsigned char h[10] = { 0 };
	int fd = open(seg_path(dir, slice), O_RDONLY);

	if (fd >= 0 && pread(fd, h, sizeof(h), 0) != sizeof(h))
		h[8] = 0;
	if (fd >= 0)
		close(fd);
	return h[8] | h[9] << 8;
}

/*
 * A slice using more than 2^20 stack nodes (10^5 distinct stacks) is
 * written self-contained (version 3), without growing the dictionary
 * mirror; the epoch goes on around it and the store reads as one.
 */
static void test_big_slice(void)
{
	const char *dir = tdir("big");
	struct np_store *s = open_store(dir, 0, 0, NULL);
	struct np_agg *a = util_agg();
	struct np_read_stats st;
	struct warns w = { 0 };
	const uint32_t n[3] = { 2000, 300000, 2000 }, pool[3] = { 300, 250000, 300 };
	char *got, *exp, err[256];

	if (!s || !a)
		return;
	for (uint32_t i = 0; i < 3; i++) {
		np_agg_reset(a);
		util_slice(a, i, n[i], pool[i]);
		if (i == 1)
			CHECK(np_slice_nodes(a) > (1U << 20));
		CHECK(np_store_write(s, a, T0 + i * 60 * SEC,
				     T0 + (i + 1) * 60 * SEC, err, sizeof(err)) == 0);
	}
	np_store_close(s);
	CHECK(seg_version(dir, 0) == 4 && seg_version(dir, 1) == 3 &&
	      seg_version(dir, 2) == 4);
	CHECK(nr_dicts(dir) == 1);
	np_agg_reset(a);
	for (uint32_t i = 0; i < 3; i++)
		util_slice(a, i, n[i], pool[i]);
	exp = util_canon(a);
	np_agg_free(a);
	got = read_store(dir, 0, 0, &w, &st);
	CHECK(!strcmp(got, exp) && st.segments == 3 && st.skipped == 0);
	CHECK(w.n == 0);
	free(got);
	free(exp);
}

/* Retention across many epochs: whatever remains reads completely, and
 * every dictionary left is needed by a segment left. */
static void test_retention_epochs(void)
{
	const char *dir = tdir("retain-ep");
	struct warns w = { 0 };
	struct np_read_stats st;
	uint32_t present[64], *pp = present;
	uint64_t budget;
	char *got, *exp, err[256];
	struct np_store *s;
	int n;

	s = open_store(dir, 0, 0, &w);
	if (!s)
		return;
	write_slices(s, 0, 3, 2000, 300);
	budget = np_store_bytes(s) * 2;		/* about two epochs */
	np_store_close(s);
	for (uint32_t e = 1; e < 6; e++) {
		s = open_store(dir, budget, 0, &w);
		if (!s)
			return;
		write_slices(s, e * 3, e * 3 + 3, 2000, 300);
		CHECK(np_store_bytes(s) <= budget);
		np_store_close(s);
	}
	CHECK(np_store_list(dir, seg_slice, &pp, util_warn, &w, err,
			    sizeof(err)) == 0);
	n = (int)(pp - present);
	CHECK(n >= 3 && n < 9 && present[n - 1] == 17);
	for (int i = 1; i < n; i++)
		CHECK(present[i] == present[i - 1] + 1);
	/* the oldest epoch left may be partly pruned; dictionaries are
	 * exactly those of the epochs with segments left */
	CHECK(nr_dicts(dir) == (int)(17 / 3 - present[0] / 3 + 1));
	got = read_store(dir, 0, 0, &w, &st);
	exp = expect(present, n, 2000, 300);
	CHECK(!strcmp(got, exp) && st.skipped == 0 && w.n == 0);
	free(got);
	free(exp);
}

/* A store written before version 4 (v3 segments, a v1 index) keeps
 * reading, and a new writer adds v4 segments beside them. */
static void test_old_store(void)
{
	const char *dir = tdir("old");
	uint32_t all[] = { 0, 1, 2, 3 };
	struct np_read_stats st;
	struct warns w = { 0 };
	char pdir[4300], *got, *exp;
	struct np_store *s;

	snprintf(pdir, sizeof(pdir), "%s/profile", dir);
	CHECK(mkdir(dir, 0755) == 0 && mkdir(pdir, 0755) == 0);
	for (uint32_t i = 0; i < 2; i++) {
		struct np_agg *a = util_agg();
		size_t len;
		void *seg;
		int fd;

		util_slice(a, i, 2000, 300);
		CHECK(np_seg_encode(a, T0 + i * 60 * SEC, T0 + (i + 1) * 60 * SEC,
				    0, &seg, &len) == 0);
		CHECK(((uint8_t *)seg)[8] == 3);
		fd = open(seg_path(dir, i), O_WRONLY | O_CREAT | O_EXCL, 0644);
		CHECK(fd >= 0 && write(fd, seg, len) == (ssize_t)len);
		close(fd);
		free(seg);
		np_agg_free(a);
	}
	{
		/* a version-1 index (64-byte records): rebuilt, not trusted */
		char ip[4400], hdr[16] = "NMIPIDX\n";
		uint32_t v = 1, crc;
		int fd;

		memcpy(hdr + 8, &v, 4);
		crc = np_crc32c(0, hdr, 12);
		memcpy(hdr + 12, &crc, 4);
		snprintf(ip, sizeof(ip), "%s/index", pdir);
		fd = open(ip, O_WRONLY | O_CREAT, 0644);
		CHECK(fd >= 0 && write(fd, hdr, 16) == 16);
		close(fd);
	}
	s = open_store(dir, 0, 0, &w);
	if (!s)
		return;
	write_slices(s, 2, 4, 2000, 300);
	np_store_close(s);
	got = read_store(dir, 0, 0, &w, &st);
	exp = expect(all, 4, 2000, 300);
	CHECK(!strcmp(got, exp) && st.segments == 4 && st.skipped == 0);
	CHECK(w.n == 0);
	free(got);
	free(exp);
}

/* ---- build-ids -------------------------------------------------------- */

/* A slice of three stacks: app -> libc, app -> libc -> kernel, and one
 * in lib2 (when lib2_bid is given), one sample each per stack. */
static void bid_slice(struct np_agg *a, const char *libc_bid,
		      const char *lib2_bid)
{
	struct np_stacktab *st = np_agg_stacktab(a);
	struct np_sym k = { "[kernel.kallsyms]", "do_syscall_64", 0x30, 1, NULL };
	struct np_sym c = { "/lib/libc.so.6", "write", 0x20, 0, libc_bid };
	struct np_sym m = { "/usr/bin/app", "main", 0x10, 0, "ab12cd" };
	struct np_sym l2 = { "/lib/lib2.so", NULL, 0x4000, 0, lib2_bid };
	struct np_sym s1[] = { c, m }, s2[] = { k, c, m }, s3[] = { l2, m };
	uint32_t comm = np_stacktab_str(st, "app", 3);

	CHECK(np_agg_add(a, 10, 0, comm, np_stacktab_stack(st, s1, 2), 1) == 0);
	CHECK(np_agg_add(a, 10, 0, comm, np_stacktab_stack(st, s2, 3), 1) == 0);
	if (lib2_bid)
		CHECK(np_agg_add(a, 10, 1, comm, np_stacktab_stack(st, s3, 2), 1) == 0);
}

/* Every object of a's stacks as "dso=build-id" lines ("-": none). */
static char *bid_canon(struct np_agg *a)
{
	const struct np_stacktab *st = np_agg_stacktab(a);
	const struct np_agg_entry *e;
	char line[256], *out = calloc(1, 4096);
	uint32_t nr;

	e = np_agg_entries(a, &nr);
	for (uint32_t i = 0; out && i < nr; i++) {
		const struct np_sym *f[8];
		unsigned int n = np_stacktab_walk(st, e[i].stack, f, 8);

		for (unsigned int j = 0; j < n; j++) {
			snprintf(line, sizeof(line), "%s=%s\n", f[j]->dso,
				 f[j]->build_id ? f[j]->build_id : "-");
			if (!strstr(out, line) && strlen(out) + strlen(line) < 4096)
				strcat(out, line);
		}
	}
	return out;
}

/* got holds the lines of want, in any order, and no other. */
static int bid_same(const char *got, const char *want)
{
	char line[256];
	int n = 0, m = 0;

	for (const char *p = want; *p; p += strlen(line), m++) {
		snprintf(line, sizeof(line), "%.*s", (int)(strchr(p, '\n') - p + 1), p);
		if (!got || !strstr(got, line))
			return 0;
	}
	for (const char *p = got; p && *p; p++)
		n += *p == '\n';
	return n == m;
}

/*
 * An object's build-id, kept once per object, survives the store: a
 * version-4 store (dictionary chunks, a later chunk changing libc's),
 * read by a reader kept open as the exporter does, and a version-3
 * segment.  Segments without one (older stores) read as before.
 */
static void test_build_ids(void)
{
	const char *dir = tdir("build_ids");
	const char *want0 = "/lib/libc.so.6=aa01\n/usr/bin/app=ab12cd\n"
			    "[kernel.kallsyms]=-\n";
	const char *want1 = "/lib/libc.so.6=cc02\n/usr/bin/app=ab12cd\n"
			    "[kernel.kallsyms]=-\n/lib/lib2.so=ee03\n";
	struct np_agg *a = util_agg(), *r = np_agg_new(NULL);
	struct np_store_reader *rd;
	struct np_read_stats st;
	struct warns w = { 0 };
	char err[256], *got;
	struct np_store *s;
	size_t len;
	void *seg;

	s = open_store(dir, 0, 0, &w);
	CHECK(s && a && r);
	if (!s || !a || !r)
		return;
	bid_slice(a, "aa01", NULL);
	CHECK(np_store_write(s, a, T0, T0 + 60 * SEC, err, sizeof(err)) == 0);
	np_agg_reset(a);
	bid_slice(a, "cc02", "ee03");	/* libc replaced, a new object */
	CHECK(np_store_write(s, a, T0 + 60 * SEC, T0 + 120 * SEC, err,
			     sizeof(err)) == 0);
	np_store_close(s);
	CHECK(seg_version(dir, 0) == 4 && seg_version(dir, 1) == 4);
	rd = np_store_reader_open(dir);
	for (uint32_t i = 0; rd && i < 2; i++) {
		np_agg_reset(r);
		CHECK(np_store_reader_read(rd, strrchr(seg_path(dir, i), '/') + 1,
					   r, &st, err, sizeof(err)) == 0);
		got = bid_canon(r);
		CHECK(bid_same(got, i ? want1 : want0));
		if (!bid_same(got, i ? want1 : want0))
			fprintf(stderr, "slice %u:\n%s", i, got ? got : "");
		free(got);
	}
	np_store_reader_close(rd);
	/* version 3: the same object table after the records */
	CHECK(np_seg_encode(a, T0, T0 + 60 * SEC, 0, &seg, &len) == 0);
	np_agg_free(r);
	r = np_agg_new(NULL);
	CHECK(r && np_seg_decode(seg, len, r, -1, err, sizeof(err)) == 0);
	got = r ? bid_canon(r) : NULL;
	CHECK(bid_same(got, want1));
	free(got);
	free(seg);
	/* no build-ids: no object table, nothing set */
	np_agg_free(a);
	a = util_agg();
	util_slice(a, 0, 200, 30);
	CHECK(np_seg_encode(a, T0, T0 + 60 * SEC, 0, &seg, &len) == 0);
	CHECK(!(((uint8_t *)seg)[12] & NP_SEG_F_OBJECTS));
	free(seg);
	np_agg_free(a);
	np_agg_free(r);
	CHECK(w.n == 0);
}

/* ---- crash safety --------------------------------------------------- */

static void crash_child(const char *dir, uint32_t from, int wfd)
{
	struct np_store_opts o;
	struct np_agg *a = util_agg();
	struct np_store *s;
	char err[256];

	np_store_opts_init(&o);
	o.dir = dir;
	o.max_bytes = 0;
	o.max_age_ns = 0;
	s = np_store_open(&o, err, sizeof(err));
	if (!s)
		_exit(2);
	for (uint32_t i = from;; i++) {
		np_agg_reset(a);
		util_slice(a, i, 20000, 20000);	/* ~big segments */
		if (np_store_write(s, a, T0 + i * 60 * SEC,
				   T0 + (i + 1) * 60 * SEC, err, sizeof(err)))
			_exit(3);
		if (write(wfd, &i, sizeof(i)) != sizeof(i))
			_exit(4);
	}
}

static int seg_slice(const char *name, const struct np_seg_info *in, void *arg)
{
	uint32_t **p = arg;

	*(*p)++ = (uint32_t)((in->start_ns - T0) / (60 * SEC));
	return 0;
}

static void test_crash(void)
{
	const char *dir = tdir("crash");
	uint32_t next = 0, last_done = 0;
	uint64_t seed = (uint64_t)getpid();

	for (int round = 0; round < 4; round++) {
		uint32_t present[256], *pp = present, want = next + 2;
		struct np_read_stats st;
		struct warns w = { 0 };
		char *got, *exp, err[256];
		int fds[2], status, n;
		uint32_t done;
		pid_t pid;

		CHECK(pipe(fds) == 0);
		pid = fork();
		if (pid == 0) {
			close(fds[0]);
			crash_child(dir, next, fds[1]);
		}
		close(fds[1]);
		/* let it finish a couple of slices, then kill it somewhere
		 * inside the next one (encode, write, fsync or rename) */
		while (read(fds[0], &done, sizeof(done)) == sizeof(done)) {
			last_done = done;
			if (done >= want)
				break;
		}
		usleep(rng_next(&seed) % 40000);
		kill(pid, SIGKILL);
		/* slices finished after we stopped reading still count */
		while (read(fds[0], &done, sizeof(done)) == sizeof(done))
			last_done = done;
		close(fds[0]);
		waitpid(pid, &status, 0);
		CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);

		/* plant a finished-looking temp file: never read */
		{
			char src[4300], dst[4300], cmd[9000];

			snprintf(src, sizeof(src), "%s", seg_path(dir, 0));
			snprintf(dst, sizeof(dst), "%s/profile/.tmp-seg-%016llx.nps",
				 dir, (unsigned long long)(T0 + 9999 * 60 * SEC));
			snprintf(cmd, sizeof(cmd), "cp '%s' '%s'", src, dst);
			CHECK(system(cmd) == 0);
		}
		CHECK(np_store_list(dir, seg_slice, &pp, util_warn, &w, err,
				    sizeof(err)) == 0);
		n = (int)(pp - present);
		if (getenv("TEST_VERBOSE"))
			fprintf(stderr, "crash round %d: %d segments, last "
				"reported %u\n", round, n, last_done);
		/* every slice reported finished is there; at most one more
		 * (finished, killed before it told us) */
		CHECK(n == (int)last_done + 1 || n == (int)last_done + 2);
		for (int i = 0; i < n; i++)
			CHECK(present[i] == (uint32_t)i);
		got = read_store(dir, 0, 0, &w, &st);
		exp = expect(present, n, 20000, 20000);
		CHECK(!strcmp(got, exp));
		CHECK(st.segments == (uint32_t)n && st.skipped == 0 && w.n == 0);
		free(got);
		free(exp);
		next = n;
	}
	/* reopening cleans temp files */
	{
		struct warns w = { 0 };
		struct np_store *s = open_store(dir, 0, 0, &w);
		char p[4300];
		struct dirent *de;
		DIR *d;
		int temps = 0;

		np_store_close(s);
		snprintf(p, sizeof(p), "%s/profile", dir);
		d = opendir(p);
		while (d && (de = readdir(d)))
			temps += !strncmp(de->d_name, ".tmp-", 5);
		if (d)
			closedir(d);
		CHECK(temps == 0);
	}
}

/*
 * tests/cli/fixture.nmp (segment version 1) as written by the version 2
 * encoder (gen_fixture linked with lib/store/store_seg.c of commit a98b807):
 * the daemon wrote v2 segments before v3, so they must keep reading.
 */
static const unsigned char fixture_v2[] = {
	0x4e, 0x4d, 0x49, 0x50, 0x53, 0x45, 0x47, 0x0a, 0x02, 0x00, 0x60, 0x00,
	0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0xfa, 0xed, 0x51, 0x72, 0x86, 0x18,
	0x00, 0x58, 0x41, 0xe6, 0x5f, 0x72, 0x86, 0x18, 0x6e, 0x00, 0x00, 0x00,
	0x00, 0x00, 0x00, 0x00, 0x03, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
	0x0e, 0x00, 0x00, 0x00, 0x0a, 0x00, 0x00, 0x00, 0x0c, 0x00, 0x00, 0x00,
	0x05, 0x00, 0x00, 0x00, 0xdd, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
	0xc0, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x8f, 0xa8, 0xe5, 0x9e,
	0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x83, 0xa9, 0x75,
	0x28, 0xb5, 0x2f, 0xfd, 0x20, 0xdd, 0xbd, 0x05, 0x00, 0x52, 0x4b, 0x27,
	0x22, 0x30, 0x89, 0xba, 0x01, 0x44, 0x7f, 0xd1, 0xf0, 0xd5, 0xa3, 0xd7,
	0x14, 0x23, 0x25, 0xad, 0x83, 0x81, 0x1a, 0x90, 0x01, 0x84, 0x49, 0x1d,
	0x27, 0xb2, 0x7d, 0x69, 0x7b, 0xda, 0x64, 0x1a, 0x2e, 0x91, 0x01, 0x2e,
	0xa0, 0x70, 0x20, 0x40, 0x30, 0x4b, 0x5b, 0x5a, 0x63, 0x8c, 0x35, 0x8d,
	0xf7, 0x1e, 0xb3, 0x30, 0xc5, 0x25, 0x48, 0xcb, 0xcc, 0x24, 0x33, 0x1b,
	0x63, 0xa4, 0x40, 0x32, 0x1a, 0x43, 0x81, 0x59, 0x9e, 0xe2, 0x90, 0xa6,
	0x50, 0x28, 0x99, 0x31, 0xee, 0x4f, 0xce, 0xca, 0x07, 0x1b, 0xd5, 0x97,
	0x3b, 0x1a, 0x58, 0x68, 0xf7, 0x46, 0xff, 0x78, 0xad, 0x1a, 0x06, 0x3f,
	0x3d, 0xbe, 0x7b, 0x25, 0xa7, 0x99, 0x72, 0x96, 0x0a, 0x20, 0xe8, 0x40,
	0xf8, 0xab, 0x1d, 0xfc, 0xbe, 0x91, 0xad, 0x2b, 0x4e, 0x55, 0x24, 0x79,
	0x15, 0xe3, 0x3e, 0x14, 0x84, 0xd8, 0x82, 0x9e, 0x40, 0xc1, 0x9d, 0xd4,
	0xf2, 0xb5, 0x5e, 0x55, 0x17, 0x4e, 0xf5, 0x4e, 0x04, 0xc1, 0x7e, 0xfc,
	0xaf, 0x07, 0x39, 0x34, 0x09, 0xc4, 0xb9, 0x97, 0x24, 0x06, 0x97, 0x00,
	0x08, 0x09, 0x08, 0x10, 0x88, 0x1f, 0x38, 0x22, 0x4f, 0x9c, 0xf2, 0x02,
	0x57, 0xc1, 0x35, 0x38, 0x6d, 0x4b, 0x5d, 0x2e, 0xb9, 0x85, 0x6b, 0x02,
	0x4e, 0x4d, 0x49, 0x50, 0x53, 0x45, 0x47, 0x0a, 0x02, 0x00, 0x60, 0x00,
	0x01, 0x00, 0x00, 0x00, 0x00, 0x58, 0x41, 0xe6, 0x5f, 0x72, 0x86, 0x18,
	0x00, 0xb0, 0x88, 0xde, 0x6d, 0x72, 0x86, 0x18, 0x51, 0x00, 0x00, 0x00,
	0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
	0x0e, 0x00, 0x00, 0x00, 0x09, 0x00, 0x00, 0x00, 0x0b, 0x00, 0x00, 0x00,
	0x05, 0x00, 0x00, 0x00, 0xfd, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
	0xe3, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xb2, 0xc9, 0x10, 0x3c,
	0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x8c, 0x69, 0x3c, 0x8f,
	0x28, 0xb5, 0x2f, 0xfd, 0x20, 0xfd, 0xd5, 0x06, 0x00, 0x92, 0x4d, 0x30,
	0x2c, 0x80, 0xa9, 0x6d, 0x33, 0x30, 0x03, 0xc0, 0x60, 0x26, 0x64, 0x42,
	0xca, 0xd2, 0x7e, 0xf7, 0x74, 0x49, 0x44, 0x48, 0x42, 0x60, 0x0a, 0x89,
	0x85, 0x24, 0x68, 0x7c, 0xa3, 0xc9, 0x10, 0xc0, 0x1d, 0xc2, 0x82, 0x8a,
	0x18, 0x11, 0x8b, 0x96, 0x8c, 0x5a, 0x68, 0xcb, 0x14, 0xcb, 0x80, 0x52,
	0xe0, 0x16, 0x44, 0x61, 0x04, 0x18, 0x63, 0x6b, 0x31, 0x8c, 0x73, 0x0d,
	0x96, 0x2c, 0x17, 0xd2, 0x12, 0x84, 0x2d, 0x66, 0xc6, 0x8d, 0x17, 0x63,
	0x36, 0x51, 0xc1, 0x28, 0x24, 0x98, 0x99, 0x0d, 0x18, 0x1a, 0x00, 0xbc,
	0x2c, 0x94, 0xa4, 0xb1, 0xf7, 0x1a, 0x7f, 0xdb, 0xf9, 0x8e, 0x04, 0x48,
	0xba, 0xc7, 0x03, 0xe7, 0xdb, 0x3d, 0x3a, 0x6a, 0x53, 0x39, 0xa1, 0xa5,
	0x37, 0x3e, 0xb4, 0x7c, 0xbc, 0xa5, 0x1a, 0xfa, 0xbd, 0x1e, 0x39, 0xd4,
	0xe9, 0x51, 0x29, 0x8d, 0x52, 0x43, 0x9b, 0xfa, 0x96, 0x1a, 0xa4, 0x28,
	0x42, 0x10, 0xa2, 0x5e, 0x7f, 0x9e, 0x05, 0x4b, 0x4d, 0x85, 0xaf, 0x6c,
	0xd4, 0x11, 0xcf, 0x23, 0x6d, 0xed, 0xfa, 0xd1, 0xdb, 0x5e, 0x9f, 0xaa,
	0x48, 0xfa, 0xca, 0xe1, 0x1e, 0x1d, 0x6a, 0x42, 0xd4, 0x8c, 0x13, 0xb4,
	0x1f, 0x6d, 0x85, 0x10, 0x22, 0x34, 0x55, 0x6d, 0x22, 0x68, 0x52, 0xe7,
	0xeb, 0x75, 0x18, 0x08, 0xc3, 0xbd, 0x47, 0x90, 0x2c, 0x5a, 0x73, 0x2f,
	0x20, 0x08, 0x00, 0x49, 0x45, 0x05, 0x04, 0x1e, 0x7e, 0xf5, 0x77, 0x61,
	0xf6, 0xcc, 0xd8, 0x46, 0x9d, 0x77, 0x31, 0x6e, 0xcb, 0x35, 0x01,
};

static char *read_canon(const char *path)
{
	struct np_agg *r = np_agg_new(NULL);
	struct np_read_stats st;
	struct warns w = { 0 };
	struct np_read_opts o;
	char err[256], *got;

	np_read_opts_init(&o);
	o.warn = util_warn;
	o.warn_arg = &w;
	if (np_profile_read(path, &o, r, &st, err, sizeof(err)) ||
	    st.segments != 2 || w.n) {
		fprintf(stderr, "%s: %s, %u segments, %d warnings\n", path, err,
			st.segments, w.n);
		np_agg_free(r);
		return strdup("(unreadable)");
	}
	got = util_canon(r);
	np_agg_free(r);
	return got;
}

/* v1, v2 and a fresh (current version) copy of one profile read alike. */
static void test_versions(void)
{
	char v1[4300], v2[4300], cur[4300], err[256];
	char *c1, *c2, *c3;
	struct np_agg *a = np_agg_new(NULL);
	struct np_profile *f;
	int fd;

	snprintf(v1, sizeof(v1), "%s/cli/fixture.nmp", NMIPROF_TEST_SRCDIR);
	snprintf(v2, sizeof(v2), "%s/fixture-v2.nmp", base);
	snprintf(cur, sizeof(cur), "%s/fixture-cur.nmp", base);
	fd = open(v2, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	CHECK(fd >= 0 && write(fd, fixture_v2, sizeof(fixture_v2)) ==
			 (ssize_t)sizeof(fixture_v2));
	close(fd);
	/* the embedded copy really is version 2 (u16 at offset 8) */
	CHECK(fixture_v2[8] == 2 && fixture_v2[9] == 0);
	c1 = read_canon(v1);
	c2 = read_canon(v2);
	CHECK(strcmp(c1, "(unreadable)") && !strcmp(c1, c2));
	/* re-encode what v2 held with the current encoder, slice by slice */
	{
		struct np_seg_info in;
		const unsigned char *p = fixture_v2;
		size_t left = sizeof(fixture_v2);

		f = np_profile_create(cur, 0, err, sizeof(err));
		CHECK(f != NULL);
		while (f && left &&
		       !np_seg_header(p, left, &in, err, sizeof(err))) {
			np_agg_reset(a);
			CHECK(np_seg_decode(p, in.size, a, -1, err,
					    sizeof(err)) == 0);
			CHECK(np_profile_write(f, a, in.start_ns, in.end_ns, err,
					    sizeof(err)) == 0);
			p += in.size;
			left -= in.size;
		}
		CHECK(left == 0);
		CHECK(np_profile_close(f) == 0);
	}
	c3 = read_canon(cur);
	CHECK(!strcmp(c1, c3));
	free(c1);
	free(c2);
	free(c3);
	np_agg_free(a);
}

static const struct np_test_case cases[] = {
	NP_CASE(test_roundtrip),
	NP_CASE(test_corruption),
	NP_CASE(test_file),
	NP_CASE(test_versions),
	NP_CASE(test_retention),
	NP_CASE(test_dict),
	NP_CASE(test_reader_reset),
	NP_CASE(test_reader_new_agg),
	NP_CASE(test_reader_kept),
	NP_CASE(test_torn_dict),
	NP_CASE_SLOW(test_big_slice),
	NP_CASE(test_retention_epochs),
	NP_CASE(test_old_store),
	NP_CASE(test_build_ids),
	NP_CASE_SLOW(test_crash),
	{ 0 }
};

int main(int argc, char **argv)
{
	int ret;

	snprintf(base, sizeof(base), "%s/store-test.%d", NMIPROF_TEST_BINDIR,
		 (int)getpid());
	mkdir(base, 0755);
	ret = np_test_main(argc, argv, cases);
	if (!failures)
		rm_rf(base);
	else
		fprintf(stderr, "test_store: data left in %s\n", base);
	return ret;
}
