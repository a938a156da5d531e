/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Private to the nmiprof command: the subcommand table, exit codes and
 * the few helpers every subcommand shares.  Each subcommand lives in its
 * own cmd_<name>.c and gets (argc, argv) with argv[0] = its name.
 */
#ifndef NMIPROF_CLI_H
#define NMIPROF_CLI_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "symbolizer.h"
#include "topview.h"

/* Exit codes: documented in nmiprof.1 and `nmiprof help`. */
enum cli_exit {
	EXIT_OK = 0,
	EXIT_USAGE = 1,		/* bad command line */
	EXIT_NO_DAEMON = 2,	/* nmiprofd needed but not reachable */
	EXIT_NO_PERM = 3,	/* permission denied (perf_event_paranoid, /dev/nmiprof) */
	EXIT_NO_BACKEND = 4,	/* no module and no usable perf backend */
	EXIT_BAD_INPUT = 5,	/* input file or store missing, corrupt or foreign */
	EXIT_FAILURE_RT = 6,	/* anything else at run time: I/O, memory */
};

struct cli_cmd {
	const char *name;
	const char *summary;
	int (*run)(int argc, char **argv);
	void (*usage)(FILE *out);
};

int cmd_top(int argc, char **argv);
int cmd_record(int argc, char **argv);
int cmd_report(int argc, char **argv);
int cmd_export(int argc, char **argv);
int cmd_lockups(int argc, char **argv);
int cmd_status(int argc, char **argv);
int cmd_cluster(int argc, char **argv);
void usage_top(FILE *out);
void usage_record(FILE *out);
void usage_report(FILE *out);
void usage_export(FILE *out);
void usage_lockups(FILE *out);
void usage_status(FILE *out);
void usage_cluster(FILE *out);

