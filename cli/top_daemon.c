// SPDX-License-Identifier: GPL-2.0
/*
 * `nmiprof top --daemon`: the samples come from nmiprofd's live "stacks"
 * query (np_ctl.h) instead of an in-process backend, so top costs the
 * machine nothing extra while a daemon runs.
 *
 * The daemon answers with whole symbolized stacks per (pid, comm, cpu)
 * over the last --window seconds, and each refresh replaces the topview's
 * buckets with them (lib/ctl/topview_ctl.c): rows, children, pid and comm
 * columns, the call graph and the k/u frame toggles are the in-process
 * top's, computed by the same lib/topview.  The cpu/pid/comm filters
 * are evaluated by the daemon (they shrink the reply); the n most
 * frequent stacks are sent and the rest arrives as one sum, shown as an
 * "[other stacks]" row so that percentages stay shares of every
 * matching sample.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "top.h"
#include "np_ctl.h"
#include "topview_ctl.h"

struct top_daemon {
	struct np_ctl_client *c;
	const char *sock;
	struct np_ctl_status st;
	/* the last reply's window: seconds covered, samples, lost */
	uint32_t secs;
	uint64_t samples, lost;
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
	if (d->c)
		np_ctl_close(d->c);
	free(d);
}

int top_daemon_fill(struct top_daemon *d, const struct topview_filter *f,
		    uint32_t secs, struct topview *tv, char *err, size_t errlen)
{
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
	ret = topview_load_stacks(tv, &t);
	d->secs = t.secs;
	d->samples = t.samples;
	d->lost = t.lost;
	np_ctl_stacks_free(&t);
	if (ret) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	return 0;
}

void top_daemon_header(const struct top_daemon *d, double shown, char *buf,
		       size_t len)
{
	snprintf(buf, len, "nmiprof top  source: nmiprofd pid %lld (%s, %s)  %u Hz  "
		 "CPUs: %u  window: %us  samples: %llu  lost: %llu  shown: %.0f",
		 (long long)d->st.pid, d->st.backend, d->st.source, d->st.freq_hz,
		 d->st.nr_cpus, d->secs, (unsigned long long)d->samples,
		 (unsigned long long)d->lost, shown);
}
