// SPDX-License-Identifier: GPL-2.0
/*
 * Control protocol (lib/ctl/np_ctl*.c): escaping, line parsing, request and
 * reply codecs, and the client against a scripted peer over a socketpair
 * (ERR replies, truncated replies, garbage and a peer that never answers).
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include "np_ctl.h"

#include "check.h"

static struct np_ctl_line line;

static int parse(const char *s, char *err, size_t errlen)
{
	return np_ctl_line_parse(&line, s, strlen(s), err, errlen);
}

static void test_escape_roundtrip(void)
{
	static const char nasty[] = "a b=c%d\te\x01\x7f\xc3\xa9/[k]";
	struct np_buf b;
	char err[128];

	np_buf_init(&b);
	np_ctl_put_word(&b, NP_CTL_PROTO);
	np_ctl_put_word(&b, "x");
	np_ctl_put_str(&b, "v", nasty);
	np_ctl_put_str(&b, "empty", "");
	np_ctl_put_i64(&b, "neg", -42);
	np_ctl_end_line(&b);
	CHECK(!b.oom);
	/* The encoded line has exactly one newline, at its end. */
	CHECK(strchr(np_buf_str(&b), '\n') == np_buf_str(&b) + b.len - 1);
	CHECK(!strchr(np_buf_str(&b), '\t'));
	CHECK(parse(np_buf_str(&b), err, sizeof(err)) == 0);
	CHECK(line.nwords == 2 && !strcmp(line.words[1], "x"));
	CHECK(np_ctl_get(&line, "v") && !strcmp(np_ctl_get(&line, "v"), nasty));
	CHECK(np_ctl_get(&line, "empty") && !*np_ctl_get(&line, "empty"));
	int64_t neg;

	CHECK(np_ctl_get_i64(&line, "neg", &neg) == 0 && neg == -42);
	uint64_t u;

	CHECK(np_ctl_get_u64(&line, "neg", &u) == -2);
	CHECK(np_ctl_get_u64(&line, "absent", &u) == -1);
	np_buf_free(&b);
}

static void test_malformed_lines(void)
{
	static const char *const bad[] = {
		"NMIPROF/1 top n=%G1",		/* bad hex */
		"NMIPROF/1 top n=%4",		/* short escape */
		"NMIPROF/1 top n=1 bare",	/* word after a field */
		"NMIPROF/1 top =5",		/* empty key */
		"NMIPROF/1 top\tn=1",		/* control byte */
		"a b c d e",			/* too many words */
	};
	char err[128], big[NP_CTL_MAX_LINE + 16];
	unsigned int i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err[0] = '\0';
		CHECK(parse(bad[i], err, sizeof(err)) == -1);
		CHECK(err[0] != '\0');
	}
	/* Over-long: the limit counts the newline. */
	memset(big, 'a', sizeof(big));
	CHECK(np_ctl_line_parse(&line, big, NP_CTL_MAX_LINE, err, sizeof(err)) == -1);
	CHECK(np_ctl_line_parse(&line, big, NP_CTL_MAX_LINE - 1, err, sizeof(err)) == 0);
	/* Too many fields. */
	{
		struct np_buf b;

		np_buf_init(&b);
		for (i = 0; i < NP_CTL_MAX_FIELDS + 1; i++)
			np_ctl_put_u64(&b, "k", i);
		CHECK(np_ctl_line_parse(&line, np_buf_str(&b), b.len, err, sizeof(err)) == -1);
		np_buf_free(&b);
	}
	/* A trailing CR (socat/telnet) and repeated spaces are fine. */
	CHECK(parse("NMIPROF/1  status \r\n", err, sizeof(err)) == 0);
	CHECK(line.nwords == 2 && !strcmp(line.words[1], "status"));
	CHECK(parse("", err, sizeof(err)) == 0 && line.nwords == 0);
}

