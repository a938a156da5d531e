// SPDX-License-Identifier: GPL-2.0
/*
 * The unwind tables and their walk (lib/unwind): the validator refuses
 * malformed and hostile tables, the walk over a synthetic stack mixes
 * rows and frame pointers and stops with the right reason, no table
 * (valid or fuzzed) makes a walk loop or read outside its window, real
 * objects compile, and the on-disk cache refuses what it did not write.
 */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <dirent.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include "check.h"
#include "np_unwind_impl.h"
#include "np_unwind_walk.h"

#define LIBC "/lib/x86_64-linux-gnu/libc.so.6"

/* ---- tables built by hand ----------------------------------------- */

struct tbl {
	struct nmiprof_uw_table h;
	struct nmiprof_uw_row r[8];
};

static size_t tbl_init(struct tbl *t, int nr)
{
	memset(t, 0, sizeof(*t));
	t->h.magic = NMIPROF_UW_MAGIC;
	t->h.version = NMIPROF_UW_VERSION;
	t->h.hdr_size = sizeof(t->h);
	t->h.row_size = sizeof(t->r[0]);
	t->h.nr_rows = nr;
	t->h.base = 0x1000;
	t->h.size = 0x1000;
	t->h.ra_off = -8;
	return sizeof(t->h) + nr * sizeof(t->r[0]);
}

static struct nmiprof_uw_row row(uint32_t pc, int kind, int rbp_base,
				 uint16_t cfa, int8_t rbp)
{
	return (struct nmiprof_uw_row){ .pc = pc, .info = kind |
		(rbp_base ? NMIPROF_UW_CFA_RBP : 0), .cfa_off = cfa, .rbp_off = rbp };
}

static int refused(const void *t, size_t len, const char *want)
{
	const char *why = NULL;

	if (np_uw_validate(t, len, &why) == 0)
		return 0;
	if (want && !strstr(why, want)) {
		fprintf(stderr, "refused for '%s', wanted '%s'\n", why, want);
		return 0;
	}
	return 1;
}

static void test_validate(void)
{
	struct tbl t;
	const char *why;
	size_t len = tbl_init(&t, 3);

	t.r[0] = row(0x000, NMIPROF_UW_CFA, 0, 8, 0);	/* entry: CFA = rsp + 8 */
	t.r[1] = row(0x001, NMIPROF_UW_CFA, 0, 16, -2);	/* after push %rbp */
	t.r[2] = row(0x100, NMIPROF_UW_NONE, 0, 0, 0);
	CHECK(np_uw_validate(&t, len, &why) == 0);

	CHECK(refused(&t, len - 1, "size"));			/* truncated */
	CHECK(refused(&t, len - sizeof(t.r[0]), "size"));
	CHECK(refused(&t, sizeof(t.h) - 4, "truncated header"));
	CHECK(refused(&t, len + sizeof(t.r[0]), "size"));	/* trailing bytes */
	t.h.magic ^= 1;
	CHECK(refused(&t, len, "magic"));
	t.h.magic ^= 1;
	t.h.version++;
	CHECK(refused(&t, len, "version"));
	t.h.version--;
	t.h.nr_rows = 0xffffffff;
	CHECK(refused(&t, len, "rows"));
	t.h.nr_rows = 3;

	t.r[1].pc = 0;					/* overlapping */
	CHECK(refused(&t, len, "sorted"));
	t.r[1].pc = 0x2000;				/* past the covered range */
	t.r[2].pc = 0x2001;
	CHECK(refused(&t, len, "range"));
	t.r[1].pc = 0x001;
	t.r[2].pc = 0x100;

	t.r[1].cfa_off = 0;				/* CFA = rsp: itself */
	CHECK(refused(&t, len, "above"));
	t.r[1] = row(0x001, NMIPROF_UW_CFA, 1, 8, 0);	/* rbp + 8 */
	CHECK(refused(&t, len, "above"));
	t.r[1] = row(0x001, NMIPROF_UW_CFA, 0, 60000, 0);	/* huge */
	CHECK(refused(&t, len, "too large"));
	t.r[1] = row(0x001, NMIPROF_UW_CFA, 0, 16, 1);	/* rbp above CFA */
	CHECK(refused(&t, len, "rbp"));
	t.r[1] = row(0x001, NMIPROF_UW_CFA, 0, 16, -3);	/* below rsp */
	CHECK(refused(&t, len, "rbp"));
	t.r[1] = row(0x001, NMIPROF_UW_NR_KINDS, 0, 16, 0);
	CHECK(refused(&t, len, "kind"));
	t.r[1] = row(0x001, NMIPROF_UW_CFA, 0, 16, -2);
	t.h.ra_off = 0;
	CHECK(refused(&t, len, "return address"));
	t.h.ra_off = -8;
	CHECK(np_uw_validate(&t, len, &why) == 0);
}

