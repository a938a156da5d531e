// SPDX-License-Identifier: GPL-2.0
/*
 * nmiprofd control protocol: message layer, command codecs and the client
 * (the wire format is documented in np_ctl.h).
 */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/un.h>

#include "np_ctl.h"
#include "np_clock.h"

/* ---- Message layer ------------------------------------------------- */

static int np_ctl_hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* Decode %XX in place; -1 on a malformed escape. */
static int np_ctl_unescape(char *s)
{
	char *out = s;

	for (; *s; s++) {
		if (*s != '%') {
			*out++ = *s;
			continue;
		}
		int hi = np_ctl_hexval(s[1]);
		int lo = hi < 0 ? -1 : np_ctl_hexval(s[2]);

		if (hi < 0 || lo < 0)
			return -1;
		*out++ = (char)(hi << 4 | lo);
		s += 2;
	}
	*out = '\0';
	return 0;
}

static void np_ctl_seterr(char *err, size_t errlen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void np_ctl_seterr(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (!err || !errlen)
		return;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

int np_ctl_line_parse(struct np_ctl_line *l, const char *line, size_t len,
		      char *err, size_t errlen)
{
	char *p, *tok, *save = NULL;

	l->nwords = l->nfields = 0;
	if (len && line[len - 1] == '\n')
		len--;
	if (len >= sizeof(l->buf)) {
		np_ctl_seterr(err, errlen, "line longer than %d bytes",
			      NP_CTL_MAX_LINE - 1);
		return -1;
	}
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)line[i];

		/* Tolerate a CR from "socat -" style clients at the end only. */
		if (c == '\r' && i == len - 1) {
			len--;
			break;
		}
		if (c < 0x20 || c == 0x7f) {
			np_ctl_seterr(err, errlen, "control byte 0x%02x in line", c);
			return -1;
		}
	}
	memcpy(l->buf, line, len);
	l->buf[len] = '\0';

	for (p = l->buf; (tok = strtok_r(p, " ", &save)); p = NULL) {
		char *eq = strchr(tok, '=');

		if (!eq) {
			if (l->nfields) {
				np_ctl_seterr(err, errlen,
					      "word '%.32s' after key=value fields", tok);
				return -1;
			}
			if (l->nwords == NP_CTL_MAX_WORDS) {
				np_ctl_seterr(err, errlen, "too many words");
				return -1;
			}
			l->words[l->nwords++] = tok;
			continue;
		}
		if (eq == tok) {
			np_ctl_seterr(err, errlen, "empty key");
			return -1;
		}
		if (l->nfields == NP_CTL_MAX_FIELDS) {
			np_ctl_seterr(err, errlen, "more than %d fields",
				      NP_CTL_MAX_FIELDS);
			return -1;
		}
		*eq = '\0';
		if (np_ctl_unescape(tok) || np_ctl_unescape(eq + 1)) {
			np_ctl_seterr(err, errlen, "bad %%-escape in field '%.32s'",
				      tok);
			return -1;
		}
		l->key[l->nfields] = tok;
		l->val[l->nfields++] = eq + 1;
	}
	return 0;
}

const char *np_ctl_get(const struct np_ctl_line *l, const char *key)
{
	/* Last one wins, like command-line flags. */
	for (unsigned int i = l->nfields; i-- > 0;)
		if (!strcmp(l->key[i], key))
			return l->val[i];
	return NULL;
}

int np_ctl_get_u64(const struct np_ctl_line *l, const char *key, uint64_t *out)
{
	const char *v = np_ctl_get(l, key);
	unsigned long long x;
	char *end;

	if (!v)
		return -1;
	if (!*v || *v == '-' || *v == '+' || *v == ' ')
		return -2;
	errno = 0;
	x = strtoull(v, &end, 10);
	if (errno || *end)
		return -2;
	*out = x;
	return 0;
}

int np_ctl_get_i64(const struct np_ctl_line *l, const char *key, int64_t *out)
{
	const char *v = np_ctl_get(l, key);
	long long x;
	char *end;

	if (!v)
		return -1;
	if (!*v || *v == ' ' || *v == '+')
		return -2;
	errno = 0;
	x = strtoll(v, &end, 10);
	if (errno || *end)
		return -2;
	*out = x;
	return 0;
}

