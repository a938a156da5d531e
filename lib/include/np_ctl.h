/* SPDX-License-Identifier: GPL-2.0 */
/*
 * nmiprofd control protocol: live views over a unix stream socket.
 *
 * Wire format (version 1).  Text, one message per line, so a human can
 * talk to the daemon with `socat - UNIX:/run/nmiprof/nmiprofd.sock`:
 *
 *   request   NMIPROF/1 <command> [key=value ...]\n
 *   reply     NMIPROF/1 OK <n>\n  followed by exactly n lines, or
 *             NMIPROF/1 ERR msg=<text>\n
 *
 *   - Every line is at most NP_CTL_MAX_LINE bytes including the '\n'.
 *   - Fields are separated by single spaces; a line is the bare words
 *     ("NMIPROF/1", "top", "OK", "3") followed by key=value fields.
 *   - Values are percent-escaped: bytes <= 0x20, 0x7f, '%' and '=' are
 *     sent as %XX, so values never contain a space, '=' or a newline.
 *   - Unknown keys are ignored by both sides (forward compatibility);
 *     a different protocol number gets "ERR msg=unsupported protocol".
 *   - A connection may carry any number of requests, one at a time.
 *
 * Commands:
 *
 *   status
 *     one line: version= proto= pid= uptime_s= backend= source= nr_cpus=
 *     freq_hz= samples= lost= lockups= nested_nmi_safe= cost_min_ns=
 *     cost_avg_ns= cost_max_ns= store_dir= store_bytes= slice_s=
 *     slices= live_s= clients= warning= (warning only when non-empty)
 *     fleet= (off, ok, failing) and, when not off, fleet_url= fleet_host=
 *     fleet_cursor_ns= fleet_backlog= fleet_sent_slices= fleet_sent_samples=
 *     fleet_lost_slices= fleet_lost_samples= fleet_error= (since 0.3)
 *     store_pending= store_pending_bytes= store_pending_max=
 *     store_dropped= store_pruned_segs= store_pruned_bytes= and, while
 *     slices cannot be written, store_errno= store_error= store_since_ns=
 *
 *   top [n=20] [secs=10] [pid=P] [cpu=C] [comm=NAME] [sort=sym|pid|comm]
 *     "top N over the last K seconds", from the daemon's in-memory ring
 *     of per-second aggregates of each sample's innermost frame.
 *     Line 1 (summary): secs= (seconds actually covered) matched=
 *       (samples passing the filters) samples= lost= (all samples and
 *       lost samples in the window).
 *     Lines 2..: one per entry, most samples first: samples= and, by
 *       sort key, kernel= dso= sym= (sort=sym; sym absent when the
 *       address has no symbol), pid= comm= (sort=pid) or comm= (sort=comm).
 *
 *   stacks [n=2000] [secs=10] [pid=P] [cpu=C] [comm=NAME]
 *     The whole symbolized stacks behind "top": one entry per distinct
 *     (pid, comm, cpu, stack) over the last K seconds, most samples
 *     first, at most n (1..NP_CTL_STACKS_MAX); what the bound leaves out
 *     is summed in other=.  Frames are sent once and stacks name them by
 *     index, innermost first.
 *     Line 1 (summary): secs= matched= samples= lost= as for top, and
 *       frames=F stacks=S (the line counts that follow) other= (samples
 *       of the stacks left out) other_stacks= (how many), other_kernel=
 *       and other_user= (those of other's samples whose stacks have a
 *       kernel, a user frame: a client showing only kernel or only user
 *       frames counts the remainder right).
 *     Lines 2..F+1: "frame kernel=0|1 dso= [sym=] [off=]" (sym absent
 *       when the address has no symbol, off= then its offset in dso, 0
 *       if absent; dso and sym at most NP_CTL_STR_MAX bytes).
 *     Lines F+2..: "stack samples= pid= cpu= comm= frames=i,j,k" (frame
 *       indices from 0, innermost first).
 *
 * The server never lets a client stall it: sockets are non-blocking, a
 * client that sends an over-long or malformed line gets an ERR reply
 * (and is dropped if the line was too long), and one that does not read
 * its replies or finish its request within NP_CTL_TIMEOUT_MS is dropped.
 */
#ifndef NP_CTL_H
#define NP_CTL_H

#include <stddef.h>
#include <stdint.h>
#include <nmiprof/nmiprof_abi.h>
#include "np_buf.h"

#define NP_CTL_PROTO		"NMIPROF/1"
#define NP_CTL_PROTO_VERSION	1
#define NP_CTL_MAX_LINE		4096
#define NP_CTL_MAX_FIELDS	48
#define NP_CTL_MAX_WORDS	4
#define NP_CTL_TOP_MAX		1000	/* largest n= of a top request */
#define NP_CTL_STACKS_MAX	10000	/* largest n= of a stacks request */
#define NP_CTL_STACKS_DEFAULT	2000
#define NP_CTL_STACK_DEPTH	256	/* frames of one stack on the wire */
#define NP_CTL_STR_MAX		1000	/* dso / sym bytes on the wire */
/* Largest reply: a stacks reply of distinct frames only. */
#define NP_CTL_MAX_REPLY_LINES	(1 + NP_CTL_STACKS_MAX * (1 + NP_CTL_STACK_DEPTH))
#define NP_CTL_TIMEOUT_MS	5000
#define NP_CTL_DEFAULT_SOCKET	"/run/nmiprof/nmiprofd.sock"