/* ---- a synthetic process: one object, one stack ------------------- */

#define STK_BASE	0x7ffff000ULL
#define STK_WORDS	64

struct fake {
	const struct nmiprof_uw_table *t;	/* mapped at 0x400000, vaddr 0x1000 */
	uint64_t stack[STK_WORDS];
	uint64_t lo, hi;
	int reads, bad_reads;
};

#define TEXT	0x400000ULL
#define BIAS	(TEXT - 0x1000)

static int f_find(void *ctx, __u64 ip, const struct nmiprof_uw_table **t,
		  __u64 *bias)
{
	struct fake *f = ctx;

	if (ip >= TEXT && ip < TEXT + 0x1000) {
		*t = f->t;
		*bias = BIAS;
		return 0;
	}
	if (ip >= 0x500000 && ip < 0x501000)	/* code without a table */
		return NMIPROF_UW_STOP_NO_TABLE;
	return NMIPROF_UW_STOP_UNMAPPED;
}

static int f_read(void *ctx, __u64 addr, __u64 *val)
{
	struct fake *f = ctx;

	f->reads++;
	if (addr < f->lo || addr + 8 > f->hi || addr < STK_BASE ||
	    addr + 8 > STK_BASE + sizeof(f->stack)) {
		f->bad_reads++;
		return -1;
	}
	*val = f->stack[(addr - STK_BASE) / 8];
	return 0;
}

static const struct np_uw_ops f_ops = { .find = f_find, .read = f_read };

#define SLOT(i)	(STK_BASE + 8 * (i))

static void test_walk(void)
{
	struct tbl t;
	struct fake f = { .lo = STK_BASE, .hi = STK_BASE + 8 * STK_WORDS };
	__u64 frames[16];
	unsigned int nr;
	struct np_uw_regs regs;
	int why;
	size_t len = tbl_init(&t, 5);
	const char *msg;

	/*
	 * leaf  [0x1000,0x1100): CFA = rsp + 32 (no frame pointer)
	 * mid   [0x1100,0x1200): CFA = rbp + 16, rbp saved at CFA - 16
	 * gap   [0x1200,0x1300): no CFI (frame pointers)
	 * start [0x1300,0x1400): RA undefined
	 */
	t.r[0] = row(0x000, NMIPROF_UW_CFA, 0, 32, 0);
	t.r[1] = row(0x100, NMIPROF_UW_CFA, 1, 16, -2);
	t.r[2] = row(0x200, NMIPROF_UW_NONE, 0, 0, 0);
	t.r[3] = row(0x300, NMIPROF_UW_END, 0, 0, 0);
	t.r[4] = row(0x400, NMIPROF_UW_NONE, 0, 0, 0);
	CHECK(np_uw_validate(&t, len, &msg) == 0);
	f.t = &t.h;

	/* leaf frame: sp = slot 0, RA at slot 3 (CFA = slot 4) */
	f.stack[3] = TEXT + 0x110;		/* into mid */
	/* mid: rbp = slot 10; saved rbp at slot 10, RA at slot 11 */
	f.stack[10] = SLOT(20);			/* gap's frame pointer */
	f.stack[11] = TEXT + 0x210;		/* into the gap */
	/* gap (frame pointers): rbp = slot 20: [rbp] = 0, [rbp+8] = RA */
	f.stack[20] = 0;
	f.stack[21] = TEXT + 0x310;		/* into start */
	regs = (struct np_uw_regs){ .ip = TEXT + 0x10, .sp = SLOT(0), .bp = SLOT(10) };
	why = np_uw_walk(&f_ops, &f, &regs, f.lo, f.hi, frames, 16, &nr);
	CHECK(why == NMIPROF_UW_STOP_END);
	CHECK(nr == 4);
	CHECK(nr == 4 && frames[0] == TEXT + 0x10 && frames[1] == TEXT + 0x110 &&
	      frames[2] == TEXT + 0x210 && frames[3] == TEXT + 0x310);
	CHECK(!f.bad_reads);

	/* depth */
	why = np_uw_walk(&f_ops, &f, &regs, f.lo, f.hi, frames, 2, &nr);
	CHECK(why == NMIPROF_UW_STOP_DEPTH && nr == 2);

	/* a window that ends before mid's RA: no read beyond it */
	f.reads = f.bad_reads = 0;
	why = np_uw_walk(&f_ops, &f, &regs, f.lo, SLOT(11), frames, 16, &nr);
	CHECK(why == NMIPROF_UW_STOP_WINDOW && nr == 2);
	CHECK(!f.bad_reads);

	/* a return address into nothing mapped: not a frame */
	f.stack[21] = 0x900000;
	why = np_uw_walk(&f_ops, &f, &regs, f.lo, f.hi, frames, 16, &nr);
	CHECK(why == NMIPROF_UW_STOP_UNMAPPED && nr == 3);

	/* code without a table whose rbp does not point up the stack */
	f.stack[21] = 0x500010;
	f.stack[22] = 0;
	why = np_uw_walk(&f_ops, &f, &regs, f.lo, f.hi, frames, 16, &nr);
	CHECK(why == NMIPROF_UW_STOP_NO_TABLE && nr == 4);

	/* frame pointers that point at themselves: no loop */
	f.stack[20] = SLOT(20);
	f.stack[21] = TEXT + 0x210;
	f.reads = 0;
	why = np_uw_walk(&f_ops, &f, &regs, f.lo, f.hi, frames, 16, &nr);
	CHECK(why != NMIPROF_UW_STOP_DEPTH && nr < 16 && f.reads < 32);
	CHECK(!f.bad_reads);

	/* a signal frame whose saved rsp goes down the stack */
	t.r[0] = row(0x000, NMIPROF_UW_SIGNAL, 0, 0, 0);
	f.stack[NMIPROF_UW_SIG_RSP / 8] = STK_BASE - 64;
	f.stack[NMIPROF_UW_SIG_RIP / 8] = TEXT + 0x10;
	why = np_uw_walk(&f_ops, &f, &regs, f.lo, f.hi, frames, 16, &nr);
	CHECK(why == NMIPROF_UW_STOP_BAD_ROW && nr == 1);
	CHECK(!f.bad_reads);
}