/* A separating space unless this is the first item of a line. */
static void np_ctl_sep(struct np_buf *b)
{
	if (b->len && b->p[b->len - 1] != '\n')
		np_buf_puts(b, " ", 1);
}

void np_ctl_put_word(struct np_buf *b, const char *word)
{
	np_ctl_sep(b);
	np_buf_puts(b, word, strlen(word));
}

static int np_ctl_must_escape(unsigned char c)
{
	return c <= 0x20 || c == 0x7f || c == '%' || c == '=';
}

void np_ctl_put_str(struct np_buf *b, const char *key, const char *val)
{
	static const char hex[] = "0123456789ABCDEF";
	size_t n = strlen(val);

	np_ctl_sep(b);
	np_buf_puts(b, key, strlen(key));
	np_buf_puts(b, "=", 1);
	if (np_buf_reserve(b, 3 * n + 1))
		return;
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)val[i];

		if (np_ctl_must_escape(c)) {
			b->p[b->len++] = '%';
			b->p[b->len++] = hex[c >> 4];
			b->p[b->len++] = hex[c & 15];
		} else {
			b->p[b->len++] = c;
		}
	}
	b->p[b->len] = '\0';
}

void np_ctl_put_u64(struct np_buf *b, const char *key, uint64_t v)
{
	char num[24];

	snprintf(num, sizeof(num), "%" PRIu64, v);
	np_ctl_put_str(b, key, num);
}

void np_ctl_put_i64(struct np_buf *b, const char *key, int64_t v)
{
	char num[24];

	snprintf(num, sizeof(num), "%" PRId64, v);
	np_ctl_put_str(b, key, num);
}

void np_ctl_end_line(struct np_buf *b)
{
	np_buf_puts(b, "\n", 1);
}

void np_ctl_put_error(struct np_buf *b, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	np_ctl_put_word(b, NP_CTL_PROTO);
	np_ctl_put_word(b, "ERR");
	np_ctl_put_str(b, "msg", msg);
	np_ctl_end_line(b);
}

static void np_ctl_put_ok(struct np_buf *b, unsigned int nlines)
{
	char num[16];

	snprintf(num, sizeof(num), "%u", nlines);
	np_ctl_put_word(b, NP_CTL_PROTO);
	np_ctl_put_word(b, "OK");
	np_ctl_put_word(b, num);
	np_ctl_end_line(b);
}

/* ---- Commands ------------------------------------------------------ */

static const char *const np_ctl_sort_names[] = {
	[NP_CTL_SORT_SYM] = "sym",
	[NP_CTL_SORT_PID] = "pid",
	[NP_CTL_SORT_COMM] = "comm",
};

const char *np_ctl_sort_name(enum np_ctl_top_sort s)
{
	if ((unsigned int)s >= sizeof(np_ctl_sort_names) / sizeof(np_ctl_sort_names[0]))
		return "?";
	return np_ctl_sort_names[s];
}

void np_ctl_top_query_init(struct np_ctl_top_query *q)
{
	memset(q, 0, sizeof(*q));
	q->n = 20;
	q->secs = 10;
	q->pid = -1;
	q->cpu = -1;
	q->sort = NP_CTL_SORT_SYM;
}

static int np_ctl_get_range(const struct np_ctl_line *l, const char *key,
			    int64_t lo, int64_t hi, int64_t *out,
			    char *err, size_t errlen);
/*
 * The fields top and stacks share: how many, over which seconds, for
 * which pid, cpu and comm.  The caller ends the line.
 */
static void np_ctl_put_window(struct np_buf *b, const char *cmd, uint32_t n,
			      uint32_t secs, int64_t pid, int32_t cpu,
			      const char *comm)
{
	np_ctl_put_word(b, NP_CTL_PROTO);
	np_ctl_put_word(b, cmd);
	np_ctl_put_u64(b, "n", n);
	np_ctl_put_u64(b, "secs", secs);
	if (pid >= 0)
		np_ctl_put_i64(b, "pid", pid);
	if (cpu >= 0)
		np_ctl_put_i64(b, "cpu", cpu);
	if (comm[0])
		np_ctl_put_str(b, "comm", comm);
}

