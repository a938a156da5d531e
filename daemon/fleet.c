// SPDX-License-Identifier: GPL-2.0
/*
 * The fleet exporter (see fleet.h).
 *
 * One pass, run when a slice was written or a retry is due: list the
 * store, count what retention removed unsent, then send the slices past
 * the cursor, oldest first, in batches: read each back, build its rows,
 * insert stacks, samples and finally the slices' rows (which commit
 * them, see lib/include/np_fleet.h), then move the cursor.  A failure
 * stops the pass and the next one starts from the same slice after a
 * backoff.  After a start, a new URL or a failure, the server is first
 * asked which of the next slices it already holds (the crash between an
 * insert and the cursor write, or a reply lost): those are not sent again.
 *
 * The drain thread only kicks and reads the status; the store is read
 * like any reader does (segments appear atomically).
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <signal.h>
#include <unistd.h>
#include <sys/random.h>

#include "fleet.h"
#include "lockstore.h"
#include "np_fleet.h"
#include "np_log.h"
#include "store.h"
#include "np_clock.h"
#include "np_fileio.h"

#define NS_PER_SEC		((uint64_t)1000000000)
#define FLEET_BACKOFF_MIN_NS	(1 * NS_PER_SEC)
#define FLEET_BACKOFF_MAX_NS	(60 * NS_PER_SEC)
#define FLEET_CURSOR		"fleet.cursor"
/* Stacks known to be on the server: forgotten every hour (partitions are
 * days: a stack must be in every day that refers to it) or when full. */
#define FLEET_KNOWN_MAX		(1U << 18)
#define FLEET_KNOWN_PERIOD_S	3600

enum fleet_state { FLEET_OFF, FLEET_OK, FLEET_FAILING };
static const char *const fleet_state_name[] = { "off", "ok", "failing" };

struct fleet_seg {
	char name[32];
	uint64_t start_ns, end_ns, samples;
};

struct fleet_segs {
	struct fleet_seg *v;
	size_t n, cap;
};

/*
 * The durable part: <store>/fleet.cursor.  It holds for one server and
 * database: another one starts from the oldest slice in the store.
 */
struct fleet_cursor {
	char server[300];		/* "<url without user> <database>" */
	uint64_t start_ns;		/* newest slice acknowledged */
	uint64_t lockup_ns;		/* newest lockup acknowledged */
	uint64_t lost_slices, lost_samples;
};

struct npd_fleet {
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	/* under lock */
	struct npd_config cfg;
	unsigned int cfg_gen;
	int kicked;
	volatile int stop;		/* also libcurl's cancel flag */
	enum fleet_state state;
	char error[256];
	char url[256], host[128];
	struct fleet_cursor cur;
	uint64_t backlog, sent_slices, sent_samples;
	size_t mem;

	/* the thread's own */
	unsigned int used_gen;
	struct np_ch *ch;
	struct npd_config tc;		/* the configuration in use */
	char host_label[128];
	struct fleet_segs pending;	/* last pass's slices past the cursor */
	struct np_agg *agg;
	struct np_store_reader *rd;	/* kept: its dictionary and maps */
	struct np_fleet_rows rows;
	uint64_t *known;		/* open addressing, 0: empty */
	size_t nr_known;
	uint64_t known_gen;		/* changes when known forgets */
	uint64_t known_period;
	uint64_t backoff_ns, next_try_ns;	/* CLOCK_MONOTONIC */
	int cursor_loaded;
	int need_check;			/* ask the server before sending */
	int need_columns;		/* ask which columns frames has */
	int build_ids;			/* frames has build_id */
	int lockup_flags;		/* lockups has flags */
};

/* ---- stacks the server has -------------------------------------------- */

static int fleet_known(void *arg, uint64_t h)
{
	struct npd_fleet *f = arg;
	size_t i;

	h = h ? h : 1;
	for (i = h & (FLEET_KNOWN_MAX - 1); f->known[i];
	     i = (i + 1) & (FLEET_KNOWN_MAX - 1))
		if (f->known[i] == h)
			return 1;
	return 0;
}