/*
 * Fuzz: random tables and stacks.  Whatever the validator accepts, the
 * walk ends within max frames, reads only inside its window, and only
 * ~3 reads per frame.
 */
static void test_fuzz(void)
{
	unsigned int seed = 12345;
	int accepted = 0;

	for (int iter = 0; iter < 200000; iter++) {
		struct tbl t;
		struct fake f;
		struct np_uw_regs regs;
		__u64 frames[32];
		unsigned int nr, n = 1 + rand_r(&seed) % 8;
		size_t len = tbl_init(&t, n);
		const char *why;
		uint32_t pc = 0;

		for (unsigned int i = 0; i < n; i++) {
			pc += 1 + rand_r(&seed) % 0x200;
			t.r[i].pc = i ? pc : 0;
			t.r[i].info = rand_r(&seed) % 0x20;
			t.r[i].cfa_off = rand_r(&seed) % 4 ? rand_r(&seed) % 96 : rand_r(&seed);
			t.r[i].rbp_off = rand_r(&seed) % 5 - 3;
		}
		if (rand_r(&seed) % 16 == 0)
			((uint8_t *)&t)[rand_r(&seed) % len] ^= 1 << rand_r(&seed) % 8;
		if (np_uw_validate(&t, len, &why) < 0)
			continue;
		accepted++;
		memset(&f, 0, sizeof(f));
		f.t = &t.h;
		f.lo = STK_BASE + 8 * (rand_r(&seed) % 8);
		f.hi = STK_BASE + 8 * (8 + rand_r(&seed) % (STK_WORDS - 8));
		for (int i = 0; i < STK_WORDS; i++) {
			switch (rand_r(&seed) % 3) {
			case 0: f.stack[i] = TEXT + rand_r(&seed) % 0x1000; break;
			case 1: f.stack[i] = STK_BASE + 8 * (rand_r(&seed) % STK_WORDS) - 16; break;
			default: f.stack[i] = rand_r(&seed); break;
			}
		}
		regs.ip = TEXT + rand_r(&seed) % 0x1000;
		regs.sp = f.lo;
		regs.bp = f.stack[rand_r(&seed) % STK_WORDS];
		np_uw_walk(&f_ops, &f, &regs, f.lo, f.hi, frames, 32, &nr);
		if (f.bad_reads || nr > 32 || f.reads > 3 * 32) {
			CHECK(!f.bad_reads && nr <= 32 && f.reads <= 3 * 32);
			break;
		}
	}
	printf("fuzz: %d tables accepted of 200000\n", accepted);
	CHECK(accepted > 1000);
}

