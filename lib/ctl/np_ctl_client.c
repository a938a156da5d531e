// SPDX-License-Identifier: GPL-2.0
/*
 * nmiprofd control protocol, client: one connection, requests sent and
 * replies read within a timeout (the wire format is documented in
 * np_ctl.h).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/un.h>

#include "np_ctl.h"
#include "np_ctl_impl.h"
#include "np_clock.h"

/* ---- Client -------------------------------------------------------- */

struct np_ctl_client {
	int fd;
	int timeout_ms;
	size_t rlen;		/* bytes buffered in rbuf */
	char rbuf[NP_CTL_MAX_LINE];
	struct np_ctl_line line;	/* scratch for replies */
};

struct np_ctl_client *np_ctl_client_from_fd(int fd)
{
	struct np_ctl_client *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->fd = fd;
	c->timeout_ms = NP_CTL_TIMEOUT_MS;
	return c;
}

struct np_ctl_client *np_ctl_open(const char *path, char *err, size_t errlen)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct np_ctl_client *c;
	int fd;

	if (!path)
		path = NP_CTL_DEFAULT_SOCKET;
	if (strlen(path) >= sizeof(sa.sun_path)) {
		np_ctl_seterr(err, errlen, "socket path too long: %s", path);
		return NULL;
	}
	strcpy(sa.sun_path, path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		np_ctl_seterr(err, errlen, "socket: %s", strerror(errno));
		return NULL;
	}
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		np_ctl_seterr(err, errlen, "cannot reach nmiprofd at %s: %s%s",
			      path, strerror(errno),
			      errno == ENOENT || errno == ECONNREFUSED ?
			      " (is nmiprofd running?)" : "");
		close(fd);
		return NULL;
	}
	c = np_ctl_client_from_fd(fd);
	if (!c) {
		np_ctl_seterr(err, errlen, "out of memory");
		close(fd);
	}
	return c;
}

void np_ctl_close(struct np_ctl_client *c)
{
	if (!c)
		return;
	close(c->fd);
	free(c);
}

void np_ctl_set_timeout(struct np_ctl_client *c, int timeout_ms)
{
	c->timeout_ms = timeout_ms;
}

/* Wait for fd to become ready for events until the deadline. */
static int np_ctl_wait(struct np_ctl_client *c, short events, int64_t deadline,
		       char *err, size_t errlen)
{
	struct pollfd pfd = { .fd = c->fd, .events = events };

	for (;;) {
		int64_t left = deadline - (int64_t)np_mono_ms();
		int rc;

		if (left <= 0) {
			np_ctl_seterr(err, errlen, "nmiprofd did not answer within %d ms",
				      c->timeout_ms);
			return -1;
		}
		rc = poll(&pfd, 1, (int)left);
		if (rc > 0)
			return 0;
		if (rc < 0 && errno != EINTR) {
			np_ctl_seterr(err, errlen, "poll: %s", strerror(errno));
			return -1;
		}
	}
}

static int np_ctl_send(struct np_ctl_client *c, const char *buf, size_t len,
		       int64_t deadline, char *err, size_t errlen)
{
	while (len) {
		ssize_t n;

		if (np_ctl_wait(c, POLLOUT, deadline, err, errlen))
			return -1;
		n = send(c->fd, buf, len, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n < 0) {
			if (errno == EINTR || errno == EAGAIN)
				continue;
			np_ctl_seterr(err, errlen, "send to nmiprofd: %s",
				      strerror(errno));
			return -1;
		}
		buf += n;
		len -= (size_t)n;
	}
	return 0;
}