/* "nmiprof: <cmd>: <message>" on stderr, one line. */
void cli_error(const char *cmd, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* Usage error: the message, then "Try 'nmiprof CMD --help'."; EXIT_USAGE. */
int cli_usage_error(const char *cmd, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/*
 * getopt_long's ':' (a missing value) or '?' (an unknown option) as the
 * usage error; argv[optind - 1] is the offending word.
 */
int cli_option_error(const char *cmd, int opt, char *const *argv);
/* Maps an errno from opening a backend/device to an exit code. */
int cli_exit_for_errno(int err);

/* Strict number parsing: the whole string, within [min, max]. */
int cli_parse_u64(const char *s, uint64_t min, uint64_t max, uint64_t *out);
/*
 * A point in time as CLOCK_REALTIME ns: "now", "@EPOCH" (seconds),
 * a duration ago ("90s", "10m", "2h", "1d"), or local "YYYY-MM-DD[ HH:MM[:SS]]"
 * (also with 'T').  0 on success.
 */
int cli_parse_time(const char *s, uint64_t now_ns, uint64_t *out);
void cli_format_time(uint64_t ns, char *buf, size_t len);

/*
 * Symbolized frames as topview frames.  A frame without a symbol is
 * named np_sym_unnamed() does ("libc.so.6+0x1a2b"), so it stays one
 * stable row; names holds those and must outlive the frames' use.
 */
struct cli_frames {
	struct np_frame *f;
	char (*names)[NP_SYM_UNNAMED_MAX];
	size_t cap;
};
int cli_frames_reserve(struct cli_frames *cf, size_t n);
void cli_frame_from_sym(struct cli_frames *cf, size_t i, const struct np_sym *s);
/* topview_add(), a sample without frames counted as one unknown frame. */
int cli_topview_add(struct topview *tv, struct topview_sample *ts);
void cli_frames_free(struct cli_frames *cf);

/* Where report/export/lockups read profiles from. */
struct cli_source {
	const char *file;	/* -i FILE, else the store directory */
	const char *store;	/* --store DIR, default NP_STORE_DEFAULT_DIR */
	uint64_t since_ns, until_ns;	/* 0: unbounded */
	int64_t pid;		/* -1: all; also pushed down to the reader */
	/* --cluster URL: ClickHouse instead of a file or the store */
	const char *cluster;
	const char *password_file;
	const char *hosts[32];	/* --host GLOB, any of them */
	unsigned int nr_hosts;
	const char *labels[32];	/* --label K=V, all of them */
	unsigned int nr_labels;
	int by_pid;		/* rows per pid (--sort pid, --pid): else pid 0 */
	/*
	 * --cluster: the view is only the first max_rows rows (0: all) in
	 * this order, no call graph: the server ranks them.
	 */
	int rows_only;
	enum topview_sort order;
	size_t max_rows;
};

/* Long options shared by report and export (short ones: i, K, U). */
enum cli_opt {
	OPT_STORE = 256, OPT_SINCE, OPT_UNTIL, OPT_PID, OPT_COMM, OPT_CPU,
	OPT_PLIMIT, OPT_CLUSTER, OPT_HOST, OPT_LABEL, OPT_PWFILE,
	OPT_FIRST_FREE,
};

/* -K/--kernel or -U/--user into f; both given is a usage error. */
int cli_frames_option(const char *cmd, int opt, struct topview_filter *f);
/*
 * Handles a source or filter option of report/export.  Returns 0 if it
 * was one, -1 if not, or an exit code (after the error line) when its
 * argument is bad.
 */
int cli_source_option(const char *cmd, int opt, const char *arg,
		      struct cli_source *src, struct topview_filter *f);

struct cli_profile_info {
	uint32_t segments, skipped;
	uint64_t samples, lost;
	uint64_t first_ns, last_ns;
	uint64_t period_ns;	/* CPU time per sample, 0: not recorded */
	int period_mixed;	/* segments sampled at different rates */
};

/*
 * Loads every matching sample into tv.  Returns EXIT_OK, or an exit code
 * after printing one error line (unreadable input: EXIT_BAD_INPUT).
 */
int cli_load_profile(const char *cmd, const struct cli_source *src,
		     struct topview *tv, struct cli_profile_info *info);
/*
 * report's and export's view: checks that -i is not mixed with the store
 * range, makes a topview with filter f (set first, so rows are built once
 * while loading) and loads src into it.  EXIT_OK with *tv to free, or an
 * exit code after one error line.
 */
int cli_load_view(const char *cmd, const struct cli_source *src,
		  const struct topview_filter *f, const struct topview_keys *keys,
		  struct topview **tv, struct cli_profile_info *info);


/* ---- fleet profiles from ClickHouse (cluster_source.c) ------------ */

struct np_ch;
struct np_fleet_filter;
/* Connects to src->cluster with src->password_file.  NULL after one
 * error line, *exit_code set. */
struct np_ch *cli_cluster_open(const char *cmd, const struct cli_source *src,
			       int *exit_code);
void cli_cluster_filter(const struct cli_source *src, const struct topview_filter *f,
			struct np_fleet_filter *ff);
/* cli_load_profile for --cluster: the server aggregates, tv gets rows. */
int cli_load_cluster(const char *cmd, const struct cli_source *src,
		     struct topview *tv, struct cli_profile_info *info);
/* report --cluster --sort host: per-host samples of the rows matching
 * symbol (NULL: every sample), most first. */
int cli_report_by_host(const struct cli_source *src, const struct topview_filter *f,
		       const char *symbol, size_t max_rows);

/* ---- the hot-spot table, shared by report and top --stdio -------- */

enum cli_graph_order {
	CLI_GRAPH_CALLEE = 0,	/* root: the row; below: its callers (perf's default) */
	CLI_GRAPH_CALLER,	/* root: the row; below: what it calls */
};

struct cli_graph_opts {
	enum cli_graph_order order;
	unsigned depth;		/* levels below the row, 0: all */
	double limit;		/* prune branches below this % of all shown */
};

struct cli_table_opts {
	size_t max_rows;	/* 0: all */
	double percent_limit;	/* hide rows whose overhead is below, in % */
	int callgraph;		/* -g/-G: a call-graph tree under each row */
	struct cli_graph_opts graph;
	int chains;		/* --chains: call chains of each row's self samples */
	size_t graph_max;	/* --chains: chains per row, default 5 */
};

/*
 * One row formatted to width columns (0: no limit) without newline: the
 * weights, then a column per key of k (topview_keys()).
 */
void cli_format_row(char *buf, size_t len, const struct topview_keys *k,
		    const struct topview_row *r, double total, size_t width);
void cli_format_header(char *buf, size_t len, const struct topview_keys *k,
		       size_t width);
/* What ends a name cut to its column. */
#define CLI_CUT_MARK	".."
/* s left-aligned in width columns, cut with CLI_CUT_MARK if longer;
 * width 0: s whole. */
void cli_fit(char *buf, size_t len, const char *s, size_t width);
/* The table of the last topview_sort(). */
void cli_print_table(FILE *out, struct topview *tv,
		     const struct cli_table_opts *o);
const char *cli_basename(const char *path);
/* Rows, each with its call-graph tree (callgraph.c). */
void cli_print_graph(FILE *out, struct topview *tv,
		     const struct topview_row *const *rows, size_t nr,
		     const struct cli_graph_opts *o);
/* Rows with the call chains their self samples came through (callchains.c). */
void cli_print_chains(FILE *out, struct topview *tv,
		      const struct topview_row *const *rows, size_t nr, size_t max);

/* ---- sampling (top, record) --------------------------------------- */

struct np_backend;
struct np_backend_opts;

/* "kmod", "perf" (or "libperf"), "auto"; -1 if unknown. */
int cli_parse_backend(const char *s);
/*
 * perf's -m/--mmap-pages: a power of two of pages, or a size with B, K,
 * M or G rounded up to one.  0, or EXIT_USAGE after the error line.
 */
int cli_parse_mmap_pages(const char *cmd, const char *s, uint32_t *pages);
/* After sampling: a warning naming the ring size and how to grow it when
 * samples were lost (perf's "Processed N events and lost M chunks!"). */
void cli_backend_lost_warning(const char *cmd, struct np_backend *b,
			      uint64_t samples, uint64_t lost);
/*
 * Opens and starts; on failure prints one line and sets *exit_code.
 * Prints the backend's note (what it left out) as one line.
 */
struct np_backend *cli_backend_start(const char *cmd,
				     const struct np_backend_opts *o,
				     int *exit_code);
/* The backend samples no kernel frames (a note said why). */
int cli_backend_user_only(struct np_backend *b);
/* SIGINT/SIGTERM/SIGHUP set a flag instead of killing us (no SA_RESTART,
 * so a blocking poll returns). */
void cli_catch_signals(void);
int cli_interrupted(void);

#endif /* NMIPROF_CLI_H */