/* ---- Message layer: shared by the daemon and the clients ---------- */

/* One parsed line; words/keys/values point into buf (decoded in place). */
struct np_ctl_line {
	char buf[NP_CTL_MAX_LINE];
	unsigned int nwords, nfields;
	const char *words[NP_CTL_MAX_WORDS];
	const char *key[NP_CTL_MAX_FIELDS];
	const char *val[NP_CTL_MAX_FIELDS];
};

/*
 * Parse one line (without or with its trailing '\n').  Returns 0, or -1
 * with a one-line reason in err: over-long, control bytes, bad escape,
 * too many fields, empty key, a bare word after a key=value field.
 */
int np_ctl_line_parse(struct np_ctl_line *l, const char *line, size_t len,
		      char *err, size_t errlen);
/* The value of key, or NULL. */
const char *np_ctl_get(const struct np_ctl_line *l, const char *key);
/* 0, -1 when absent, -2 when present but not a number in range. */
int np_ctl_get_u64(const struct np_ctl_line *l, const char *key, uint64_t *out);
int np_ctl_get_i64(const struct np_ctl_line *l, const char *key, int64_t *out);

/* Replies and requests are built in an np_buf (text, NUL-terminated). */
/* Append a bare word (no escaping; must not contain spaces). */
void np_ctl_put_word(struct np_buf *b, const char *word);
/* Append " key=value" with value percent-escaped. */
void np_ctl_put_str(struct np_buf *b, const char *key, const char *val);
void np_ctl_put_u64(struct np_buf *b, const char *key, uint64_t v);
void np_ctl_put_i64(struct np_buf *b, const char *key, int64_t v);
void np_ctl_end_line(struct np_buf *b);
/* A complete "NMIPROF/1 ERR msg=..." line. */
void np_ctl_put_error(struct np_buf *b, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* ---- Commands ------------------------------------------------------ */

enum np_ctl_top_sort {
	NP_CTL_SORT_SYM = 0,	/* innermost frame: dso + symbol */
	NP_CTL_SORT_PID,	/* process */
	NP_CTL_SORT_COMM,	/* command name */
};

struct np_ctl_top_query {
	uint32_t n;		/* 1..NP_CTL_TOP_MAX, default 20 */
	uint32_t secs;		/* window, default 10 */
	int64_t pid;		/* -1: any */
	int32_t cpu;		/* -1: any */
	char comm[NMIPROF_COMM_LEN];	/* "": any */
	enum np_ctl_top_sort sort;
};

struct np_ctl_top_entry {
	uint64_t samples;
	int64_t pid;		/* sort=pid, else -1 */
	char comm[NMIPROF_COMM_LEN];	/* sort=pid|comm, else "" */
	int kernel;		/* sort=sym: 1 for a kernel frame */
	char *dso, *sym;	/* sort=sym (unnamed: np_sym_unnamed()), else NULL */
};

struct np_ctl_top {
	uint32_t secs;		/* seconds covered (less than asked at start-up) */
	uint64_t matched, samples, lost;
	uint32_t nr;
	struct np_ctl_top_entry *e;
};

struct np_ctl_status {
	char version[32];
	uint32_t proto;
	int64_t pid;
	uint64_t uptime_s;
	char backend[16], source[16];
	uint32_t nr_cpus, freq_hz;
	uint64_t samples, lost, lockups;
	int nested_nmi_safe;	/* kmod; -1 unknown */
	uint64_t cost_min_ns, cost_avg_ns, cost_max_ns;	/* kmod; 0 unknown */
	char store_dir[1024];
	uint64_t store_bytes;
	uint32_t slice_s;
	uint64_t slices;	/* slices written since start */
	uint32_t live_s;	/* seconds the live ring holds (max secs=) */
	uint32_t clients;
	/* The daemon's resident memory and what its parts hold (0: unknown). */
	uint64_t rss_bytes;
	uint64_t mem_live, mem_slice, mem_store, mem_symbols;
	char warning[256];
	/* Slices not reaching the store (daemon/slices.h): store_errno 0
	 * when writes work. */
	int store_errno;
	char store_error[256];
	uint64_t store_since_ns;
	uint64_t store_pending, store_pending_bytes, store_pending_max;
	uint64_t store_dropped, store_pruned_segs, store_pruned_bytes;
	/* The fleet exporter (daemon/fleet.c); fleet "" from older daemons. */
	char fleet[16], fleet_url[256], fleet_host[128], fleet_error[256];
	uint64_t fleet_cursor_ns, fleet_backlog;
	uint64_t fleet_sent_slices, fleet_sent_samples;
	uint64_t fleet_lost_slices, fleet_lost_samples;
};

struct np_ctl_stacks_query {
	uint32_t n;		/* 1..NP_CTL_STACKS_MAX, default NP_CTL_STACKS_DEFAULT */
	uint32_t secs;		/* window, default 10 */
	int64_t pid;		/* -1: any */
	int32_t cpu;		/* -1: any */
	char comm[NMIPROF_COMM_LEN];	/* "": any */
};

struct np_ctl_frame {
	int kernel;
	char *dso;		/* never NULL */
	char *sym;		/* NULL when the address has no symbol */
	uint64_t offset;	/* sym NULL: the address's offset in dso */
};

struct np_ctl_stack {
	uint64_t samples;
	int64_t pid;
	int32_t cpu;
	char comm[NMIPROF_COMM_LEN];
	uint32_t nr;
	uint32_t *frames;	/* indices into np_ctl_stacks.f, innermost first */
};

struct np_ctl_stacks {
	uint32_t secs;
	uint64_t matched, samples, lost;
	uint64_t other;		/* samples of the stacks beyond n */
	uint64_t other_stacks;
	/* other's samples with a kernel, a user frame, if sent */
	uint64_t other_kernel, other_user;
	int other_kinds;	/* the two above are set (were sent) */
	uint32_t nr_frames, nr;
	struct np_ctl_frame *f;
	struct np_ctl_stack *s;
};

void np_ctl_top_query_init(struct np_ctl_top_query *q);
void np_ctl_stacks_query_init(struct np_ctl_stacks_query *q);
const char *np_ctl_sort_name(enum np_ctl_top_sort s);

/* Encoders and decoders, one per direction, used by both ends. */
void np_ctl_format_top_request(struct np_buf *b,
			       const struct np_ctl_top_query *q);
int np_ctl_parse_top_request(const struct np_ctl_line *l,
			     struct np_ctl_top_query *q,
			     char *err, size_t errlen);
/* The whole reply: header + summary + entries. */
void np_ctl_format_top_reply(struct np_buf *b, const struct np_ctl_top *t);
void np_ctl_format_status_reply(struct np_buf *b,
				const struct np_ctl_status *st);
/* Decode reply bodies (the lines after the header). */
int np_ctl_parse_status(const struct np_ctl_line *l, struct np_ctl_status *st);
int np_ctl_parse_top_summary(const struct np_ctl_line *l, struct np_ctl_top *t);
int np_ctl_parse_top_entry(const struct np_ctl_line *l,
			   struct np_ctl_top_entry *e);
void np_ctl_top_free(struct np_ctl_top *t);

void np_ctl_format_stacks_request(struct np_buf *b,
				  const struct np_ctl_stacks_query *q);
int np_ctl_parse_stacks_request(const struct np_ctl_line *l,
				struct np_ctl_stacks_query *q,
				char *err, size_t errlen);
void np_ctl_format_stacks_reply(struct np_buf *b,
				const struct np_ctl_stacks *t);
void np_ctl_stacks_free(struct np_ctl_stacks *t);

/* ---- Client -------------------------------------------------------- */

struct np_ctl_client;

/* NULL and a one-line err when the daemon is not reachable. */
struct np_ctl_client *np_ctl_open(const char *path, char *err, size_t errlen);
/* Wrap an already connected stream fd (tests); takes ownership. */
struct np_ctl_client *np_ctl_client_from_fd(int fd);
void np_ctl_close(struct np_ctl_client *c);
void np_ctl_set_timeout(struct np_ctl_client *c, int timeout_ms);

int np_ctl_status(struct np_ctl_client *c, struct np_ctl_status *st,
		  char *err, size_t errlen);
/* On success *t is filled; release it with np_ctl_top_free. */
int np_ctl_top(struct np_ctl_client *c, const struct np_ctl_top_query *q,
	       struct np_ctl_top *t, char *err, size_t errlen);
/*
 * On success *t is filled; release it with np_ctl_stacks_free.  -1 with
 * err; -2 when the daemon does not know the query (older than it).
 */
int np_ctl_stacks(struct np_ctl_client *c, const struct np_ctl_stacks_query *q,
		  struct np_ctl_stacks *t, char *err, size_t errlen);

/*
 * Low level: send one request line (a complete line from an np_buf) and
 * read the reply header.  Returns the number of body lines (>= 0), then
 * call np_ctl_read_line that many times; -1 with err filled on I/O error,
 * timeout, a malformed reply or an ERR reply (err is the server's text).
 */
int np_ctl_request(struct np_ctl_client *c, const char *req, size_t len,
		   char *err, size_t errlen);
int np_ctl_read_line(struct np_ctl_client *c, struct np_ctl_line *l,
		     char *err, size_t errlen);

#endif /* NP_CTL_H */