/* Parses those fields over the defaults already in place. */
static int np_ctl_parse_window(const struct np_ctl_line *l, uint32_t nmax,
			       uint32_t *n, uint32_t *secs, int64_t *pid,
			       int32_t *cpu, char comm[NMIPROF_COMM_LEN],
			       char *err, size_t errlen)
{
	int64_t vn = *n, vsecs = *secs, vpid = *pid, vcpu = *cpu;
	const char *s;

	if (np_ctl_get_range(l, "n", 1, nmax, &vn, err, errlen) ||
	    np_ctl_get_range(l, "secs", 1, 86400, &vsecs, err, errlen) ||
	    np_ctl_get_range(l, "pid", -1, INT32_MAX, &vpid, err, errlen) ||
	    np_ctl_get_range(l, "cpu", -1, 65535, &vcpu, err, errlen))
		return -1;
	*n = (uint32_t)vn;
	*secs = (uint32_t)vsecs;
	*pid = vpid;
	*cpu = (int32_t)vcpu;
	s = np_ctl_get(l, "comm");
	if (s) {
		if (strlen(s) >= NMIPROF_COMM_LEN) {
			np_ctl_seterr(err, errlen, "comm= longer than %d bytes",
				      NMIPROF_COMM_LEN - 1);
			return -1;
		}
		strcpy(comm, s);
	}
	return 0;
}

void np_ctl_format_top_request(struct np_buf *b,
			       const struct np_ctl_top_query *q)
{
	np_ctl_put_window(b, "top", q->n, q->secs, q->pid, q->cpu, q->comm);
	np_ctl_put_str(b, "sort", np_ctl_sort_name(q->sort));
	np_ctl_end_line(b);
}

/* A numeric field in [lo, hi]; absent leaves *out alone. */
static int np_ctl_get_range(const struct np_ctl_line *l, const char *key,
			    int64_t lo, int64_t hi, int64_t *out,
			    char *err, size_t errlen)
{
	int64_t v;
	int rc = np_ctl_get_i64(l, key, &v);

	if (rc == -1)
		return 0;
	if (rc < 0 || v < lo || v > hi) {
		np_ctl_seterr(err, errlen, "%s= must be a number in %" PRId64
			      "..%" PRId64, key, lo, hi);
		return -1;
	}
	*out = v;
	return 0;
}

int np_ctl_parse_top_request(const struct np_ctl_line *l,
			     struct np_ctl_top_query *q,
			     char *err, size_t errlen)
{
	const char *s;

	np_ctl_top_query_init(q);
	if (np_ctl_parse_window(l, NP_CTL_TOP_MAX, &q->n, &q->secs, &q->pid,
				&q->cpu, q->comm, err, errlen))
		return -1;
	s = np_ctl_get(l, "sort");
	if (s) {
		unsigned int i;

		for (i = 0; i < sizeof(np_ctl_sort_names) / sizeof(np_ctl_sort_names[0]); i++)
			if (!strcmp(s, np_ctl_sort_names[i]))
				break;
		if (i == sizeof(np_ctl_sort_names) / sizeof(np_ctl_sort_names[0])) {
			np_ctl_seterr(err, errlen, "sort= must be sym, pid or comm");
			return -1;
		}
		q->sort = (enum np_ctl_top_sort)i;
	}
	return 0;
}

void np_ctl_format_top_reply(struct np_buf *b, const struct np_ctl_top *t)
{
	np_ctl_put_ok(b, 1 + t->nr);
	np_ctl_put_u64(b, "secs", t->secs);
	np_ctl_put_u64(b, "matched", t->matched);
	np_ctl_put_u64(b, "samples", t->samples);
	np_ctl_put_u64(b, "lost", t->lost);
	np_ctl_end_line(b);
	for (uint32_t i = 0; i < t->nr; i++) {
		const struct np_ctl_top_entry *e = &t->e[i];

		np_ctl_put_u64(b, "samples", e->samples);
		if (e->pid >= 0)
			np_ctl_put_i64(b, "pid", e->pid);
		if (e->comm[0])
			np_ctl_put_str(b, "comm", e->comm);
		if (e->dso) {
			np_ctl_put_u64(b, "kernel", !!e->kernel);
			np_ctl_put_str(b, "dso", e->dso);
		}
		if (e->sym)
			np_ctl_put_str(b, "sym", e->sym);
		np_ctl_end_line(b);
	}
}