/* The rows' memo of what known() said goes with it. */
static void fleet_forget_known(struct npd_fleet *f)
{
	memset(f->known, 0, FLEET_KNOWN_MAX * sizeof(*f->known));
	f->nr_known = 0;
	f->known_gen++;
}

static void fleet_remember(struct npd_fleet *f, const uint64_t *hs, size_t n)
{
	for (size_t k = 0; k < n; k++) {
		uint64_t h = hs[k] ? hs[k] : 1;
		size_t i;

		if (f->nr_known * 2 >= FLEET_KNOWN_MAX)
			fleet_forget_known(f);
		for (i = h & (FLEET_KNOWN_MAX - 1); f->known[i] && f->known[i] != h;
		     i = (i + 1) & (FLEET_KNOWN_MAX - 1))
			;
		if (!f->known[i]) {
			f->known[i] = h;
			f->nr_known++;
		}
	}
}

/* ---- the cursor ------------------------------------------------------- */

static void fleet_cursor_load(struct npd_fleet *f)
{
	char path[1100], line[512];
	struct fleet_cursor c = { 0 };
	FILE *fp;

	snprintf(path, sizeof(path), "%s/" FLEET_CURSOR, f->tc.store_dir);
	fp = fopen(path, "re");
	if (fp) {
		while (fgets(line, sizeof(line), fp)) {
			unsigned long long v;

			if (!strncmp(line, "server=", 7))
				snprintf(c.server, sizeof(c.server), "%.*s",
					 (int)strcspn(line + 7, "\n"), line + 7);
			else if (sscanf(line, "start_ns=%llu", &v) == 1)
				c.start_ns = v;
			else if (sscanf(line, "lockup_ns=%llu", &v) == 1)
				c.lockup_ns = v;
			else if (sscanf(line, "lost_slices=%llu", &v) == 1)
				c.lost_slices = v;
			else if (sscanf(line, "lost_samples=%llu", &v) == 1)
				c.lost_samples = v;
		}
		fclose(fp);
	}
	pthread_mutex_lock(&f->lock);
	f->cur = c;
	pthread_mutex_unlock(&f->lock);
	f->cursor_loaded = 1;
}

/* Durable before the next slice is sent: a crash re-sends at most one. */
static int fleet_cursor_save(struct npd_fleet *f, const struct fleet_cursor *c)
{
	char buf[512];
	int n, ret;

	n = snprintf(buf, sizeof(buf),
		     "server=%s\nstart_ns=%" PRIu64 "\nlockup_ns=%" PRIu64
		     "\nlost_slices=%" PRIu64 "\nlost_samples=%" PRIu64 "\n",
		     c->server, c->start_ns, c->lockup_ns, c->lost_slices,
		     c->lost_samples);
	ret = np_write_atomic(f->tc.store_dir, FLEET_CURSOR, buf, (size_t)n);
	pthread_mutex_lock(&f->lock);
	f->cur = *c;
	pthread_mutex_unlock(&f->lock);
	return ret;
}

static void fleet_save(struct npd_fleet *f, const struct fleet_cursor *c)
{
	if (fleet_cursor_save(f, c))
		np_warn("fleet: cannot write %s/" FLEET_CURSOR "; a restart may send slices again (deduplicated)",
			f->tc.store_dir);
}

/*
 * Tie the cursor to the server and database in use.  A cursor of another
 * one says nothing of what this one holds: start again from the oldest
 * slice (the committed check skips what it has already).  A cursor
 * without a server (written before it was recorded) is taken as this
 * one's.  What retention removed unsent stays counted.
 */
static void fleet_cursor_bind(struct npd_fleet *f)
{
	struct fleet_cursor c;
	char server[sizeof(c.server)];

	snprintf(server, sizeof(server), "%s %s", np_ch_url(f->ch),
		 np_ch_database(f->ch));
	pthread_mutex_lock(&f->lock);
	c = f->cur;
	pthread_mutex_unlock(&f->lock);
	if (!strcmp(c.server, server))
		return;
	if (c.server[0] && (c.start_ns || c.lockup_ns))
		np_info("fleet: the cursor was for %s, not %s: sending the store from its oldest slice",
			c.server, server);
	if (c.server[0]) {
		c.start_ns = 0;
		c.lockup_ns = 0;
	}
	snprintf(c.server, sizeof(c.server), "%s", server);
	fleet_save(f, &c);
}

