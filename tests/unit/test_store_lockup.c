// SPDX-License-Identifier: GPL-2.0
/* Lockup store: round trip, ordering, damaged records, bad ids. */
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>
#include <sys/stat.h>
#include "test_store_util.h"
#include "lockstore.h"

static char base[4096];

struct seen {
	int n;
	uint32_t cpus[8];
};

static int collect(const struct np_lockup_rec *r, void *arg)
{
	struct seen *s = arg;

	if (s->n < 8)
		s->cpus[s->n] = r->cpu;
	s->n++;
	return 0;
}

/* written, read back, listed oldest first, damage and garbage skipped */
static void test_roundtrip(void)
{
	uint64_t frames[3] = { 0xffffffff81001010, 0xffffffff81002020,
			       0xffffffff81003030 };
	struct np_sym syms[3] = {
		{ "[kernel.kallsyms]", "native_queued_spin_lock_slowpath", 0x10, 1, NULL },
		{ "[kernel.kallsyms]", "_raw_spin_lock", 0x20, 1, NULL },
		{ "[nmiprof_test]", NULL, 0x3030, 1, NULL },
	};
	struct np_ev_lockup l = { 0 };
	struct np_lockup_rec *r = NULL;
	char id1[NP_LOCKUP_ID_LEN], id2[NP_LOCKUP_ID_LEN], err[256];
	struct warns w = { 0 };
	struct seen s = { 0 };

	l.time_ns = 123456789;
	l.stuck_ns = 12000000000ULL;
	l.cpu = 3;
	l.pid = 4242;
	l.tid = 4243;
	l.flags = NMIPROF_LF_HARD | NMIPROF_LF_AT_LEAST;
	memcpy(l.comm, "spinner", 8);
	l.regs.ip = 0xffffffff81001010;
	l.regs.sp = 0xffffc90000123456;
	l.regs.flags = 0x46;
	l.nr_kframes = 3;
	l.kframes = frames;
	CHECK(np_lockstore_write(base, &l, syms, 2000, id1, sizeof(id1), err,
				 sizeof(err)) == 0);
	l.cpu = 1;
	memset(l.comm, 'x', sizeof(l.comm));	/* no NUL: 16 chars */
	CHECK(np_lockstore_write(base, &l, NULL, 1000, id2, sizeof(id2), err,
				 sizeof(err)) == 0);

	CHECK(np_lockstore_read(base, id1, &r, err, sizeof(err)) == 0);
	if (r) {
		CHECK(!strcmp(r->id, id1));
		CHECK(r->wall_ns == 2000 && r->time_ns == 123456789);
		CHECK(r->stuck_ns == 12000000000ULL && r->cpu == 3);
		CHECK(r->pid == 4242 && r->tid == 4243);
		CHECK(r->flags == (NMIPROF_LF_HARD | NMIPROF_LF_AT_LEAST) &&
		      !strcmp(r->comm, "spinner"));
		CHECK(r->regs.ip == l.regs.ip && r->regs.sp == l.regs.sp &&
		      r->regs.flags == 0x46);
		CHECK(r->nr_frames == 3 && r->addrs[2] == frames[2]);
		CHECK(!strcmp(r->frames[0].name,
			      "native_queued_spin_lock_slowpath"));
		CHECK(r->frames[1].offset == 0x20 && r->frames[1].kernel);
		CHECK(r->frames[2].name == NULL &&
		      !strcmp(r->frames[2].dso, "[nmiprof_test]"));
		np_lockup_rec_free(r);
	}
	r = NULL;
	CHECK(np_lockstore_read(base, id2, &r, err, sizeof(err)) == 0);
	if (r) {
		CHECK(strlen(r->comm) == 16);
		CHECK(r->frames[0].name == NULL &&
		      r->frames[0].offset == frames[0] &&
		      !strcmp(r->frames[0].dso, "[kernel.kallsyms]"));
		np_lockup_rec_free(r);
	}
	/* oldest first */
	CHECK(np_lockstore_list(base, collect, &s, util_warn, &w, err,
				sizeof(err)) == 0);
	CHECK(s.n == 2 && s.cpus[0] == 1 && s.cpus[1] == 3 && w.n == 0);

	/* damage id1: listed as skipped, the other still listed */
	{
		char p[4300];
		int fd;
		unsigned char c;

		snprintf(p, sizeof(p), "%s/lockups/%s.npl", base, id1);
		fd = open(p, O_RDWR);
		CHECK(pread(fd, &c, 1, 40) == 1);
		c ^= 1;
		CHECK(pwrite(fd, &c, 1, 40) == 1);
		close(fd);
	}
	memset(&s, 0, sizeof(s));
	CHECK(np_lockstore_list(base, collect, &s, util_warn, &w, err,
				sizeof(err)) == 0);
	CHECK(s.n == 1 && s.cpus[0] == 1 && w.n == 1);
	CHECK(np_lockstore_read(base, id1, &r, err, sizeof(err)) < 0);
	CHECK(np_lockstore_read(base, "../../etc/passwd", &r, err,
				sizeof(err)) == -EINVAL);
	CHECK(np_lockstore_read(base, "lockup-0000000000000001-cpu9", &r, err,
				sizeof(err)) < 0);
	/* garbage files in lockups/ never crash the lister */
	{
		char p[4300];
		FILE *f;

		snprintf(p, sizeof(p), "%s/lockups/lockup-00000000000000ff-cpu0.npl",
			 base);
		f = fopen(p, "w");
		fputs("NMIPLCK\ngarbage", f);
		fclose(f);
		memset(&s, 0, sizeof(s));
		w.n = 0;
		CHECK(np_lockstore_list(base, collect, &s, util_warn, &w, err,
					sizeof(err)) == 0);
		CHECK(s.n == 1 && w.n == 2);
	}
}

static const struct np_test_case cases[] = {
	NP_CASE(test_roundtrip),
	{ 0 }
};

int main(int argc, char **argv)
{
	char cmd[4200];
	int ret;

	snprintf(base, sizeof(base), "%s/lockup-test.%d", NMIPROF_TEST_BINDIR,
		 (int)getpid());
	mkdir(base, 0755);
	ret = np_test_main(argc, argv, cases);
	if (!failures) {
		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", base);
		CHECK(system(cmd) == 0);
	}
	return ret || failures;
}