void np_ctl_format_status_reply(struct np_buf *b,
				const struct np_ctl_status *st)
{
	np_ctl_put_ok(b, 1);
	np_ctl_put_str(b, "version", st->version);
	np_ctl_put_u64(b, "proto", st->proto);
	np_ctl_put_i64(b, "pid", st->pid);
	np_ctl_put_u64(b, "uptime_s", st->uptime_s);
	np_ctl_put_str(b, "backend", st->backend);
	np_ctl_put_str(b, "source", st->source);
	np_ctl_put_u64(b, "nr_cpus", st->nr_cpus);
	np_ctl_put_u64(b, "freq_hz", st->freq_hz);
	np_ctl_put_u64(b, "samples", st->samples);
	np_ctl_put_u64(b, "lost", st->lost);
	np_ctl_put_u64(b, "lockups", st->lockups);
	np_ctl_put_i64(b, "nested_nmi_safe", st->nested_nmi_safe);
	np_ctl_put_u64(b, "cost_min_ns", st->cost_min_ns);
	np_ctl_put_u64(b, "cost_avg_ns", st->cost_avg_ns);
	np_ctl_put_u64(b, "cost_max_ns", st->cost_max_ns);
	np_ctl_put_str(b, "store_dir", st->store_dir);
	np_ctl_put_u64(b, "store_bytes", st->store_bytes);
	np_ctl_put_u64(b, "slice_s", st->slice_s);
	np_ctl_put_u64(b, "slices", st->slices);
	np_ctl_put_u64(b, "live_s", st->live_s);
	np_ctl_put_u64(b, "clients", st->clients);
	np_ctl_put_u64(b, "rss_bytes", st->rss_bytes);
	np_ctl_put_u64(b, "mem_live", st->mem_live);
	np_ctl_put_u64(b, "mem_slice", st->mem_slice);
	np_ctl_put_u64(b, "mem_store", st->mem_store);
	np_ctl_put_u64(b, "mem_symbols", st->mem_symbols);
	if (st->warning[0])
		np_ctl_put_str(b, "warning", st->warning);
	np_ctl_end_line(b);
}

static void np_ctl_copy(char *dst, size_t len, const char *src)
{
	snprintf(dst, len, "%s", src ? src : "");
}

#define NP_CTL_GET_NUM(l, key, dst) do {				\
	uint64_t __v;							\
	if (!np_ctl_get_u64(l, key, &__v))				\
		(dst) = (__typeof__(dst))__v;				\
} while (0)

int np_ctl_parse_status(const struct np_ctl_line *l, struct np_ctl_status *st)
{
	int64_t v;

	memset(st, 0, sizeof(*st));
	st->nested_nmi_safe = -1;
	st->pid = -1;
	if (!np_ctl_get(l, "version") || !np_ctl_get(l, "backend"))
		return -1;
	np_ctl_copy(st->version, sizeof(st->version), np_ctl_get(l, "version"));
	np_ctl_copy(st->backend, sizeof(st->backend), np_ctl_get(l, "backend"));
	np_ctl_copy(st->source, sizeof(st->source), np_ctl_get(l, "source"));
	np_ctl_copy(st->store_dir, sizeof(st->store_dir), np_ctl_get(l, "store_dir"));
	np_ctl_copy(st->warning, sizeof(st->warning), np_ctl_get(l, "warning"));
	if (!np_ctl_get_i64(l, "pid", &v))
		st->pid = v;
	if (!np_ctl_get_i64(l, "nested_nmi_safe", &v))
		st->nested_nmi_safe = (int)v;
	NP_CTL_GET_NUM(l, "proto", st->proto);
	NP_CTL_GET_NUM(l, "uptime_s", st->uptime_s);
	NP_CTL_GET_NUM(l, "nr_cpus", st->nr_cpus);
	NP_CTL_GET_NUM(l, "freq_hz", st->freq_hz);
	NP_CTL_GET_NUM(l, "samples", st->samples);
	NP_CTL_GET_NUM(l, "lost", st->lost);
	NP_CTL_GET_NUM(l, "lockups", st->lockups);
	NP_CTL_GET_NUM(l, "cost_min_ns", st->cost_min_ns);
	NP_CTL_GET_NUM(l, "cost_avg_ns", st->cost_avg_ns);
	NP_CTL_GET_NUM(l, "cost_max_ns", st->cost_max_ns);
	NP_CTL_GET_NUM(l, "store_bytes", st->store_bytes);
	NP_CTL_GET_NUM(l, "slice_s", st->slice_s);
	NP_CTL_GET_NUM(l, "slices", st->slices);
	NP_CTL_GET_NUM(l, "live_s", st->live_s);
	NP_CTL_GET_NUM(l, "clients", st->clients);
	NP_CTL_GET_NUM(l, "rss_bytes", st->rss_bytes);
	NP_CTL_GET_NUM(l, "mem_live", st->mem_live);
	NP_CTL_GET_NUM(l, "mem_slice", st->mem_slice);
	NP_CTL_GET_NUM(l, "mem_store", st->mem_store);
	NP_CTL_GET_NUM(l, "mem_symbols", st->mem_symbols);
	return 0;
}

