// SPDX-License-Identifier: GPL-2.0
/*
 * `nmiprof top --daemon`: the rows come from nmiprofd's live query
 * ("top N over the last K seconds", np_ctl.h) instead of an in-process
 * backend, so top costs the machine nothing extra while a daemon runs.
 *
 * The daemon aggregates innermost frames only: rows carry self samples
 * (children == self), no pid or comm, and there is no call graph.  The
 * cpu/pid/comm filters are evaluated by the daemon.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "np_ctl.h"

struct top_daemon {
	struct np_ctl_client *c;
	struct np_ctl_status st;
	struct np_ctl_top last;
	int have_last;
};

struct top_daemon *top_daemon_open(const char *sock, char *err, size_t errlen)
{
	struct top_daemon *d = calloc(1, sizeof(*d));

	if (!d) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	d->c = np_ctl_open(sock ? sock : NP_CTL_DEFAULT_SOCKET, err, errlen);
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
		np_ctl_top_free(&d->last);
	if (d->c)
		np_ctl_close(d->c);
	free(d);
}

int top_daemon_fill(struct top_daemon *d, const struct tv_filter *f,
		    uint32_t secs, struct topview *tv, char *err, size_t errlen)
{
	struct np_ctl_top_query q;
	struct np_ctl_top t;

	np_ctl_top_query_init(&q);
	q.n = NP_CTL_TOP_MAX;
	q.secs = secs;
	q.pid = f->pid;
	q.cpu = f->cpu;
	snprintf(q.comm, sizeof(q.comm), "%s", f->comm);
	q.sort = NP_CTL_SORT_SYM;
	if (np_ctl_top(d->c, &q, &t, err, errlen))
		return -1;
	np_ctl_status(d->c, &d->st, err, errlen);	/* header figures */
	topview_zero(tv);
	for (uint32_t i = 0; i < t.nr; i++) {
		const struct np_ctl_top_entry *e = &t.e[i];
		char addr[24];
		struct np_frame fr = {
			.dso = e->dso ? e->dso : "[unknown]",
			.sym = e->sym,
			.kernel = e->kernel,
		};
		struct tv_sample s = {
			.cpu = 0, .pid = 0, .comm = "-", .frames = &fr,
			.nr_frames = 1, .weight = (double)e->samples,
		};

		if (!fr.sym) {
			snprintf(addr, sizeof(addr), "[unknown]");
			fr.sym = addr;
		}
		if (topview_add(tv, &s)) {
			np_ctl_top_free(&t);
			snprintf(err, errlen, "out of memory");
			return -1;
		}
	}
	if (d->have_last)
		np_ctl_top_free(&d->last);
	d->last = t;
	d->have_last = 1;
	return 0;
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