/* ---- state changes: one log line each --------------------------------- */

static void fleet_set_state(struct npd_fleet *f, enum fleet_state s,
			    const char *why)
{
	enum fleet_state old;

	pthread_mutex_lock(&f->lock);
	old = f->state;
	f->state = s;
	snprintf(f->error, sizeof(f->error), "%s", why ? why : "");
	pthread_mutex_unlock(&f->lock);
	if (old == s)
		return;
	if (s == FLEET_FAILING)
		np_err("fleet: export to %s fails: %s (slices wait in the store; retrying with backoff)",
		       f->url, why);
	else if (s == FLEET_OK && old == FLEET_FAILING)
		np_info("fleet: export to %s works again", f->url);
}

static void fleet_failed(struct npd_fleet *f, const char *why)
{
	if (f->stop)
		return;		/* a transfer cancelled by the shutdown */
	fleet_set_state(f, FLEET_FAILING, why);
	f->backoff_ns = f->backoff_ns ? f->backoff_ns * 2 : FLEET_BACKOFF_MIN_NS;
	if (f->backoff_ns > FLEET_BACKOFF_MAX_NS)
		f->backoff_ns = FLEET_BACKOFF_MAX_NS;
	f->next_try_ns = np_mono_ns() + f->backoff_ns;
}

/* ---- configuration ---------------------------------------------------- */

/* (Re)connect with the current configuration.  0, or -1 (failed, logged). */
static int fleet_connect(struct npd_fleet *f)
{
	char pw[NP_CH_PASSWORD_MAX] = "", err[512];
	struct np_ch_opts o = { 0 };
	int url_changed;

	pthread_mutex_lock(&f->lock);
	url_changed = strcmp(f->tc.clickhouse_url, f->cfg.clickhouse_url) != 0;
	f->tc = f->cfg;
	f->used_gen = f->cfg_gen;
	pthread_mutex_unlock(&f->lock);

	np_ch_close(f->ch);
	f->ch = NULL;
	np_store_reader_close(f->rd);	/* the store may be another one */
	f->rd = NULL;
	if (!f->cursor_loaded)
		fleet_cursor_load(f);
	if (f->tc.host_label[0])
		snprintf(f->host_label, sizeof(f->host_label), "%s", f->tc.host_label);
	else if (gethostname(f->host_label, sizeof(f->host_label) - 1))
		snprintf(f->host_label, sizeof(f->host_label), "unknown");
	pthread_mutex_lock(&f->lock);
	snprintf(f->host, sizeof(f->host), "%s", f->host_label);
	pthread_mutex_unlock(&f->lock);
	if (!f->tc.clickhouse_url[0]) {
		fleet_set_state(f, FLEET_OFF, NULL);
		return -1;
	}
	if (f->tc.clickhouse_password_file[0] &&
	    np_ch_read_password(f->tc.clickhouse_password_file, pw, sizeof(pw),
				err, sizeof(err))) {
		pthread_mutex_lock(&f->lock);
		snprintf(f->url, sizeof(f->url), "%s", "(not connected)");
		pthread_mutex_unlock(&f->lock);
		fleet_failed(f, err);
		return -1;
	}
	o.url = f->tc.clickhouse_url;
	o.password = pw[0] ? pw : NULL;
	o.timeout_s = f->tc.clickhouse_timeout_s;
	o.connect_timeout_s = f->tc.clickhouse_timeout_s < 5 ?
			      f->tc.clickhouse_timeout_s : 5;
	o.cancel = &f->stop;
	/* Acknowledged means on the shard, where the committed check looks. */
	o.params = "insert_distributed_sync=1";
	f->ch = np_ch_open(&o, err, sizeof(err));
	explicit_bzero(pw, sizeof(pw));
	if (!f->ch) {
		pthread_mutex_lock(&f->lock);
		snprintf(f->url, sizeof(f->url), "%s", "(bad URL)");
		pthread_mutex_unlock(&f->lock);
		fleet_failed(f, err);
		return -1;
	}
	pthread_mutex_lock(&f->lock);
	snprintf(f->url, sizeof(f->url), "%s", np_ch_url(f->ch));
	if (f->state == FLEET_OFF)
		f->state = FLEET_OK;
	pthread_mutex_unlock(&f->lock);
	fleet_cursor_bind(f);
	if (url_changed)
		fleet_forget_known(f);
	f->need_check = 1;
	f->need_columns = 1;
	np_info("fleet: exporting slices to %s as host '%s'%s%s", f->url,
		f->host_label, f->tc.labels[0] ? ", labels " : "", f->tc.labels);
	return 0;
}