/* ---- real objects, and the cache ---------------------------------- */

/*
 * Two processes writing the same object's table at once (two profilers
 * starting on one machine): every write succeeds and a reader only ever
 * sees the whole table, never one writer's file truncated by the other.
 */
static void test_cache_writers(const struct nmiprof_uw_table *t, size_t len)
{
	char dir[] = "/tmp/np_uw_raceXXXXXX", path[4096];
	pid_t w[2];
	int status, reads = 0, torn = 0;

	CHECK(mkdtemp(dir) != NULL);
	for (int i = 0; i < 2; i++) {
		w[i] = fork();
		if (w[i] == 0) {
			int fails = 0;

			for (int k = 0; k < 40; k++)
				fails += np_uw_cache_write(dir, t, len) != 0;
			_exit(fails ? 1 : 0);
		}
	}
	for (int live = 2; live;) {
		size_t clen;
		struct nmiprof_uw_table *c;

		c = np_uw_cache_read(dir, t->build_id, t->build_id_size, &clen);
		if (c) {
			reads++;
			torn += clen != len || memcmp(c, t, len);
		}
		free(c);
		live = 0;
		for (int i = 0; i < 2; i++)
			if (w[i] > 0 && waitpid(w[i], &status, WNOHANG) == w[i]) {
				CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
				w[i] = 0;
			}
		for (int i = 0; i < 2; i++)
			live += w[i] > 0;
	}
	CHECK(torn == 0);
	printf("cache: 2 writers x 40, %d whole reads, %d torn\n", reads, torn);
	{
		DIR *d = opendir(dir);
		struct dirent *de;

		while (d && (de = readdir(d))) {
			if (de->d_name[0] == '.' && (!de->d_name[1] ||
			    !strcmp(de->d_name, "..")))
				continue;
			CHECK(!strstr(de->d_name, ".tmp"));	/* none left */
			snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
			unlink(path);
		}
		if (d)
			closedir(d);
	}
	rmdir(dir);
}

/* Flip one bit of the file at path, at off. */
static void flip_bit(const char *path, off_t off)
{
	int wfd = open(path, O_RDWR);
	uint8_t b;

	CHECK(pread(wfd, &b, 1, off) == 1);
	b ^= 0x10;
	CHECK(pwrite(wfd, &b, 1, off) == 1);
	close(wfd);
}