/* Read one line into l, waiting at most until deadline. */
static int np_ctl_recv_line(struct np_ctl_client *c, struct np_ctl_line *l,
			    int64_t deadline, char *err, size_t errlen)
{
	for (;;) {
		char *nl = memchr(c->rbuf, '\n', c->rlen);
		ssize_t n;

		if (nl) {
			size_t len = (size_t)(nl - c->rbuf) + 1;
			int rc = np_ctl_line_parse(l, c->rbuf, len, err, errlen);

			memmove(c->rbuf, c->rbuf + len, c->rlen - len);
			c->rlen -= len;
			return rc;
		}
		if (c->rlen == sizeof(c->rbuf)) {
			np_ctl_seterr(err, errlen, "reply line longer than %d bytes",
				      NP_CTL_MAX_LINE);
			return -1;
		}
		if (np_ctl_wait(c, POLLIN, deadline, err, errlen))
			return -1;
		n = recv(c->fd, c->rbuf + c->rlen, sizeof(c->rbuf) - c->rlen,
			 MSG_DONTWAIT);
		if (n == 0) {
			np_ctl_seterr(err, errlen, "nmiprofd closed the connection");
			return -1;
		}
		if (n < 0) {
			if (errno == EINTR || errno == EAGAIN)
				continue;
			np_ctl_seterr(err, errlen, "recv from nmiprofd: %s",
				      strerror(errno));
			return -1;
		}
		c->rlen += (size_t)n;
	}
}

int np_ctl_read_line(struct np_ctl_client *c, struct np_ctl_line *l,
		     char *err, size_t errlen)
{
	return np_ctl_recv_line(c, l, (int64_t)np_mono_ms() + c->timeout_ms,
				err, errlen);
}

int np_ctl_request(struct np_ctl_client *c, const char *req, size_t len,
		   char *err, size_t errlen)
{
	int64_t deadline = (int64_t)np_mono_ms() + c->timeout_ms;
	struct np_ctl_line *l = &c->line;
	uint64_t n;
	char *end;

	if (np_ctl_send(c, req, len, deadline, err, errlen) ||
	    np_ctl_recv_line(c, l, deadline, err, errlen))
		return -1;
	if (l->nwords < 2 || strcmp(l->words[0], NP_CTL_PROTO)) {
		np_ctl_seterr(err, errlen, "not an nmiprofd reply (protocol %s expected)",
			      NP_CTL_PROTO);
		return -1;
	}
	if (!strcmp(l->words[1], "ERR")) {
		const char *msg = np_ctl_get(l, "msg");

		np_ctl_seterr(err, errlen, "nmiprofd: %s", msg ? msg : "error");
		return -1;
	}
	if (strcmp(l->words[1], "OK") || l->nwords != 3) {
		np_ctl_seterr(err, errlen, "malformed reply header");
		return -1;
	}
	errno = 0;
	n = strtoull(l->words[2], &end, 10);
	if (errno || *end || l->words[2][0] == '-' || n > NP_CTL_MAX_REPLY_LINES) {
		np_ctl_seterr(err, errlen, "malformed reply line count");
		return -1;
	}
	return (int)n;
}

/* Read and drop n lines so the connection stays usable after an error. */
static void np_ctl_skip(struct np_ctl_client *c, int n)
{
	char err[8];

	while (n-- > 0)
		if (np_ctl_read_line(c, &c->line, err, sizeof(err)))
			return;
}

int np_ctl_status(struct np_ctl_client *c, struct np_ctl_status *st,
		  char *err, size_t errlen)
{
	static const char req[] = NP_CTL_PROTO " status\n";
	int n = np_ctl_request(c, req, sizeof(req) - 1, err, errlen);

	if (n < 0)
		return -1;
	if (n < 1) {
		np_ctl_seterr(err, errlen, "empty status reply");
		return -1;
	}
	if (np_ctl_read_line(c, &c->line, err, errlen))
		return -1;
	np_ctl_skip(c, n - 1);
	if (np_ctl_parse_status(&c->line, st)) {
		np_ctl_seterr(err, errlen, "malformed status reply");
		return -1;
	}
	return 0;
}

/* np_ctl_request of a formatted request, which it frees. */
static int np_ctl_request_buf(struct np_ctl_client *c, struct np_buf *b,
			      char *err, size_t errlen)
{
	int n = -1;

	if (b->oom)
		np_ctl_seterr(err, errlen, "out of memory");
	else
		n = np_ctl_request(c, np_buf_str(b), b->len, err, errlen);
	np_buf_free(b);
	return n;
}

int np_ctl_top(struct np_ctl_client *c, const struct np_ctl_top_query *q,
	       struct np_ctl_top *t, char *err, size_t errlen)
{
	struct np_buf b;
	int n, i;