/* ---- one pass --------------------------------------------------------- */

static int fleet_list_fn(const char *name, const struct np_seg_info *in,
			 void *arg)
{
	struct fleet_segs *l = arg;

	if (l->n == l->cap) {
		size_t nc = l->cap ? l->cap * 2 : 256;
		struct fleet_seg *v = realloc(l->v, nc * sizeof(*v));

		if (!v)
			return -ENOMEM;
		l->v = v;
		l->cap = nc;
	}
	snprintf(l->v[l->n].name, sizeof(l->v[l->n].name), "%s", name);
	l->v[l->n].start_ns = in->start_ns;
	l->v[l->n].end_ns = in->end_ns;
	l->v[l->n].samples = in->samples;
	l->n++;
	return 0;
}

static void fleet_ignore_warn(void *arg, const char *msg)
{
	(void)arg;
	(void)msg;	/* damaged segments: counted when read */
}

static int fleet_has_start(const struct fleet_segs *l, uint64_t start)
{
	size_t lo = 0, hi = l->n;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (l->v[mid].start_ns < start)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < l->n && l->v[lo].start_ns == start;
}

/*
 * The slices past the cursor, oldest first; those of the last pass that
 * are gone unsent were removed by retention: count them.
 */
static int fleet_scan(struct npd_fleet *f, struct fleet_cursor *c,
		      struct fleet_segs *now)
{
	char err[256];
	size_t keep = 0;
	int lost = 0;

	now->n = 0;
	if (np_store_list(f->tc.store_dir, fleet_list_fn, now, fleet_ignore_warn,
			  NULL, err, sizeof(err)))
		return -1;
	for (size_t i = 0; i < now->n; i++)
		if (now->v[i].start_ns > c->start_ns)
			now->v[keep++] = now->v[i];
	now->n = keep;
	for (size_t i = 0; i < f->pending.n; i++) {
		const struct fleet_seg *p = &f->pending.v[i];

		if (p->start_ns <= c->start_ns || fleet_has_start(now, p->start_ns))
			continue;
		c->lost_slices++;
		c->lost_samples += p->samples;
		lost++;
	}
	if (lost)
		np_warn("fleet: retention removed %d slice(s) before they were sent (%" PRIu64
			" slices, %" PRIu64 " samples lost to the fleet so far)",
			lost, c->lost_slices, c->lost_samples);
	/* now becomes the pending list; the old one's memory is reused. */
	{
		struct fleet_segs t = f->pending;

		f->pending = *now;
		*now = t;
	}
	return lost;
}

static uint64_t fleet_batch_id(void)
{
	uint64_t b = 0;

	if (getrandom(&b, sizeof(b), 0) != sizeof(b))
		b = np_mono_ns() ^ ((uint64_t)getpid() << 32);
	return b;
}

/*
 * A backlog goes in batches: up to this many slices, or this many bytes
 * of sample rows, per insert (one part on the server, not one per slice).
 */
#define FLEET_BATCH_SLICES	64
#define FLEET_BATCH_BYTES	(8U << 20)

