// SPDX-License-Identifier: GPL-2.0
/*
 * The daemon's ingest path without a backend: synthetic events through
 * npd_ingest() into the real symbolizer, live ring, slice and store, and
 * the control commands over the real socket server.
 *
 *   - a lockup is on disk the moment it is ingested (before any slice);
 *     one the store refuses is kept and written when the store recovers
 *   - user samples of this process are symbolized (test_npd_marker)
 *   - status and top report them; malformed commands get ERR
 *   - the flushed slice holds every sample, the lost count and the
 *     sampling period
 *   - the socket is created 0660; a missing socket directory (not the
 *     default's) is an error, not created
 */
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "ctl_server.h"
#include "live.h"
#include "lockstore.h"
#include "nmiprofd.h"
#include "slices.h"
#include "store.h"
#include "symcache.h"

#include "../unit/check.h"
#include "np_clock.h"

#define NSAMPLES 1000

/* global and not inlined: a frame of the samples, found in our symbol table */
void test_npd_marker(void);
__attribute__((noinline)) void test_npd_marker(void)
{
	__asm__ volatile("" ::: "memory");
}

static int rm_one(const char *path, const struct stat *st, int flag,
		  struct FTW *ftw)
{
	remove(path);
	return 0;
}

struct lockups_seen {
	unsigned int nr;
	struct np_lockup_rec first;
};

static int lockup_fn(const struct np_lockup_rec *r, void *arg)
{
	struct lockups_seen *ls = arg;

	if (!ls->nr++)
		ls->first = *r;		/* scalars only are used */
	return 0;
}

/* Run one request line through the command handler; parse the reply. */
static int command(struct nmiprofd *d, const char *req, struct np_ctl_line *body,
		   char *first_word, size_t fwlen)
{
	static struct np_ctl_line l;
	struct np_buf b;
	char err[128];
	char *nl;
	int rc = -1;

	if (np_ctl_line_parse(&l, req, strlen(req), err, sizeof(err)))
		return -1;
	np_buf_init(&b);
	npd_command(&l, &b, d);
	if (b.oom || !np_buf_str(&b))
		goto out;
	/* Header: "NMIPROF/1 OK n" or "NMIPROF/1 ERR msg=..." */
	nl = strchr(np_buf_str(&b), '\n');
	if (!nl || np_ctl_line_parse(&l, np_buf_str(&b), (size_t)(nl - np_buf_str(&b)) + 1,
				     err, sizeof(err)) || l.nwords < 2)
		goto out;
	snprintf(first_word, fwlen, "%s", l.words[1]);
	rc = 0;
	if (body && !strcmp(l.words[1], "OK")) {
		char *next = nl + 1, *nl2 = strchr(next, '\n');

		rc = nl2 ? np_ctl_line_parse(body, next, (size_t)(nl2 - next) + 1,
					     err, sizeof(err)) : -1;
	}
out:
	np_buf_free(&b);
	return rc;
}