static void test_compile_and_cache(void)
{
	char err[256], dir[] = "/tmp/np_uw_cacheXXXXXX", path[4096];
	struct np_uw_compile_stats st;
	struct nmiprof_uw_table *t, *c;
	struct np_uw_obj *o;
	const struct nmiprof_uw_row *r;
	const char *why;
	size_t len, clen;
	unsigned int kinds[NMIPROF_UW_NR_KINDS] = { 0 };
	int fd = open(LIBC, O_RDONLY), deferred;
	struct dirent *de;
	DIR *d;

	CHECK(fd >= 0);
	if (fd < 0)
		return;
	t = np_uw_compile(fd, LIBC, NULL, &len, &st, err, sizeof(err));
	CHECK(t != NULL);
	if (!t) {
		fprintf(stderr, "%s\n", err);
		close(fd);
		return;
	}
	CHECK(np_uw_validate(t, len, &why) == 0);
	CHECK(t->build_id_size == 20);
	r = (const void *)(t + 1);
	for (uint32_t i = 0; i < t->nr_rows; i++)
		kinds[r[i].info & NMIPROF_UW_KIND_MASK]++;
	printf("libc: %u rows (%zu bytes) from %llu bytes of .eh_frame: "
	       "cfa %u none %u fp %u end %u signal %u plt %u\n", t->nr_rows, len,
	       (unsigned long long)st.eh_frame_bytes, kinds[0], kinds[1],
	       kinds[2], kinds[3], kinds[4], kinds[5]);
	/* nearly every row a plain rule; __restore_rt is a signal frame */
	CHECK(kinds[NMIPROF_UW_CFA] > 20 * kinds[NMIPROF_UW_FP]);
	CHECK(kinds[NMIPROF_UW_SIGNAL] >= 1);

	test_cache_writers(t, len);
	CHECK(mkdtemp(dir) != NULL);
	CHECK(np_uw_cache_write(dir, t, len) == 0);
	c = np_uw_cache_read(dir, t->build_id, t->build_id_size, &clen);
	CHECK(c && clen == len && !memcmp(c, t, len));
	free(c);
	/* no temporary file is left behind */
	d = opendir(dir);
	while (d && (de = readdir(d)))
		CHECK(!strstr(de->d_name, ".tmp"));
	if (d)
		closedir(d);
	/* a flipped bit, a truncated file, another object's table: refused */
	snprintf(path, sizeof(path), "%s/", dir);
	for (int i = 0; i < t->build_id_size; i++)
		snprintf(path + strlen(path), 3, "%02x", t->build_id[i]);
	snprintf(path + strlen(path), 16, "-r%d.uw", NP_UW_COMPILER_REV);
	flip_bit(path, len - 3);
	CHECK(np_uw_cache_read(dir, t->build_id, t->build_id_size, &clen) == NULL);
	CHECK(truncate(path, len - 8) == 0);
	CHECK(np_uw_cache_read(dir, t->build_id, t->build_id_size, &clen) == NULL);
	CHECK(np_uw_cache_write(dir, t, len) == 0);
	{
		uint8_t other[20];

		memcpy(other, t->build_id, 20);
		other[0] ^= 1;
		CHECK(np_uw_cache_read(dir, other, 20, &clen) == NULL);
	}
	/* the object loader takes the cached table */
	o = np_uw_obj_load(fd, LIBC, dir, NULL, NP_UW_LOAD_COMPILE, &deferred,
			   err, sizeof(err));
	CHECK(o && o->cached && o->bytes == len && o->nr_segs >= 1);
	np_uw_obj_free(o);
	/*
	 * For the module (which validates): the header first, the rows
	 * when asked, taken on their crc32c alone.
	 */
	o = np_uw_obj_load(fd, LIBC, dir, NULL, NP_UW_LOAD_KERNEL, &deferred,
			   err, sizeof(err));
	CHECK(o && o->cached && o->head_only && o->bytes == len &&
	      !memcmp(o->t, t, sizeof(*t)));
	CHECK(o && np_uw_obj_rows(o) == 0 && !o->head_only && o->bytes == len &&
	      !memcmp(o->t, t, len));
	np_uw_obj_free(o);
	/* a flipped bit in the rows: refused, and the file removed */
	flip_bit(path, len - 3);
	o = np_uw_obj_load(fd, LIBC, dir, NULL, NP_UW_LOAD_KERNEL, &deferred,
			   err, sizeof(err));
	CHECK(o && o->head_only && np_uw_obj_rows(o) < 0 && o->head_only,
	      "a flipped bit not refused without validation");
	CHECK(access(path, F_OK) < 0, "a bad cache file left");
	np_uw_obj_free(o);
	/* a header that says other rows than the file holds: refused */
	o = np_uw_obj_load(fd, LIBC, dir, NULL, NP_UW_LOAD_COMPILE, &deferred,
			   err, sizeof(err));
	np_uw_obj_free(o);
	CHECK(truncate(path, len - sizeof(struct nmiprof_uw_row)) == 0);
	o = np_uw_obj_load(fd, LIBC, dir, NULL, NP_UW_LOAD_KERNEL, &deferred,
			   err, sizeof(err));
	CHECK(!o && deferred, "a truncated file's header taken");
	unlink(path);
	o = np_uw_obj_load(fd, LIBC, dir, NULL, 0, &deferred, err, sizeof(err));
	CHECK(!o && deferred);		/* not cached, and no compiling allowed */
	o = np_uw_obj_load(fd, LIBC, dir, NULL, NP_UW_LOAD_COMPILE, &deferred,
			   err, sizeof(err));
	CHECK(o && !o->cached);
	np_uw_obj_free(o);
	CHECK(access(path, F_OK) == 0);		/* written back */
	unlink(path);
	rmdir(dir);
	free(t);
	close(fd);

	/* not an ELF file: an error, no crash */
	fd = open("/proc/self/cmdline", O_RDONLY);
	CHECK(np_uw_compile(fd, "cmdline", NULL, &len, NULL, err, sizeof(err)) == NULL);
	CHECK(strstr(err, "not an ELF") != NULL);
	close(fd);
}

static const struct np_test_case cases[] = {
	NP_CASE(test_validate),
	NP_CASE(test_walk),
	NP_CASE(test_fuzz),
	NP_CASE(test_compile_and_cache),
	{ 0 }
};

int main(int argc, char **argv)
{
	return np_test_main(argc, argv, cases);
}
