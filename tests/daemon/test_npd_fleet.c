// SPDX-License-Identifier: GPL-2.0
/*
 * The fleet exporter's slice read (daemon/fleet.c): a slice it could not
 * read for want of memory or file descriptors is tried again, not
 * counted lost; real limits (setrlimit) make the errors, the store is a
 * real one.
 */
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <unistd.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "fleet.h"
#include "store.h"

#include "../unit/test_store_util.h"

#define SEC 1000000000ULL
#define T0 (1767225600ULL * SEC)

static char base[4096];

/*
 * A store of the given slices (n samples over pool stacks each); the
 * segment names, oldest first, in names; how many are there.  Written
 * by a child, so that this process's heap has no free room left from
 * it (test_enomem_retried).
 */
static int make_store(const char *dir, const uint32_t *n, const uint32_t *pool,
		      int nr, char names[][32])
{
	struct np_store_opts o;
	struct np_agg *a;
	struct np_store *s;
	char err[256], path[4300];
	int k = 0, status = -1, before = failures;
	pid_t pid = fork();

	if (pid > 0) {
		CHECK(waitpid(pid, &status, 0) == pid && status == 0,
		      "the store's writer failed: %d", status);
		goto names;
	}
	CHECK(pid == 0);
	if (pid < 0)
		return 0;
	a = util_agg();
	np_store_opts_init(&o);
	o.dir = dir;
	o.max_bytes = 0;
	o.max_age_ns = 0;	/* T0 is long past */
	s = np_store_open(&o, err, sizeof(err));
	CHECK(s && a, "%s", err);
	for (int i = 0; s && a && i < nr; i++) {
		np_agg_reset(a);
		util_slice(a, i, n[i], pool[i]);
		CHECK(!np_store_write(s, a, T0 + i * 60 * SEC, T0 + (i + 1) * 60 * SEC,
				      err, sizeof(err)), "%s", err);
	}
	np_store_close(s);
	np_agg_free(a);
	_exit(failures != before);
names:
	for (; k < nr; k++) {
		snprintf(path, sizeof(path), "%s/profile/seg-%016llx.nps", dir,
			 (unsigned long long)(T0 + k * 60 * SEC));
		if (access(path, R_OK))
			break;
		snprintf(names[k], 32, "seg-%016llx.nps",
			 (unsigned long long)(T0 + k * 60 * SEC));
	}
	return k;
}

static const char *tdir(const char *name)
{
	static char p[4200];
	char cmd[4300];

	snprintf(p, sizeof(p), "%s/%s", base, name);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", p);
	if (system(cmd))
		fprintf(stderr, "%s failed\n", cmd);
	return p;
}

/* slice i read by the exporter's function equals slice i as written;
 * one a throughout, as the exporter does (the reader maps into it) */
static void check_read(struct np_store_reader *rd, struct np_agg *a,
		       const char *name, uint32_t i, uint32_t n, uint32_t pool)
{
	struct np_agg *exp = util_agg();
	struct np_read_stats st;
	char err[512], *got_c, *exp_c;
	int ret = npd_fleet_read_slice(rd, name, a, &st, err, sizeof(err));

	CHECK(ret == 0, "slice %u: %d: %s", i, ret, err);
	util_slice(exp, i, n, pool);
	got_c = util_canon(a);
	exp_c = util_canon(exp);
	CHECK(!strcmp(got_c, exp_c), "slice %u read back differs", i);
	free(got_c);
	free(exp_c);
	np_agg_free(exp);
}

/*
 * Every slice read back whole, newest first: after a failed read of a
 * slice, the later slices of its dictionary too.  Then a and rd freed.
 */
static void check_all_free(struct np_store_reader *rd, struct np_agg *a,
			   char names[][32], int nr, const uint32_t *n,
			   const uint32_t *pool)
{
	for (int i = nr - 1; rd && a && i >= 0; i--)
		check_read(rd, a, names[i], (uint32_t)i, n[i], pool[i]);
	np_store_reader_close(rd);
	np_agg_free(a);
}

/* The exporter's read of name with resource's soft limit at cur. */
static int read_limited(struct np_store_reader *rd, struct np_agg *a,
			const char *name, int resource, rlim_t cur,
			char *err, size_t errlen)
{
	struct np_read_stats st;
	struct rlimit old, lim;
	int ret;

	CHECK(!getrlimit(resource, &old));
	lim = old;
	lim.rlim_cur = cur;
	CHECK(!setrlimit(resource, &lim));
	ret = npd_fleet_read_slice(rd, name, a, &st, err, errlen);
	CHECK(!setrlimit(resource, &old));
	return ret;
}