/* Is a batch of s committed already?  1 yes, 0 no, -1 failed (logged). */
static int fleet_committed(struct npd_fleet *f, const struct fleet_seg *s)
{
	char err[512];
	int ret = np_fleet_committed(f->ch, f->host_label, s->start_ns, err,
				     sizeof(err));

	if (ret < 0)
		fleet_failed(f, err);
	return ret;
}

int npd_fleet_read_slice(struct np_store_reader *rd, const char *name,
			 struct np_agg *a, struct np_read_stats *st,
			 char *err, size_t errlen)
{
	int ret;

	np_agg_reset(a);
	err[0] = 0;
	ret = np_store_reader_read(rd, name, a, st, err, errlen);
	if (!ret)
		return 0;
	if (np_store_err_transient(ret))
		return -1;
	if (ret == -ENOENT)
		err[0] = 0;
	return 1;
}

/* Add one slice to the batch.  0 added, 1 gone (lost), -1 failed. */
static int fleet_add(struct npd_fleet *f, struct np_store_reader *rd,
		     const struct fleet_seg *s, uint64_t *samples)
{
	struct np_fleet_slice sl = { 0 };
	struct np_read_stats st;
	char err[512];
	int ret;

	ret = npd_fleet_read_slice(rd, s->name, f->agg, &st, err, sizeof(err));
	if (ret < 0) {
		fleet_failed(f, err);
		return -1;
	}
	if (ret > 0) {
		if (err[0])
			np_warn("fleet: %s cannot be read, not sent: %s", s->name, err);
		return 1;
	}
	if (s->start_ns / NS_PER_SEC / FLEET_KNOWN_PERIOD_S != f->known_period) {
		f->known_period = s->start_ns / NS_PER_SEC / FLEET_KNOWN_PERIOD_S;
		fleet_forget_known(f);
		f->need_columns = 1;
	}
	sl.host = f->host_label;
	sl.labels = f->tc.labels;
	sl.start_ns = s->start_ns;
	sl.end_ns = s->end_ns;
	sl.batch = fleet_batch_id();
	sl.samples = st.samples;
	sl.lost = st.lost;
	f->rows.known_gen = f->known_gen;
	if (np_fleet_rows_build(&f->rows, f->agg, &sl, fleet_known, f)) {
		fleet_failed(f, "out of memory building the rows");
		return -1;
	}
	*samples += st.samples;
	return 0;
}

struct lockup_ctx {
	struct npd_fleet *f;
	struct np_buf body;
	uint64_t after, newest;
};

static int fleet_lockup_row(const struct np_lockup_rec *r, void *arg)
{
	struct lockup_ctx *c = arg;
	struct np_buf *b = &c->body;

	if (r->wall_ns <= c->after)
		return 0;
	if (r->wall_ns > c->newest)
		c->newest = r->wall_ns;
	np_ch_buf_printf(b, "%" PRIu64 "\t", r->wall_ns / NS_PER_SEC);
	np_ch_buf_tsv(b, c->f->host_label);
	np_buf_puts(b, "\t", 1);
	np_ch_buf_tsv(b, r->id);
	np_ch_buf_printf(b, "\t%u\t%u\t%u\t", r->cpu, r->pid, r->tid);
	np_ch_buf_tsv(b, r->comm);
	np_ch_buf_printf(b, "\t%" PRIu64 "\t[", r->stuck_ns);
	for (uint32_t i = 0; i < r->nr_frames; i++)
		np_ch_buf_printf(b, "%s%d", i ? "," : "", r->frames[i].kernel ? 1 : 0);
	np_ch_buf_str(b, "]\t[");
	for (uint32_t i = 0; i < r->nr_frames; i++) {
		np_ch_buf_str(b, i ? "," : "");
		np_ch_buf_sql_str(b, r->frames[i].dso ? r->frames[i].dso : "[unknown]");
	}
	np_ch_buf_str(b, "]\t[");
	for (uint32_t i = 0; i < r->nr_frames; i++) {
		np_ch_buf_str(b, i ? "," : "");
		np_ch_buf_sql_str(b, r->frames[i].name ? r->frames[i].name : "");
	}
	np_ch_buf_str(b, "]\t[");
	for (uint32_t i = 0; i < r->nr_frames; i++)
		np_ch_buf_printf(b, "%s%" PRIu64, i ? "," : "", r->frames[i].offset);
	np_ch_buf_str(b, "]");
	if (c->f->lockup_flags)
		np_ch_buf_printf(b, "\t%u", r->flags);
	np_ch_buf_str(b, "\n");
	return 0;
}