int np_ctl_parse_top_summary(const struct np_ctl_line *l, struct np_ctl_top *t)
{
	uint64_t secs;

	if (np_ctl_get_u64(l, "secs", &secs) ||
	    np_ctl_get_u64(l, "matched", &t->matched) ||
	    np_ctl_get_u64(l, "samples", &t->samples) ||
	    np_ctl_get_u64(l, "lost", &t->lost))
		return -1;
	t->secs = (uint32_t)secs;
	return 0;
}

int np_ctl_parse_top_entry(const struct np_ctl_line *l,
			   struct np_ctl_top_entry *e)
{
	const char *s;
	uint64_t k;

	memset(e, 0, sizeof(*e));
	e->pid = -1;
	if (np_ctl_get_u64(l, "samples", &e->samples))
		return -1;
	if (np_ctl_get(l, "pid") && np_ctl_get_i64(l, "pid", &e->pid))
		return -1;
	np_ctl_copy(e->comm, sizeof(e->comm), np_ctl_get(l, "comm"));
	if (!np_ctl_get_u64(l, "kernel", &k))
		e->kernel = !!k;
	s = np_ctl_get(l, "dso");
	if (s && !(e->dso = strdup(s)))
		return -1;
	s = np_ctl_get(l, "sym");
	if (s && !(e->sym = strdup(s))) {
		free(e->dso);
		e->dso = NULL;
		return -1;
	}
	return 0;
}

void np_ctl_top_free(struct np_ctl_top *t)
{
	for (uint32_t i = 0; t->e && i < t->nr; i++) {
		free(t->e[i].dso);
		free(t->e[i].sym);
	}
	free(t->e);
	t->e = NULL;
	t->nr = 0;
}

/* ---- stacks -------------------------------------------------------- */

void np_ctl_stacks_query_init(struct np_ctl_stacks_query *q)
{
	memset(q, 0, sizeof(*q));
	q->n = NP_CTL_STACKS_DEFAULT;
	q->secs = 10;
	q->pid = -1;
	q->cpu = -1;
}

void np_ctl_format_stacks_request(struct np_buf *b,
				  const struct np_ctl_stacks_query *q)
{
	np_ctl_put_window(b, "stacks", q->n, q->secs, q->pid, q->cpu, q->comm);
	np_ctl_end_line(b);
}

int np_ctl_parse_stacks_request(const struct np_ctl_line *l,
				struct np_ctl_stacks_query *q,
				char *err, size_t errlen)
{
	np_ctl_stacks_query_init(q);
	return np_ctl_parse_window(l, NP_CTL_STACKS_MAX, &q->n, &q->secs,
				   &q->pid, &q->cpu, q->comm, err, errlen);
}

/* A string field cut to NP_CTL_STR_MAX bytes: a line must stay bounded. */
static void np_ctl_put_strmax(struct np_buf *b, const char *key,
			      const char *val)
{
	char cut[NP_CTL_STR_MAX + 1];

	if (strlen(val) <= NP_CTL_STR_MAX) {
		np_ctl_put_str(b, key, val);
		return;
	}
	memcpy(cut, val, NP_CTL_STR_MAX);
	cut[NP_CTL_STR_MAX] = '\0';
	np_ctl_put_str(b, key, cut);
}