/* out of file descriptors: not read now, read later, nothing lost */
static void test_emfile_retried(void)
{
	const uint32_t n[2] = { 2000, 2000 }, pool[2] = { 300, 300 };
	const char *dir = tdir("emfile");
	struct np_store_reader *rd;
	struct np_agg *a = util_agg();
	char names[2][32], err[512];
	int fd, ret;

	CHECK(make_store(dir, n, pool, 2, names) == 2);
	rd = np_store_reader_open(dir);
	CHECK(rd && a);
	if (!rd || !a)
		goto out;
	/* No descriptor left above the lowest free one. */
	fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	CHECK(fd >= 0);
	close(fd);
	ret = read_limited(rd, a, names[0], RLIMIT_NOFILE, (rlim_t)fd, err,
			   sizeof(err));
	CHECK(ret == -1, "got %d (1: counted lost): %s", ret, err);
	CHECK(strstr(err, strerror(EMFILE)) != NULL, "err: %s", err);
out:
	check_all_free(rd, a, names, 2, n, pool);
}

static long vm_size(void)
{
	char line[256];
	long kb = -1;
	FILE *f = fopen("/proc/self/status", "r");

	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "VmSize: %ld kB", &kb) == 1)
			break;
	if (f)
		fclose(f);
	return kb * 1024;
}

/*
 * Out of memory while the stack dictionary loads (a big one, the
 * segment itself small): that slice is tried again, and the next ones
 * of the same dictionary do not find it "damaged" for good.
 */
static void test_enomem_retried(void)
{
	/* slice 0 fills the dictionary; slice 1 is small and needs it */
	const uint32_t n[3] = { 8000, 50, 50 }, pool[3] = { 8000, 40, 40 };
	const char *dir = tdir("enomem");
	struct np_store_reader *rd = NULL;
	struct np_agg *a = util_agg();
	char names[3][32], err[512];
	long vm;
	int ret;

	if (NP_TEST_SANITIZED) {
		printf("skip enomem_retried: an address-space limit and ASan's "
		       "allocator do not mix\n");
		np_agg_free(a);
		return;
	}
	CHECK(make_store(dir, n, pool, 3, names) == 3);
	rd = np_store_reader_open(dir);
	CHECK(rd && a);
	if (!rd || !a)
		goto out;
	/*
	 * Room for the small segment, none for the dictionary (150 KB): a
	 * fixed mmap threshold sends it to mmap, and not into heap that
	 * writing the store left free.
	 */
	CHECK(mallopt(M_MMAP_THRESHOLD, 64 << 10) == 1);
	vm = vm_size();
	CHECK(vm > 0);
	ret = read_limited(rd, a, names[1], RLIMIT_AS, (rlim_t)vm + (32 << 10),
			   err, sizeof(err));
	CHECK(ret == -1, "got %d (1: counted lost): %s", ret, err);
out:
	check_all_free(rd, a, names, 3, n, pool);
}

/* damage is lost for good: counted, the pass goes on */
static void test_damage_lost(void)
{
	const uint32_t n[1] = { 2000 }, pool[1] = { 300 };
	const char *dir = tdir("damage");
	struct np_store_reader *rd;
	struct np_agg *a = util_agg();
	struct np_read_stats st;
	char names[1][32], err[512], path[4400];
	int fd;

	CHECK(make_store(dir, n, pool, 1, names) == 1);
	snprintf(path, sizeof(path), "%s/profile/%s", dir, names[0]);
	fd = open(path, O_WRONLY);
	CHECK(fd >= 0 && pwrite(fd, "XXXXXXXXXXXXXXXX", 16, 0) == 16);
	if (fd >= 0)
		close(fd);
	rd = np_store_reader_open(dir);
	CHECK(rd && a);
	if (rd && a)
		CHECK(npd_fleet_read_slice(rd, names[0], a, &st, err, sizeof(err)) == 1);
	CHECK(err[0] != 0);
	unlink(path);
	if (rd && a)
		CHECK(npd_fleet_read_slice(rd, names[0], a, &st, err, sizeof(err)) == 1);
	CHECK(err[0] == 0, "gone, nothing to say: %s", err);
	np_store_reader_close(rd);
	np_agg_free(a);
}

static const struct np_test_case cases[] = {
	NP_CASE(test_emfile_retried),
	NP_CASE(test_enomem_retried),
	NP_CASE(test_damage_lost),
	{ 0 }
};

int main(int argc, char **argv)
{
	char cmd[4300];
	int ret;

	snprintf(base, sizeof(base), "/tmp/test_npd_fleet.%d", (int)getpid());
	mkdir(base, 0755);
	ret = np_test_main(argc, argv, cases);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", base);
	if (system(cmd))
		fprintf(stderr, "%s failed\n", cmd);
	return ret;
}
