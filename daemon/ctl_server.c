// SPDX-License-Identifier: GPL-2.0
/*
 * Control socket transport (see ctl_server.h).
 *
 * Everything is non-blocking and driven from the daemon's main loop with
 * a zero or short poll timeout, so a client can delay the drain loop by
 * at most the time to format one reply.  A client that stops reading
 * (full socket buffer) or stops half-way through a request is dropped
 * after NP_CTL_TIMEOUT_MS without progress.
 */
#include <errno.h>
#include <grp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include "ctl_server.h"
#include "np_log.h"
#include "np_clock.h"

/* Stop reading a client's requests while this much reply is unsent. */
#define NPD_CTL_OUT_HIGH	(64 * 1024)

struct npd_ctl_client {
	int fd;
	int closing;		/* drop once the output is flushed */
	int64_t last_ms;	/* last progress in either direction */
	size_t inlen;
	char in[NP_CTL_MAX_LINE];
	struct np_buf out;
	size_t outoff;		/* bytes of out already sent */
};

struct npd_ctl_server {
	int fd;
	char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
	npd_ctl_handler fn;
	void *arg;
	unsigned int nr;
	struct npd_ctl_client *c[NPD_CTL_MAX_CLIENTS];
	struct pollfd pfd[NPD_CTL_MAX_CLIENTS + 1];
	struct np_ctl_line req;	/* scratch: 4 KiB, kept off the stack */
};

/*
 * The default socket's directory (/run/nmiprof) is ours to create, mode
 * 0755 like /run/<daemon>.  A directory named by -S or the config is the
 * admin's: a missing one is a typo to report, not a tree to make.
 */
static int npd_socket_dir(const char *path, char *err, size_t errlen)
{
	char dir[sizeof(((struct sockaddr_un *)0)->sun_path)];
	char *slash;
	struct stat sb;

	snprintf(dir, sizeof(dir), "%s", path);
	slash = strrchr(dir, '/');
	if (!slash || slash == dir)
		return 0;
	*slash = '\0';
	if (!strcmp(path, NP_CTL_DEFAULT_SOCKET)) {
		if (mkdir(dir, 0755) && errno != EEXIST) {
			snprintf(err, errlen, "cannot create %s: %s", dir,
				 strerror(errno));
			return -1;
		}
		return 0;
	}
	if (stat(dir, &sb))
		snprintf(err, errlen, "socket directory %s: %s", dir, strerror(errno));
	else if (!S_ISDIR(sb.st_mode))
		snprintf(err, errlen, "socket directory %s: %s", dir, strerror(ENOTDIR));
	else
		return 0;
	return -1;
}

/* Remove a stale socket file; refuse if a daemon still answers there. */
static int npd_clear_stale(const struct sockaddr_un *sa, char *err, size_t errlen)
{
	struct stat st;
	int fd, rc;

	if (lstat(sa->sun_path, &st)) {
		if (errno == ENOENT)
			return 0;
		snprintf(err, errlen, "%s: %s", sa->sun_path, strerror(errno));
		return -1;
	}
	if (!S_ISSOCK(st.st_mode)) {
		snprintf(err, errlen, "%s exists and is not a socket", sa->sun_path);
		return -1;
	}
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		snprintf(err, errlen, "socket: %s", strerror(errno));
		return -1;
	}
	rc = connect(fd, (const struct sockaddr *)sa, sizeof(*sa));
	close(fd);
	if (rc == 0) {
		snprintf(err, errlen, "another nmiprofd is listening on %s",
			 sa->sun_path);
		return -1;
	}
	if (unlink(sa->sun_path) && errno != ENOENT) {
		snprintf(err, errlen, "cannot remove stale %s: %s", sa->sun_path,
			 strerror(errno));
		return -1;
	}
	np_info("removed stale socket %s", sa->sun_path);
	return 0;
}

