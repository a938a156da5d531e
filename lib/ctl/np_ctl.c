// SPDX-License-Identifier: GPL-2.0
/*
 * nmiprofd control protocol, commands: each request and reply formatted
 * and parsed (the wire format is documented in np_ctl.h).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "np_ctl.h"
#include "np_ctl_impl.h"

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
	np_ctl_put_u64(b, "store_pending", st->store_pending);
	np_ctl_put_u64(b, "store_pending_bytes", st->store_pending_bytes);
	np_ctl_put_u64(b, "store_pending_max", st->store_pending_max);
	np_ctl_put_u64(b, "store_dropped", st->store_dropped);
	np_ctl_put_u64(b, "store_pruned_segs", st->store_pruned_segs);
	np_ctl_put_u64(b, "store_pruned_bytes", st->store_pruned_bytes);
	if (st->store_errno) {
		np_ctl_put_i64(b, "store_errno", st->store_errno);
		np_ctl_put_str(b, "store_error", st->store_error);
		np_ctl_put_u64(b, "store_since_ns", st->store_since_ns);
	}
	if (st->fleet[0])
		np_ctl_put_str(b, "fleet", st->fleet);
	if (st->fleet[0] && strcmp(st->fleet, "off")) {
		np_ctl_put_str(b, "fleet_url", st->fleet_url);
		np_ctl_put_str(b, "fleet_host", st->fleet_host);
		np_ctl_put_u64(b, "fleet_cursor_ns", st->fleet_cursor_ns);
		np_ctl_put_u64(b, "fleet_backlog", st->fleet_backlog);
		np_ctl_put_u64(b, "fleet_sent_slices", st->fleet_sent_slices);
		np_ctl_put_u64(b, "fleet_sent_samples", st->fleet_sent_samples);
		np_ctl_put_u64(b, "fleet_lost_slices", st->fleet_lost_slices);
		np_ctl_put_u64(b, "fleet_lost_samples", st->fleet_lost_samples);
		if (st->fleet_error[0])
			np_ctl_put_str(b, "fleet_error", st->fleet_error);
	}
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
	np_ctl_copy(st->fleet, sizeof(st->fleet), np_ctl_get(l, "fleet"));
	np_ctl_copy(st->fleet_url, sizeof(st->fleet_url), np_ctl_get(l, "fleet_url"));
	np_ctl_copy(st->fleet_host, sizeof(st->fleet_host), np_ctl_get(l, "fleet_host"));
	np_ctl_copy(st->fleet_error, sizeof(st->fleet_error), np_ctl_get(l, "fleet_error"));
	NP_CTL_GET_NUM(l, "fleet_cursor_ns", st->fleet_cursor_ns);
	NP_CTL_GET_NUM(l, "fleet_backlog", st->fleet_backlog);
	NP_CTL_GET_NUM(l, "fleet_sent_slices", st->fleet_sent_slices);
	NP_CTL_GET_NUM(l, "fleet_sent_samples", st->fleet_sent_samples);
	NP_CTL_GET_NUM(l, "fleet_lost_slices", st->fleet_lost_slices);
	NP_CTL_GET_NUM(l, "fleet_lost_samples", st->fleet_lost_samples);
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
	np_ctl_copy(st->store_error, sizeof(st->store_error), np_ctl_get(l, "store_error"));
	if (!np_ctl_get_i64(l, "store_errno", &v))
		st->store_errno = (int)v;
	NP_CTL_GET_NUM(l, "store_since_ns", st->store_since_ns);
	NP_CTL_GET_NUM(l, "store_pending", st->store_pending);
	NP_CTL_GET_NUM(l, "store_pending_bytes", st->store_pending_bytes);
	NP_CTL_GET_NUM(l, "store_pending_max", st->store_pending_max);
	NP_CTL_GET_NUM(l, "store_dropped", st->store_dropped);
	NP_CTL_GET_NUM(l, "store_pruned_segs", st->store_pruned_segs);
	NP_CTL_GET_NUM(l, "store_pruned_bytes", st->store_pruned_bytes);
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
		else
			np_ctl_put_u64(b, "off", t->f[i].offset);
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

int np_ctl_parse_frame(const struct np_ctl_line *l, struct np_ctl_frame *f)
{
	const char *dso = np_ctl_get(l, "dso"), *sym = np_ctl_get(l, "sym");
	uint64_t k;

	if (l->nwords != 1 || strcmp(l->words[0], "frame") || !dso ||
	    np_ctl_get_u64(l, "kernel", &k) || k > 1)
		return -1;
	/* off= is optional: a daemon before it sent none */
	if (np_ctl_get(l, "off") && np_ctl_get_u64(l, "off", &f->offset))
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
int np_ctl_parse_stack(const struct np_ctl_line *l, struct np_ctl_stack *st,
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