	memset(t, 0, sizeof(*t));
	np_buf_init(&b);
	np_ctl_format_top_request(&b, q);
	n = np_ctl_request_buf(c, &b, err, errlen);
	if (n < 0)
		return -1;
	if (n < 1) {
		np_ctl_seterr(err, errlen, "empty top reply");
		return -1;
	}
	if (np_ctl_read_line(c, &c->line, err, errlen))
		return -1;
	if (np_ctl_parse_top_summary(&c->line, t)) {
		np_ctl_seterr(err, errlen, "malformed top summary");
		np_ctl_skip(c, n - 1);
		return -1;
	}
	t->e = calloc((size_t)n, sizeof(*t->e));
	if (!t->e) {
		np_ctl_seterr(err, errlen, "out of memory");
		np_ctl_skip(c, n - 1);
		return -1;
	}
	for (i = 1; i < n; i++) {
		if (np_ctl_read_line(c, &c->line, err, errlen))
			goto fail;
		if (np_ctl_parse_top_entry(&c->line, &t->e[t->nr])) {
			np_ctl_seterr(err, errlen, "malformed top entry");
			np_ctl_skip(c, n - 1 - i);
			goto fail;
		}
		t->nr++;
	}
	return 0;
fail:
	np_ctl_top_free(t);
	return -1;
}

int np_ctl_stacks(struct np_ctl_client *c, const struct np_ctl_stacks_query *q,
		  struct np_ctl_stacks *t, char *err, size_t errlen)
{
	struct np_buf b;
	uint64_t secs, nf, ns;
	int n, i;

	memset(t, 0, sizeof(*t));
	np_buf_init(&b);
	np_ctl_format_stacks_request(&b, q);
	n = np_ctl_request_buf(c, &b, err, errlen);
	if (n < 0)
		return strstr(err, "unknown command") ? -2 : -1;
	if (n < 1) {
		np_ctl_seterr(err, errlen, "empty stacks reply");
		return -1;
	}
	if (np_ctl_read_line(c, &c->line, err, errlen))
		return -1;
	if (np_ctl_get_u64(&c->line, "secs", &secs) ||
	    np_ctl_get_u64(&c->line, "matched", &t->matched) ||
	    np_ctl_get_u64(&c->line, "samples", &t->samples) ||
	    np_ctl_get_u64(&c->line, "lost", &t->lost) ||
	    np_ctl_get_u64(&c->line, "other", &t->other) ||
	    np_ctl_get_u64(&c->line, "other_stacks", &t->other_stacks) ||
	    np_ctl_get_u64(&c->line, "frames", &nf) ||
	    np_ctl_get_u64(&c->line, "stacks", &ns) ||
	    1 + nf + ns != (uint64_t)n) {
		np_ctl_seterr(err, errlen, "malformed stacks summary");
		np_ctl_skip(c, n - 1);
		return -1;
	}
	t->secs = (uint32_t)secs;
	/* Older daemons do not send these: other cannot be split then. */
	t->other_kinds = !np_ctl_get_u64(&c->line, "other_kernel", &t->other_kernel) &&
			 !np_ctl_get_u64(&c->line, "other_user", &t->other_user);
	t->f = calloc(nf ? nf : 1, sizeof(*t->f));
	t->s = calloc(ns ? ns : 1, sizeof(*t->s));
	if (!t->f || !t->s) {
		np_ctl_seterr(err, errlen, "out of memory");
		np_ctl_skip(c, n - 1);
		goto fail;
	}
	for (i = 1; i < n; i++) {
		int bad;

		if (np_ctl_read_line(c, &c->line, err, errlen))
			goto fail;
		if ((uint64_t)i <= nf) {
			bad = np_ctl_parse_frame(&c->line, &t->f[t->nr_frames]);
			if (!bad)
				t->nr_frames++;
		} else {
			/* counted even when bad: its frames array is freed */
			bad = np_ctl_parse_stack(&c->line, &t->s[t->nr++],
						 t->nr_frames);
		}
		if (bad) {
			np_ctl_seterr(err, errlen, "malformed stacks reply line %d", i + 1);
			np_ctl_skip(c, n - 1 - i);
			goto fail;
		}
	}
	return 0;
fail:
	np_ctl_stacks_free(t);
	return -1;
}