/* one daemon, in process: lockups, samples, status, top, errors, the slice */
static void test_pipeline(void)
{
	uint64_t kframes[2] = { 0xffffffff81000100ULL, 0xffffffff81000200ULL };
	uint64_t uframes[1] = { (uint64_t)(uintptr_t)&test_npd_marker };
	char tmp[] = "/tmp/npd-ingest.XXXXXX", sock[128], err[256], word[16];
	struct np_ctl_line *body = calloc(1, sizeof(*body));
	struct lockups_seen ls = { 0 };
	struct nmiprofd d = { .sigfd = -1 };
	struct np_read_stats rs;
	struct np_read_opts ro;
	struct np_event ev;
	struct np_agg *a;
	struct stat st;
	uint64_t v;

	if (!body || !mkdtemp(tmp)) {
		failures++;
		free(body);
		return;
	}
	np_log_init("test_npd_ingest", NP_LOG_WARN);
	npd_config_defaults(&d.cfg);
	snprintf(d.cfg.store_dir, sizeof(d.cfg.store_dir), "%s/store", tmp);
	snprintf(sock, sizeof(sock), "%s/run/ctl.sock", tmp);
	d.start_mono_ns = np_mono_ns();
	d.sym = np_symbolizer_new(err, sizeof(err));
	if (!d.sym) {
		fprintf(stderr, "symbolizer: %s\n", err);
		failures++;
		return;
	}
	d.symc = npd_symcache_new(d.sym);
	d.live = npd_live_new(d.cfg.live_s, npd_symcache_lookup, d.symc);
	d.slices = npd_slices_open(&d.cfg, npd_symcache_lookup, d.symc,
				   err, sizeof(err));
	/* A socket directory that is not there is an error, not created. */
	CHECK(npd_ctl_server_open(sock, npd_command, &d, err, sizeof(err)) == NULL);
	CHECK(strstr(err, "run: No such file or directory") != NULL);
	{
		char run[128];

		snprintf(run, sizeof(run), "%s/run", tmp);
		CHECK(stat(run, &st) != 0);
		CHECK(mkdir(run, 0755) == 0);
	}
	d.ctl = npd_ctl_server_open(sock, npd_command, &d, err, sizeof(err));
	if (!d.live || !d.slices || !d.ctl) {
		fprintf(stderr, "set-up: %s\n", err);
		failures++;
		return;
	}
	CHECK(stat(sock, &st) == 0 && S_ISSOCK(st.st_mode) &&
	      (st.st_mode & 0777) == 0660);

	/* A lockup: on disk at once, before any slice is written. */
	memset(&ev, 0, sizeof(ev));
	ev.type = NP_EV_LOCKUP;
	ev.lockup.time_ns = np_mono_ns();
	ev.lockup.stuck_ns = 12ULL * 1000000000ULL;
	ev.lockup.cpu = 1;
	strcpy(ev.lockup.comm, "swapper/1");
	ev.lockup.nr_kframes = 2;
	ev.lockup.kframes = kframes;
	ev.lockup.regs.ip = kframes[0];
	npd_ingest(&ev, &d);
	CHECK(d.n.lockups == 1 && d.lockups.nr_pending == 0);
	CHECK(np_lockstore_list(d.cfg.store_dir, lockup_fn, &ls, NULL, NULL,
				err, sizeof(err)) == 0);
	CHECK(ls.nr == 1 && ls.first.cpu == 1 && ls.first.nr_frames == 2 &&
	      ls.first.stuck_ns == ev.lockup.stuck_ns);
	CHECK(npd_slices_written(d.slices) == 0);

	/*
	 * The store refuses (its lockups directory is replaced by a file):
	 * two reports are kept, reported by status, and written in order
	 * once the store works again.
	 */
	{
		char dir[1100], bak[1110], word2[16];
		struct lockups_seen ls2 = { 0 };
		int fd;

		snprintf(dir, sizeof(dir), "%s/lockups", d.cfg.store_dir);
		snprintf(bak, sizeof(bak), "%s.bak", dir);
		CHECK(rename(dir, bak) == 0);
		fd = open(dir, O_CREAT | O_WRONLY, 0600);
		CHECK(fd >= 0);
		close(fd);
		for (uint32_t cpu = 2; cpu <= 3; cpu++) {
			ev.type = NP_EV_LOCKUP;
			ev.lockup.cpu = cpu;
			npd_ingest(&ev, &d);
		}
		CHECK(d.n.lockups == 1 && d.lockups.nr_pending == 2);
		CHECK(command(&d, "NMIPROF/1 status", body, word2, sizeof(word2)) == 0);
		CHECK(np_ctl_get(body, "warning") &&
		      strstr(np_ctl_get(body, "warning"), "not stored yet"));
		npd_lockups_retry(&d, 1);	/* still failing: kept */
		CHECK(d.lockups.nr_pending == 2);
		CHECK(unlink(dir) == 0 && rename(bak, dir) == 0);
		npd_lockups_retry(&d, 1);
		CHECK(d.n.lockups == 3 && d.lockups.nr_pending == 0);
		CHECK(np_lockstore_list(d.cfg.store_dir, lockup_fn, &ls2, NULL, NULL,
					err, sizeof(err)) == 0);
		CHECK(ls2.nr == 3);
	}

	/* Samples in this process, interrupted in test_npd_marker. */
	for (int i = 0; i < NSAMPLES; i++) {
		memset(&ev, 0, sizeof(ev));
		ev.type = NP_EV_SAMPLE;
		ev.sample.time_ns = np_mono_ns();
		ev.sample.ip = uframes[0];
		ev.sample.cpu = (uint32_t)(i & 1);
		ev.sample.pid = ev.sample.tid = (uint32_t)getpid();
		ev.sample.flags = NMIPROF_RF_USER_MODE;
		strcpy(ev.sample.comm, "npd_test");
		ev.sample.nr_uframes = 1;
		ev.sample.uframes = uframes;
		npd_ingest(&ev, &d);
	}
	memset(&ev, 0, sizeof(ev));
	ev.type = NP_EV_LOST;
	ev.lost.lost = 5;
	npd_ingest(&ev, &d);

	/* status */
	CHECK(command(&d, "NMIPROF/1 status", body, word, sizeof(word)) == 0 &&
	      !strcmp(word, "OK"));
	CHECK(np_ctl_get_u64(body, "samples", &v) == 0 && v == NSAMPLES);
	CHECK(np_ctl_get_u64(body, "lost", &v) == 0 && v == 5);
	CHECK(np_ctl_get_u64(body, "lockups", &v) == 0 && v == 3);
	CHECK(np_ctl_get(body, "warning") == NULL ||
	      !strstr(np_ctl_get(body, "warning"), "lockup"));
	CHECK(np_ctl_get(body, "backend") && !strcmp(np_ctl_get(body, "backend"), "none"));
	CHECK(np_ctl_get(body, "store_dir") &&
	      !strcmp(np_ctl_get(body, "store_dir"), d.cfg.store_dir));

	/* top: the summary line, then the marker first. */
	CHECK(command(&d, "NMIPROF/1 top comm=npd_test secs=60", body, word,
		      sizeof(word)) == 0 && !strcmp(word, "OK"));
	CHECK(np_ctl_get_u64(body, "matched", &v) == 0 && v == NSAMPLES);
	CHECK(np_ctl_get_u64(body, "lost", &v) == 0 && v == 5);
	{
		struct np_ctl_top_query q;
		struct np_ctl_top t;

		np_ctl_top_query_init(&q);
		strcpy(q.comm, "npd_test");
		q.cpu = 1;
		CHECK(npd_live_top(d.live, np_mono_ns() / 1000000000ULL, &q, &t) == 0);
		CHECK(t.matched == NSAMPLES / 2 && t.nr == 1);
		CHECK(t.nr && t.e[0].sym && !strcmp(t.e[0].sym, "test_npd_marker"));
		np_ctl_top_free(&t);
	}

	/* Errors. */
	CHECK(command(&d, "NMIPROF/1 frobnicate", NULL, word, sizeof(word)) == 0 &&
	      !strcmp(word, "ERR"));
	CHECK(command(&d, "NMIPROF/1 top n=0", NULL, word, sizeof(word)) == 0 &&
	      !strcmp(word, "ERR"));
	CHECK(command(&d, "NMIPROF/1 top extra", NULL, word, sizeof(word)) == 0 &&
	      !strcmp(word, "ERR"));

	/* The partial slice, flushed as on SIGTERM. */
	CHECK(npd_slices_flush(d.slices, np_real_ns()) == 0);
	CHECK(npd_slices_written(d.slices) == 1);
	a = np_agg_new(NULL);
	np_read_opts_init(&ro);
	CHECK(a && np_store_read(d.cfg.store_dir, &ro, a, &rs, err, sizeof(err)) == 0);
	CHECK(rs.segments == 1 && rs.skipped == 0);
	CHECK(rs.samples == NSAMPLES && rs.lost == 5);
	/* the slice carries the sampling period of the daemon's frequency */
	CHECK(rs.period_ns == 1000000000ULL / d.cfg.freq_hz && !rs.period_mixed);
	np_agg_free(a);

	npd_ctl_server_close(d.ctl);
	CHECK(stat(sock, &st) == -1);
	npd_slices_close(d.slices);
	npd_live_free(d.live);
	npd_symcache_free(d.symc);
	np_symbolizer_free(d.sym);
	nftw(tmp, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	free(body);
}

static const struct np_test_case cases[] = {
	NP_CASE(test_pipeline),
	{ 0 }
};

int main(int argc, char **argv)
{
	return np_test_main(argc, argv, cases);
}