static void test_top_request(void)
{
	struct np_ctl_top_query q, r;
	struct np_buf b;
	char err[128];

	np_ctl_top_query_init(&q);
	q.n = 7;
	q.secs = 30;
	q.pid = 1234;
	q.cpu = 1;
	strcpy(q.comm, "my prog");
	q.sort = NP_CTL_SORT_COMM;
	np_buf_init(&b);
	np_ctl_format_top_request(&b, &q);
	CHECK(parse(np_buf_str(&b), err, sizeof(err)) == 0);
	CHECK(np_ctl_parse_top_request(&line, &r, err, sizeof(err)) == 0);
	CHECK(r.n == 7 && r.secs == 30 && r.pid == 1234 && r.cpu == 1);
	CHECK(!strcmp(r.comm, "my prog") && r.sort == NP_CTL_SORT_COMM);
	np_buf_free(&b);

	/* Defaults. */
	CHECK(parse("NMIPROF/1 top", err, sizeof(err)) == 0);
	CHECK(np_ctl_parse_top_request(&line, &r, err, sizeof(err)) == 0);
	CHECK(r.n == 20 && r.secs == 10 && r.pid == -1 && r.cpu == -1 &&
	      !r.comm[0] && r.sort == NP_CTL_SORT_SYM);

	static const char *const bad[] = {
		"NMIPROF/1 top n=0", "NMIPROF/1 top n=1001",
		"NMIPROF/1 top secs=abc", "NMIPROF/1 top secs=",
		"NMIPROF/1 top pid=-5", "NMIPROF/1 top cpu=99999999999999999999",
		"NMIPROF/1 top sort=dso", "NMIPROF/1 top comm=0123456789abcdef",
	};
	for (unsigned int i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err[0] = '\0';
		CHECK(parse(bad[i], err, sizeof(err)) == 0);
		CHECK(np_ctl_parse_top_request(&line, &r, err, sizeof(err)) == -1);
		if (!err[0])
			fprintf(stderr, "no error text for %s\n", bad[i]);
		CHECK(err[0]);
	}
}

static void fill_status(struct np_ctl_status *st)
{
	memset(st, 0, sizeof(*st));
	strcpy(st->version, "0.1.0");
	st->proto = NP_CTL_PROTO_VERSION;
	st->pid = 4321;
	st->uptime_s = 99;
	strcpy(st->backend, "libperf");
	strcpy(st->source, "cpu-clock");
	st->nr_cpus = 2;
	st->freq_hz = 1000;
	st->samples = 123456789012ULL;
	st->lost = 3;
	st->lockups = 1;
	st->nested_nmi_safe = -1;
	st->cost_avg_ns = 1500;
	strcpy(st->store_dir, "/var/lib/nmiprof store");
	st->store_bytes = 1 << 20;
	st->slice_s = 60;
	st->slices = 5;
	st->live_s = 300;
	st->clients = 1;
	strcpy(st->warning, "kallsyms addresses are hidden");
	st->store_errno = 28;
	strcpy(st->store_error, "/var/lib/nmiprof store/profile/index: No space left on device");
	st->store_since_ns = 1764900000000000000ULL;
	st->store_pending = 1015;
	st->store_pending_bytes = 300000;
	st->store_pending_max = 1 << 20;
	st->store_dropped = 3164;
	st->store_pruned_segs = 3;
	st->store_pruned_bytes = 6864;
}

/* Runs fn as the peer on the other end of a socketpair; returns the client. */
static struct np_ctl_client *peer(void (*fn)(int fd), pid_t *pidp)
{
	int sv[2];
	pid_t pid;

	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv))
		abort();
	pid = fork();
	if (pid == 0) {
		close(sv[0]);
		fn(sv[1]);
		_exit(0);
	}
	close(sv[1]);
	*pidp = pid;
	return np_ctl_client_from_fd(sv[0]);
}

static void reap(pid_t pid)
{
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
}

/* Read one request line from fd into line; 0 on success. */
static int peer_read(int fd)
{
	char buf[NP_CTL_MAX_LINE];
	size_t len = 0;
	char err[64];

	while (len < sizeof(buf)) {
		ssize_t n = read(fd, buf + len, 1);

		if (n <= 0)
			return -1;
		if (buf[len++] == '\n')
			return np_ctl_line_parse(&line, buf, len, err, sizeof(err));
	}
	return -1;
}

