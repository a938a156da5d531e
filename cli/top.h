/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Private to `nmiprof top`: the state cmd_top.c (options, sampling,
 * --stdio) and top_screen.c (the ncurses screen) share, as perf top's
 * builtin-top.c and ui/browsers/hists.c do.
 */
#ifndef NMIPROF_TOP_H
#define NMIPROF_TOP_H

#include <stddef.h>
#include <stdint.h>

#include "cli.h"

#define TOP_DECAY	(7.0 / 8.0)	/* per refresh, as perf top */
#define TOP_POLL_MS	50		/* key latency while sampling */

struct top {
	struct np_backend *b;
	struct np_symbolizer *syms;
	struct np_stacktab *st;		/* the samples' stacks (resolve.h) */
	struct topview *tv;
	struct cli_frames cf;
	struct topview_filter filter;
	enum topview_sort sort;
	struct topview_keys keys;	/* -s: what rows group by */
	uint64_t events_lost, add_failed;
	int decay, paused;
	int target_gone;		/* -p PID exited */
	struct top_daemon *daemon;	/* --daemon: rows from nmiprofd */
	uint32_t window_s;		/* --daemon: seconds the rows cover */
	int64_t pid_opt;		/* -p: with --daemon, a pid filter */
	unsigned delay_s;
	uint32_t freq_hz;		/* asked of the backend, per CPU */
	size_t stdio_rows;
	char zoom_dso[256];		/* screen's d: only this object's rows */
	char message[256];		/* a warning or error for the screen */
};

/* Poll and drain for up to ms; returns <0 on a backend failure. */
int top_pump(struct top *t, int ms);
/* --daemon: this refresh's rows.  0, or -1 with t->message set. */
int top_refresh(struct top *t);
/* t->filter into the view (and a new query of the daemon). */
void top_apply_filter(struct top *t);
/* Line 1: where the samples come from and how many; line 2: the view. */
void top_header(struct top *t, char *l1, size_t n1, char *l2, size_t n2);

/* The full screen until q or a signal (top_screen.c); an exit code. */
int top_screen_run(struct top *t);

/* ---- the daemon as the source (top_daemon.c) ---------------------- */

struct top_daemon;
/* Connects and reads the daemon's status; NULL with err on failure. */
struct top_daemon *top_daemon_open(const char *sock, char *err, size_t errlen);
void top_daemon_close(struct top_daemon *d);
/* Replaces tv's contents with the daemon's last secs seconds. */
int top_daemon_fill(struct top_daemon *d, const struct topview_filter *f,
		    uint32_t secs, struct topview *tv, char *err, size_t errlen);
void top_daemon_header(const struct top_daemon *d, double shown, char *buf,
		       size_t len);

#endif /* NMIPROF_TOP_H */