void np_ctl_format_stacks_reply(struct np_buf *b,
				const struct np_ctl_stacks *t)
{
	np_ctl_put_ok(b, 1 + t->nr_frames + t->nr);
	np_ctl_put_u64(b, "secs", t->secs);
	np_ctl_put_u64(b, "matched", t->matched);
	np_ctl_put_u64(b, "samples", t->samples);
	np_ctl_put_u64(b, "lost", t->lost);
	np_ctl_put_u64(b, "frames", t->nr_frames);
	np_ctl_put_u64(b, "stacks", t->nr);
	np_ctl_put_u64(b, "other", t->other);
	np_ctl_put_u64(b, "other_stacks", t->other_stacks);
	np_ctl_put_u64(b, "other_kernel", t->other_kernel);
	np_ctl_put_u64(b, "other_user", t->other_user);
	np_ctl_end_line(b);
	for (uint32_t i = 0; i < t->nr_frames; i++) {
		np_ctl_put_word(b, "frame");
		np_ctl_put_u64(b, "kernel", !!t->f[i].kernel);
		np_ctl_put_strmax(b, "dso", t->f[i].dso);
		if (t->f[i].sym)
			np_ctl_put_strmax(b, "sym", t->f[i].sym);
		np_ctl_end_line(b);
	}
	for (uint32_t i = 0; i < t->nr; i++) {
		const struct np_ctl_stack *st = &t->s[i];
		uint32_t n = st->nr < NP_CTL_STACK_DEPTH ? st->nr : NP_CTL_STACK_DEPTH;
		char num[16];

		np_ctl_put_word(b, "stack");
		np_ctl_put_u64(b, "samples", st->samples);
		np_ctl_put_i64(b, "pid", st->pid);
		np_ctl_put_i64(b, "cpu", st->cpu);
		np_ctl_put_str(b, "comm", st->comm);
		/* digits and commas need no escaping: appended as they are */
		np_ctl_put_word(b, "frames=");
		for (uint32_t k = 0; k < n; k++) {
			int len = snprintf(num, sizeof(num), k ? ",%u" : "%u",
					   st->frames[k]);

			np_buf_puts(b, num, (size_t)len);
		}
		np_ctl_end_line(b);
	}
}

void np_ctl_stacks_free(struct np_ctl_stacks *t)
{
	for (uint32_t i = 0; t->f && i < t->nr_frames; i++) {
		free(t->f[i].dso);
		free(t->f[i].sym);
	}
	for (uint32_t i = 0; t->s && i < t->nr; i++)
		free(t->s[i].frames);
	free(t->f);
	free(t->s);
	t->f = NULL;
	t->s = NULL;
	t->nr = t->nr_frames = 0;
}

static int np_ctl_parse_frame(const struct np_ctl_line *l, struct np_ctl_frame *f)
{
	const char *dso = np_ctl_get(l, "dso"), *sym = np_ctl_get(l, "sym");
	uint64_t k;

	if (l->nwords != 1 || strcmp(l->words[0], "frame") || !dso ||
	    np_ctl_get_u64(l, "kernel", &k) || k > 1)
		return -1;
	f->kernel = (int)k;
	f->dso = strdup(dso);
	if (!f->dso)
		return -1;
	if (sym && !(f->sym = strdup(sym))) {
		free(f->dso);
		f->dso = NULL;
		return -1;
	}
	return 0;
}

/* "i,j,k" into st->frames, each index below nr_frames. */
static int np_ctl_parse_stack(const struct np_ctl_line *l, struct np_ctl_stack *st,
			      uint32_t nr_frames)
{
	const char *p = np_ctl_get(l, "frames");
	uint32_t n = 1;
	int64_t cpu;

	if (l->nwords != 1 || strcmp(l->words[0], "stack") || !p ||
	    np_ctl_get_u64(l, "samples", &st->samples) ||
	    np_ctl_get_i64(l, "pid", &st->pid) || np_ctl_get_i64(l, "cpu", &cpu))
		return -1;
	st->cpu = (int32_t)cpu;
	np_ctl_copy(st->comm, sizeof(st->comm), np_ctl_get(l, "comm"));
	/* one index per comma, and one more */
	for (const char *q = p; *q; q++)
		n += *q == ',';
	if (n > NP_CTL_STACK_DEPTH)
		return -1;
	st->frames = calloc(n, sizeof(*st->frames));
	if (!st->frames)
		return -1;
	while (*p) {
		char *end;
		unsigned long v;

		if (*p < '0' || *p > '9')
			return -1;	/* strtoul would take " +3" */
		errno = 0;
		v = strtoul(p, &end, 10);
		if (errno || v >= nr_frames || st->nr == n ||
		    (*end && (*end != ',' || !end[1])))
			return -1;
		st->frames[st->nr++] = (uint32_t)v;
		p = *end ? end + 1 : end;
	}
	return 0;
}

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