static void peer_write(int fd, const char *s, size_t len)
{
	while (len) {
		ssize_t n = write(fd, s, len);

		if (n <= 0)
			_exit(1);
		s += n;
		len -= (size_t)n;
	}
}

/* Answers status then top with canned replies built by the codecs. */
static void peer_good(int fd)
{
	struct np_ctl_top_entry e[3] = {
		{ .samples = 50, .pid = -1, .kernel = 1,
		  .dso = "[kernel.kallsyms]", .sym = "do_syscall_64" },
		{ .samples = 20, .pid = -1, .dso = "/usr/bin/x y" },
		{ .samples = 5, .pid = -1, .dso = "/lib/libc.so.6", .sym = "a=b%c" },
	};
	struct np_ctl_top t = { .secs = 10, .matched = 75, .samples = 90,
				.lost = 2, .nr = 3, .e = e };
	struct np_ctl_status st;
	struct np_ctl_top_query q;
	struct np_buf b;
	char err[128];

	np_buf_init(&b);
	if (peer_read(fd) || line.nwords < 2 || strcmp(line.words[1], "status"))
		_exit(2);
	fill_status(&st);
	np_ctl_format_status_reply(&b, &st);
	peer_write(fd, np_buf_str(&b), b.len);
	b.len = 0;
	if (peer_read(fd) || line.nwords < 2 || strcmp(line.words[1], "top") ||
	    np_ctl_parse_top_request(&line, &q, err, sizeof(err)) ||
	    q.n != 3 || q.pid != 77)
		_exit(3);
	np_ctl_format_top_reply(&b, &t);
	/* Send it in two pieces: the client must reassemble lines. */
	peer_write(fd, np_buf_str(&b), b.len / 2);
	usleep(20000);
	peer_write(fd, np_buf_str(&b) + b.len / 2, b.len - b.len / 2);
	b.len = 0;
	/* Then an error for the third request. */
	if (peer_read(fd))
		_exit(4);
	np_ctl_put_error(&b, "unknown command '%s'", "bogus");
	peer_write(fd, np_buf_str(&b), b.len);
	np_buf_free(&b);
	/* Wait for the client to hang up. */
	char c;

	while (read(fd, &c, 1) > 0)
		;
}