/* Lockups newer than the cursor: few, so all in one insert. */
static int fleet_send_lockups(struct npd_fleet *f, struct fleet_cursor *c)
{
	struct lockup_ctx lc = { .f = f, .after = c->lockup_ns };
	char err[512], sql[256];
	int ret = 0;

	lc.newest = c->lockup_ns;
	if (np_lockstore_list(f->tc.store_dir, fleet_lockup_row, &lc,
			      fleet_ignore_warn, NULL, err, sizeof(err)))
		return 0;	/* no lockups directory yet */
	if (lc.body.oom) {
		fleet_failed(f, "out of memory building lockup rows");
		ret = -1;
	} else if (lc.body.len) {
		snprintf(sql, sizeof(sql),
			 "INSERT INTO %s.lockups (time, host, id, cpu, pid, tid, comm,"
			 " stuck_ns, kernel, dsos, funcs, offsets%s) FORMAT TabSeparated",
			 np_ch_database(f->ch), f->lockup_flags ? ", flags" : "");
		ret = np_ch_exec(f->ch, sql, lc.body.p, lc.body.len, NULL, err,
				 sizeof(err));
		if (ret) {
			fleet_failed(f, err);
			f->need_columns = 1;
		}
		else
			c->lockup_ns = lc.newest;
	}
	np_buf_free(&lc.body);
	return ret;
}

/* One line for a run of slices the committed check skipped, up to i. */
static void fleet_log_held(struct npd_fleet *f, size_t held, size_t i)
{
	if (held)
		np_info("fleet: %zu slice(s) up to %s were already on the server, not sent again",
			held, f->pending.v[i - 1].name);
}

/* Which later columns the server has.  0, or -1 (failed, logged). */
static int fleet_columns(struct npd_fleet *f)
{
	char err[512];
	int bid = np_fleet_has_column(f->ch, "frames", "build_id", err,
				      sizeof(err));
	int flags = bid < 0 ? bid : np_fleet_has_column(f->ch, "lockups", "flags",
							err, sizeof(err));

	if (flags < 0) {
		fleet_failed(f, err);
		return -1;
	}
	f->build_ids = bid;
	f->lockup_flags = flags;
	f->need_columns = 0;
	return 0;
}