/* Group "nmiprof" may use the socket; without it only root may. */
static void npd_socket_owner(const char *path)
{
	struct group *gr = getgrnam("nmiprof");
	gid_t gid = gr ? gr->gr_gid : 0;

	if (!gr && geteuid() != 0)
		return;	/* an unprivileged test daemon: keep our own group */
	if (chown(path, (uid_t)-1, gid))
		np_warn("cannot give %s to group %s: %s", path,
			gr ? "nmiprof" : "root", strerror(errno));
	else if (!gr)
		np_info("group nmiprof does not exist: %s is root-only", path);
}

struct npd_ctl_server *npd_ctl_server_open(const char *path,
					   npd_ctl_handler fn, void *arg,
					   char *err, size_t errlen)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct npd_ctl_server *s;
	mode_t old_mask;
	int rc;

	if (strlen(path) >= sizeof(sa.sun_path)) {
		snprintf(err, errlen, "socket path longer than %zu bytes: %s",
			 sizeof(sa.sun_path) - 1, path);
		return NULL;
	}
	strcpy(sa.sun_path, path);
	if (npd_socket_dir(path, err, errlen) ||
	    npd_clear_stale(&sa, err, errlen))
		return NULL;
	s = calloc(1, sizeof(*s));
	if (!s) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	strcpy(s->path, path);
	s->fn = fn;
	s->arg = arg;
	s->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (s->fd < 0) {
		snprintf(err, errlen, "socket: %s", strerror(errno));
		free(s);
		return NULL;
	}
	/* Created 0660 from the start: no window where others may connect. */
	old_mask = umask(0117);
	rc = bind(s->fd, (struct sockaddr *)&sa, sizeof(sa));
	umask(old_mask);
	if (rc || listen(s->fd, 16)) {
		snprintf(err, errlen, "cannot listen on %s: %s", path, strerror(errno));
		close(s->fd);
		free(s);
		return NULL;
	}
	npd_socket_owner(path);
	return s;
}

unsigned int npd_ctl_server_clients(const struct npd_ctl_server *s)
{
	return s->nr;
}

static void npd_client_free(struct npd_ctl_client *c)
{
	close(c->fd);
	np_buf_free(&c->out);
	free(c);
}