static void test_client_good(void)
{
	struct np_ctl_status st, want;
	struct np_ctl_top_query q;
	struct np_ctl_top t;
	char err[256];
	pid_t pid;
	struct np_ctl_client *c = peer(peer_good, &pid);
	int status;

	CHECK(np_ctl_status(c, &st, err, sizeof(err)) == 0);
	fill_status(&want);
	CHECK(!strcmp(st.version, want.version) && st.pid == want.pid);
	CHECK(!strcmp(st.backend, "libperf") && !strcmp(st.source, "cpu-clock"));
	CHECK(st.samples == want.samples && st.lost == 3 && st.lockups == 1);
	CHECK(st.nested_nmi_safe == -1 && st.cost_avg_ns == 1500);
	CHECK(!strcmp(st.store_dir, want.store_dir) && st.store_bytes == 1 << 20);
	CHECK(st.slice_s == 60 && st.slices == 5 && st.live_s == 300);
	CHECK(!strcmp(st.warning, want.warning));
	CHECK(st.store_errno == 28 && !strcmp(st.store_error, want.store_error));
	CHECK(st.store_since_ns == want.store_since_ns && st.store_pending == 1015);
	CHECK(st.store_pending_bytes == 300000 && st.store_pending_max == 1 << 20);
	CHECK(st.store_dropped == 3164 && st.store_pruned_segs == 3 &&
	      st.store_pruned_bytes == 6864);

	np_ctl_top_query_init(&q);
	q.n = 3;
	q.pid = 77;
	CHECK(np_ctl_top(c, &q, &t, err, sizeof(err)) == 0);
	CHECK(t.secs == 10 && t.matched == 75 && t.samples == 90 && t.lost == 2);
	CHECK(t.nr == 3);
	if (t.nr == 3) {
		CHECK(t.e[0].samples == 50 && t.e[0].kernel == 1);
		CHECK(!strcmp(t.e[0].dso, "[kernel.kallsyms]"));
		CHECK(!strcmp(t.e[0].sym, "do_syscall_64"));
		CHECK(t.e[1].sym == NULL && !strcmp(t.e[1].dso, "/usr/bin/x y"));
		CHECK(!strcmp(t.e[2].sym, "a=b%c") && t.e[2].kernel == 0);
	}
	np_ctl_top_free(&t);

	static const char req[] = NP_CTL_PROTO " bogus\n";

	err[0] = '\0';
	CHECK(np_ctl_request(c, req, sizeof(req) - 1, err, sizeof(err)) == -1);
	CHECK(strstr(err, "unknown command 'bogus'") != NULL);
	np_ctl_close(c);
	waitpid(pid, &status, 0);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

static void peer_truncated(int fd)
{
	static const char r[] = "NMIPROF/1 OK 3\nsecs=1 matched=1 samples=1 lost=0\n";

	if (peer_read(fd))
		_exit(1);
	peer_write(fd, r, sizeof(r) - 1);
}

static void peer_garbage(int fd)
{
	static const char r[] = "HTTP/1.1 200 OK\n";

	if (peer_read(fd))
		_exit(1);
	peer_write(fd, r, sizeof(r) - 1);
	pause();
}

static void peer_silent(int fd)
{
	pause();
}

static void peer_huge(int fd)
{
	static char junk[3 * NP_CTL_MAX_LINE];

	if (peer_read(fd))
		_exit(1);
	memset(junk, 'x', sizeof(junk));
	peer_write(fd, junk, sizeof(junk));
	pause();
}

static void test_client_bad_peers(void)
{
	struct np_ctl_top_query q;
	struct np_ctl_status st;
	struct np_ctl_top t;
	char err[256];
	pid_t pid;
	struct np_ctl_client *c;

	np_ctl_top_query_init(&q);

	/* Reply promises 3 lines, sends 1, hangs up. */
	c = peer(peer_truncated, &pid);
	err[0] = '\0';
	CHECK(np_ctl_top(c, &q, &t, err, sizeof(err)) == -1);
	CHECK(strstr(err, "closed") != NULL);
	CHECK(t.e == NULL && t.nr == 0);
	np_ctl_close(c);
	reap(pid);

	c = peer(peer_garbage, &pid);
	err[0] = '\0';
	CHECK(np_ctl_status(c, &st, err, sizeof(err)) == -1);
	CHECK(strstr(err, "not an nmiprofd reply") != NULL);
	np_ctl_close(c);
	reap(pid);

	c = peer(peer_silent, &pid);
	np_ctl_set_timeout(c, 200);
	err[0] = '\0';
	CHECK(np_ctl_status(c, &st, err, sizeof(err)) == -1);
	CHECK(strstr(err, "did not answer") != NULL);
	np_ctl_close(c);
	reap(pid);

	c = peer(peer_huge, &pid);
	err[0] = '\0';
	CHECK(np_ctl_status(c, &st, err, sizeof(err)) == -1);
	CHECK(strstr(err, "longer than") != NULL);
	np_ctl_close(c);
	reap(pid);

	/* Nobody listening. */
	err[0] = '\0';
	CHECK(np_ctl_open("/nonexistent/nmiprofd.sock", err, sizeof(err)) == NULL);
	CHECK(strstr(err, "is nmiprofd running?") != NULL);
}

static const struct np_test_case cases[] = {
	NP_CASE(test_escape_roundtrip),
	NP_CASE(test_malformed_lines),
	NP_CASE(test_top_request),
	NP_CASE(test_client_good),
	NP_CASE(test_client_bad_peers),
	{ 0 }
};

int main(int argc, char **argv)
{
	signal(SIGPIPE, SIG_IGN);
	return np_test_main(argc, argv, cases);
}
