// SPDX-License-Identifier: GPL-2.0
/*
 * `nmiprof top --daemon`: the samples come from nmiprofd's live "stacks"
 * query (np_ctl.h) instead of an in-process backend, so top costs the
 * machine nothing extra while a daemon runs.
 *
 * The daemon answers with whole symbolized stacks per (pid, comm, cpu)
 * over the last --window seconds, and each refresh replaces the topview's
 * buckets with them: rows, children, pid and comm columns, the call graph
 * and the k/u frame toggles are the in-process top's, computed by the
 * same lib/topview.  The cpu/pid/comm filters are evaluated by the
 * daemon (they shrink the reply); the n most frequent stacks are sent
 * and the rest arrives as one sum, shown as an "[other stacks]" row so
 * that percentages stay shares of every matching sample.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "np_ctl.h"

struct top_daemon {
	struct np_ctl_client *c;
	const char *sock;
	struct np_ctl_status st;
	struct np_ctl_stacks last;
	int have_last;
	struct np_frame *fr;		/* one stack's frames for topview_add */
	size_t fr_cap;
};

struct top_daemon *top_daemon_open(const char *sock, char *err, size_t errlen)
{
	struct top_daemon *d = calloc(1, sizeof(*d));

	if (!d) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	d->sock = sock ? sock : NP_CTL_DEFAULT_SOCKET;
	d->c = np_ctl_open(d->sock, err, errlen);
	if (!d->c || np_ctl_status(d->c, &d->st, err, errlen)) {
		top_daemon_close(d);
		return NULL;
	}
	return d;
}

void top_daemon_close(struct top_daemon *d)
{
	if (!d)
		return;
	if (d->have_last)
		np_ctl_stacks_free(&d->last);
	if (d->c)
		np_ctl_close(d->c);
	free(d->fr);
	free(d);
}

/* The frames of one reply stack as topview takes them. */
static int stack_frames(struct top_daemon *d, const struct np_ctl_stacks *t,
			const struct np_ctl_stack *s)
{
	if (s->nr > d->fr_cap) {
		struct np_frame *fr = realloc(d->fr, s->nr * sizeof(*fr));

		if (!fr)
			return -1;
		d->fr = fr;
		d->fr_cap = s->nr;
	}
	for (uint32_t i = 0; i < s->nr; i++) {
		const struct np_ctl_frame *f = &t->f[s->frames[i]];

		d->fr[i] = (struct np_frame){
			.dso = f->dso,
			/* an unnamed address is "[unknown]", as in-process */
			.sym = f->sym ? f->sym : "[unknown]",
			.kernel = f->kernel,
		};
	}
	return 0;
}

int top_daemon_fill(struct top_daemon *d, const struct tv_filter *f,
		    uint32_t secs, struct topview *tv, char *err, size_t errlen)
{
	static const struct np_frame other = {
		.dso = "[other]", .sym = "[other stacks]", .kernel = 0,
	};
	struct np_ctl_stacks_query q;
	struct np_ctl_stacks t;
	int ret;

	np_ctl_stacks_query_init(&q);
	q.secs = secs;
	q.pid = f->pid;
	q.cpu = f->cpu;
	snprintf(q.comm, sizeof(q.comm), "%s", f->comm);
	ret = np_ctl_stacks(d->c, &q, &t, err, errlen);
	if (ret == -2) {
		snprintf(err, errlen, "the daemon at %s does not answer the stacks "
			 "query (nmiprofd %s, older than this nmiprof): restart it "
			 "from this version", d->sock, d->st.version);
		return -1;
	}
	if (ret)
		return -1;
	np_ctl_status(d->c, &d->st, err, errlen);	/* header figures */
	topview_zero(tv);
	for (uint32_t i = 0; i < t.nr; i++) {
		const struct np_ctl_stack *s = &t.s[i];
		struct tv_sample ts = {
			.cpu = (uint32_t)s->cpu, .pid = (uint32_t)s->pid,
			.comm = s->comm, .nr_frames = s->nr,
			.weight = (double)s->samples,
		};

		if (!s->nr)
			continue;	/* no frame at all: nothing to show */
		if (stack_frames(d, &t, s))
			goto nomem;
		ts.frames = d->fr;
		if (topview_add(tv, &ts))
			goto nomem;
	}
	if (t.other) {
		struct tv_sample ts = {
			.comm = "[other]", .frames = &other, .nr_frames = 1,
			.weight = (double)t.other,
		};

		if (topview_add(tv, &ts))
			goto nomem;
	}
	if (d->have_last)
		np_ctl_stacks_free(&d->last);
	d->last = t;
	d->have_last = 1;
	return 0;
nomem:
	np_ctl_stacks_free(&t);
	snprintf(err, errlen, "out of memory");
	return -1;
}

void top_daemon_header(const struct top_daemon *d, double shown, char *buf,
		       size_t len)
{
	snprintf(buf, len, "nmiprof top  source: nmiprofd pid %lld (%s, %s)  %u Hz  "
		 "CPUs: %u  window: %us  samples: %llu  lost: %llu  shown: %.0f",
		 (long long)d->st.pid, d->st.backend, d->st.source, d->st.freq_hz,
		 d->st.nr_cpus, d->have_last ? d->last.secs : 0,
		 (unsigned long long)(d->have_last ? d->last.samples : 0),
		 (unsigned long long)(d->have_last ? d->last.lost : 0), shown);
}