static void npd_ctl_accept(struct npd_ctl_server *s)
{
	for (;;) {
		int fd = accept4(s->fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		struct npd_ctl_client *c;

		if (fd < 0) {
			if (errno != EAGAIN && errno != EINTR && errno != ECONNABORTED)
				np_warn("accept on %s: %s", s->path, strerror(errno));
			return;
		}
		if (s->nr == NPD_CTL_MAX_CLIENTS || !(c = calloc(1, sizeof(*c)))) {
			static const char busy[] = NP_CTL_PROTO " ERR msg=too%20many%20clients\n";

			/* Best effort: the socket buffer of a new fd has room. */
			if (send(fd, busy, sizeof(busy) - 1, MSG_NOSIGNAL) < 0)
				np_dbg("rejecting a client: %s", strerror(errno));
			close(fd);
			continue;
		}
		c->fd = fd;
		c->last_ms = (int64_t)np_mono_ms();
		np_buf_init(&c->out);
		s->c[s->nr++] = c;
		np_dbg("control client connected (%u now)", s->nr);
	}
}

/* Answer one complete request line. */
static void npd_ctl_request(struct npd_ctl_server *s, struct npd_ctl_client *c,
			    const char *line, size_t len)
{
	char err[160];

	if (np_ctl_line_parse(&s->req, line, len, err, sizeof(err))) {
		np_ctl_put_error(&c->out, "malformed request: %s", err);
		return;
	}
	if (s->req.nwords == 0 && s->req.nfields == 0)
		return;		/* empty line: interactive users press enter */
	if (s->req.nwords < 2 || strncmp(s->req.words[0], "NMIPROF/", 8)) {
		np_ctl_put_error(&c->out, "expected '%s <command> [key=value ...]'",
				 NP_CTL_PROTO);
		return;
	}
	if (strcmp(s->req.words[0], NP_CTL_PROTO)) {
		np_ctl_put_error(&c->out, "unsupported protocol %s (this is %s)",
				 s->req.words[0], NP_CTL_PROTO);
		return;
	}
	s->fn(&s->req, &c->out, s->arg);
}

/* Read what is there and answer every complete line.  -1: drop client. */
static int npd_client_read(struct npd_ctl_server *s, struct npd_ctl_client *c)
{
	for (;;) {
		ssize_t n;
		char *nl;
		size_t start = 0;

		if (c->out.len - c->outoff > NPD_CTL_OUT_HIGH || c->closing)
			return 0;	/* let it read its replies first */
		n = recv(c->fd, c->in + c->inlen, sizeof(c->in) - c->inlen, 0);
		if (n == 0) {
			/* Half-close after the last request: answer, then drop. */
			c->closing = 1;
			return 0;
		}
		if (n < 0)
			return errno == EAGAIN || errno == EINTR ? 0 : -1;
		c->inlen += (size_t)n;
		c->last_ms = (int64_t)np_mono_ms();
		while ((nl = memchr(c->in + start, '\n', c->inlen - start))) {
			size_t len = (size_t)(nl - (c->in + start)) + 1;

			npd_ctl_request(s, c, c->in + start, len);
			start += len;
		}
		memmove(c->in, c->in + start, c->inlen - start);
		c->inlen -= start;
		if (c->inlen == sizeof(c->in)) {
			np_ctl_put_error(&c->out, "request longer than %d bytes",
					 NP_CTL_MAX_LINE - 1);
			c->closing = 1;
		}
		if (c->out.oom)
			return -1;
	}
}

/* Send what the socket takes.  -1: drop client. */
static int npd_client_write(struct npd_ctl_client *c)
{
	while (c->outoff < c->out.len) {
		ssize_t n = send(c->fd, np_buf_str(&c->out) + c->outoff,
				 c->out.len - c->outoff, MSG_NOSIGNAL | MSG_DONTWAIT);

		if (n < 0)
			return errno == EAGAIN || errno == EINTR ? 0 : -1;
		c->outoff += (size_t)n;
		c->last_ms = (int64_t)np_mono_ms();
	}
	c->out.len = c->outoff = 0;
	return c->closing ? -1 : 0;
}

void npd_ctl_server_service(struct npd_ctl_server *s, int timeout_ms)
{
	unsigned int i, n = 0, kept = 0;
	int64_t now;

	s->pfd[n++] = (struct pollfd){ .fd = s->fd, .events = POLLIN };
	for (i = 0; i < s->nr; i++) {
		struct npd_ctl_client *c = s->c[i];
		short ev = 0;

		if (!c->closing && c->out.len - c->outoff <= NPD_CTL_OUT_HIGH)
			ev |= POLLIN;
		if (c->outoff < c->out.len)
			ev |= POLLOUT;
		s->pfd[n++] = (struct pollfd){ .fd = c->fd, .events = ev };
	}
	if (poll(s->pfd, n, timeout_ms) < 0) {
		if (errno != EINTR)
			np_warn("poll on the control socket: %s", strerror(errno));
		return;
	}
	now = (int64_t)np_mono_ms();
	for (i = 0; i < s->nr; i++) {
		struct npd_ctl_client *c = s->c[i];
		short rev = s->pfd[i + 1].revents;
		int drop = 0;
		int busy;

		if (rev & (POLLIN | POLLHUP | POLLERR))
			drop = npd_client_read(s, c);
		if (!drop)
			drop = npd_client_write(c);
		/* A request half sent or a reply half read must progress. */
		busy = c->inlen || c->outoff < c->out.len;
		if (!drop && busy && now - c->last_ms > NP_CTL_TIMEOUT_MS) {
			np_info("dropping a control client stuck for %d ms",
				NP_CTL_TIMEOUT_MS);
			drop = 1;
		}
		if (!drop && !busy && now - c->last_ms > NPD_CTL_IDLE_MS)
			drop = 1;
		if (drop)
			npd_client_free(c);
		else
			s->c[kept++] = c;
	}
	s->nr = kept;
	if (s->pfd[0].revents & POLLIN)
		npd_ctl_accept(s);
}

void npd_ctl_server_close(struct npd_ctl_server *s)
{
	if (!s)
		return;
	for (unsigned int i = 0; i < s->nr; i++)
		npd_client_free(s->c[i]);
	close(s->fd);
	unlink(s->path);
	free(s);
}