static void fleet_pass(struct npd_fleet *f)
{
	struct fleet_segs now = { 0 };
	struct fleet_cursor c;
	size_t i = 0, held = 0;
	int lost, failed = 0;

	pthread_mutex_lock(&f->lock);
	c = f->cur;
	pthread_mutex_unlock(&f->lock);
	lost = fleet_scan(f, &c, &now);
	free(now.v);
	if (lost > 0)
		fleet_save(f, &c);
	if (lost < 0)
		return;
	pthread_mutex_lock(&f->lock);
	f->backlog = f->pending.n;
	pthread_mutex_unlock(&f->lock);
	/*
	 * A server whose schema predates frames.build_id or lockups.flags
	 * takes rows without them (until `cluster init` adds them: asked
	 * again after each failure and every hour).
	 */
	if (f->need_columns && fleet_columns(f))
		return;
	/*
	 * Kept open: the epoch's dictionary stays decoded and mapped to
	 * agg's ids, so a slice costs the decoding of its own records.
	 */
	if (!f->rd && !(f->rd = np_store_reader_open(f->tc.store_dir))) {
		fleet_failed(f, "out of memory");
		return;
	}
	while (i < f->pending.n && !f->stop && !failed) {
		uint64_t samples = 0, nsent = 0;
		size_t j = i;
		int ret;

		/*
		 * After a start or a failure the server may hold slices the
		 * cursor does not know of (an insert acknowledged just before
		 * a crash, or whose reply was lost): skip those.
		 */
		if (f->need_check) {
			ret = fleet_committed(f, &f->pending.v[i]);
			if (ret < 0) {
				failed = 1;
				break;
			}
			if (ret > 0) {
				c.start_ns = f->pending.v[i++].start_ns;
				fleet_save(f, &c);
				held++;
				continue;
			}
			f->need_check = 0;
			fleet_log_held(f, held, i);
			held = 0;
		}
		np_fleet_rows_reset(&f->rows);
		f->rows.build_ids = f->build_ids;
		for (; j < f->pending.n && j - i < FLEET_BATCH_SLICES &&
		       f->rows.samples.len < FLEET_BATCH_BYTES; j++) {
			ret = fleet_add(f, f->rd, &f->pending.v[j], &samples);
			if (ret < 0) {
				failed = 1;
				break;
			}
			if (ret > 0) {	/* gone or unreadable: lost to the fleet */
				c.lost_slices++;
				c.lost_samples += f->pending.v[j].samples;
			} else {
				nsent++;
			}
		}
		if (failed)
			break;
		if (nsent) {
			char err[512];

			if (np_fleet_insert(f->ch, &f->rows, err, sizeof(err))) {
				fleet_failed(f, err);
				f->need_check = 1;
				f->need_columns = 1;
				failed = 1;
				break;
			}
			fleet_remember(f, f->rows.new_ids, f->rows.nr_new);
		}
		c.start_ns = f->pending.v[j - 1].start_ns;
		fleet_save(f, &c);
		pthread_mutex_lock(&f->lock);
		f->sent_slices += nsent;
		f->sent_samples += samples;
		f->backlog = f->pending.n - j;
		pthread_mutex_unlock(&f->lock);
		i = j;
	}
	fleet_log_held(f, held, i);
	if (!failed && !f->stop && !fleet_send_lockups(f, &c))
		fleet_save(f, &c);
	if (failed || f->stop)
		return;
	f->backoff_ns = 0;
	f->next_try_ns = 0;
	fleet_set_state(f, FLEET_OK, NULL);
	pthread_mutex_lock(&f->lock);
	f->backlog = 0;
	f->mem = f->rows.samples.cap + f->rows.stacks.cap + f->rows.frames.cap +
		 f->rows.slice.cap + np_idx_mem(&f->rows.new_idx) +
		 f->rows.cap_new * sizeof(uint64_t) + np_agg_mem(f->agg) +
		 np_idx_mem(&f->rows.memo_idx) +
		 f->rows.cap_memo * sizeof(*f->rows.memo) +
		 FLEET_KNOWN_MAX * sizeof(uint64_t);
	pthread_mutex_unlock(&f->lock);
}

static void *fleet_main(void *arg)
{
	struct npd_fleet *f = arg;

	pthread_mutex_lock(&f->lock);
	while (!f->stop) {
		uint64_t now = np_mono_ns();
		int run;

		/* New settings, or a retry of a connection that failed
		 * (a password file fixed since, say). */
		if (f->cfg_gen != f->used_gen ||
		    (!f->ch && f->tc.clickhouse_url[0] && now >= f->next_try_ns)) {
			pthread_mutex_unlock(&f->lock);
			fleet_connect(f);
			pthread_mutex_lock(&f->lock);
			f->kicked = 1;
		}
		/* In backoff, a new slice waits for the retry. */
		run = f->ch && (f->next_try_ns ? now >= f->next_try_ns : f->kicked);
		if (run) {
			f->kicked = 0;
			pthread_mutex_unlock(&f->lock);
			fleet_pass(f);
			pthread_mutex_lock(&f->lock);
			continue;
		}
		{
			uint64_t until = f->next_try_ns ? f->next_try_ns :
					 now + 10 * NS_PER_SEC;
			struct timespec ts = {
				.tv_sec = (time_t)(until / NS_PER_SEC),
				.tv_nsec = (long)(until % NS_PER_SEC),
			};

			pthread_cond_timedwait(&f->cond, &f->lock, &ts);
		}
	}
	pthread_mutex_unlock(&f->lock);
	return NULL;
}

/* ---- the drain thread's side ------------------------------------------ */

struct npd_fleet *npd_fleet_start(const struct npd_config *cfg)
{
	struct npd_fleet *f = calloc(1, sizeof(*f));
	sigset_t all, old;
	pthread_condattr_t ca;
	int rc;

	if (!f)
		return NULL;
	f->agg = np_agg_new(NULL);
	f->known = calloc(FLEET_KNOWN_MAX, sizeof(*f->known));
	if (!f->agg || !f->known)
		goto fail;
	pthread_mutex_init(&f->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&f->cond, &ca);
	pthread_condattr_destroy(&ca);
	f->cfg = *cfg;
	f->cfg_gen = 1;
	f->kicked = 1;
	f->need_check = 1;
	f->known_gen = 1;
	/* Signals are the drain thread's (signalfd): none for this one. */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	rc = pthread_create(&f->thread, NULL, fleet_main, f);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc) {
		pthread_cond_destroy(&f->cond);
		pthread_mutex_destroy(&f->lock);
		goto fail;
	}
	pthread_setname_np(f->thread, "nmiprofd-fleet");
	return f;
fail:
	np_agg_free(f->agg);
	free(f->known);
	free(f);
	return NULL;
}

void npd_fleet_configure(struct npd_fleet *f, const struct npd_config *cfg)
{
	pthread_mutex_lock(&f->lock);
	if (strcmp(f->cfg.clickhouse_url, cfg->clickhouse_url) ||
	    strcmp(f->cfg.clickhouse_password_file, cfg->clickhouse_password_file) ||
	    strcmp(f->cfg.host_label, cfg->host_label) ||
	    strcmp(f->cfg.labels, cfg->labels) ||
	    f->cfg.clickhouse_timeout_s != cfg->clickhouse_timeout_s) {
		f->cfg = *cfg;
		f->cfg_gen++;
		f->next_try_ns = 0;	/* try the new settings now */
		f->backoff_ns = 0;
		pthread_cond_signal(&f->cond);
	}
	pthread_mutex_unlock(&f->lock);
}

void npd_fleet_kick(struct npd_fleet *f)
{
	pthread_mutex_lock(&f->lock);
	f->kicked = 1;
	pthread_cond_signal(&f->cond);
	pthread_mutex_unlock(&f->lock);
}

void npd_fleet_stop(struct npd_fleet *f)
{
	if (!f)
		return;
	pthread_mutex_lock(&f->lock);
	f->stop = 1;
	pthread_cond_signal(&f->cond);
	pthread_mutex_unlock(&f->lock);
	pthread_join(f->thread, NULL);
	np_ch_close(f->ch);
	np_store_reader_close(f->rd);
	np_fleet_rows_free(&f->rows);
	np_agg_free(f->agg);
	free(f->pending.v);
	free(f->known);
	pthread_cond_destroy(&f->cond);
	pthread_mutex_destroy(&f->lock);
	free(f);
}

void npd_fleet_status(struct npd_fleet *f, struct np_ctl_status *st)
{
	pthread_mutex_lock(&f->lock);
	snprintf(st->fleet, sizeof(st->fleet), "%s", fleet_state_name[f->state]);
	snprintf(st->fleet_url, sizeof(st->fleet_url), "%s", f->url);
	snprintf(st->fleet_host, sizeof(st->fleet_host), "%s", f->host);
	snprintf(st->fleet_error, sizeof(st->fleet_error), "%s", f->error);
	st->fleet_cursor_ns = f->cur.start_ns;
	st->fleet_backlog = f->backlog;
	st->fleet_sent_slices = f->sent_slices;
	st->fleet_sent_samples = f->sent_samples;
	st->fleet_lost_slices = f->cur.lost_slices;
	st->fleet_lost_samples = f->cur.lost_samples;
	pthread_mutex_unlock(&f->lock);
}

size_t npd_fleet_mem(struct npd_fleet *f)
{
	size_t m;

	pthread_mutex_lock(&f->lock);
	m = f->mem;
	pthread_mutex_unlock(&f->lock);
	return m;
}
