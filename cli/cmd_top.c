// SPDX-License-Identifier: GPL-2.0
/*
 * nmiprof top: live hot spots, in the spirit of perf top.
 *
 * It needs no daemon: a backend runs in-process through libnmiprof
 * (auto: nmiprof.ko's rings when /dev/nmiprof exists, else perf events),
 * every sample is symbolized here and fed to a topview, and the view is
 * redrawn every -d seconds: on the full screen (top_screen.c), or, with
 * --stdio/--once, as the same table in text, never initialising ncurses.
 */
#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "top.h"
#include "np_backend.h"
#include "np_ctl.h"
#include "symbolizer.h"
#include "np_clock.h"
#include "resolve.h"

#define TOP_STDIO_ROWS	25
#define TOP_MAX_DEPTH	(2 * NMIPROF_MAX_FRAMES + 1)	/* all a resolved sample has */
#define TOP_STACKTAB_CAP	(64U << 20)	/* bytes of stack table kept */

void usage_top(FILE *out)
{
	fprintf(out,
		"Usage: nmiprof top [-F HZ] [-p PID] [-C CPUS] [-d SECS] [-m PAGES]\n"
		"                   [--backend kmod|perf] [-n ROWS] [-K | -U] [-s KEY]\n"
		"                   [--no-decay] [--stdio] [--once]\n\n"
		"Live hot spots, refreshed every -d seconds.  Runs its own sampling\n"
		"backend (no daemon needed): nmiprof.ko if /dev/nmiprof exists, else\n"
		"perf events.\n\n"
		"  -F, --freq HZ          samples per second per CPU (default 99)\n"
		"  -p, --pid PID          only this process\n"
		"  -C, --cpu CPUS         only these CPUs, e.g. 0,2-3\n"
		"  -d, --delay SECS       refresh period (default 2)\n"
		"  -m, --mmap-pages N     perf backend: ring pages per CPU, a power of\n"
		"                         two, or a size (512K, 4M) rounded up to one\n"
		"      --backend B        auto (default), kmod, perf\n"
		"  -n, --rows N           rows to print with --stdio/--once (default %d)\n"
		"  -K, --kernel           kernel frames only\n"
		"  -U, --user             user frames only\n"
		"  -s, --sort KEYS        what rows group by, as perf: a comma list of comm,\n"
		"                         pid, tid, cpu, dso, sym (default comm,pid,dso,sym);\n"
		"                         rows are ordered by self, or by children if the\n"
		"                         list has 'children'\n"
		"      --no-decay         start with decay off (key D toggles it)\n"
		"      --stdio            print the table every refresh, no full screen\n"
		"      --once             sample one period, print the table, exit\n"
		"      --daemon           samples from a running nmiprofd's live window\n"
		"                         (its stacks: the same rows, keys and call graph)\n"
		"      --socket PATH      nmiprofd's socket (default %s)\n"
		"      --window SECS      --daemon: seconds the rows cover (default 10)\n"
		"  -h, --help             this text\n\n"
		"Keys: Up/Down/PgUp/PgDn/Home/End move, Enter expands callers and callees\n"
		"(E/C: every row), s cycles the sort key, k/u toggle kernel/user frames,\n"
		"c/p/m filter by CPU/pid/comm, d/t zoom into the row's object/process,\n"
		"/ searches symbols, z zeroes, D toggles decay, P pauses, h shows help,\n"
		"q quits.\n", TOP_STDIO_ROWS, NP_CTL_DEFAULT_SOCKET);
}

enum { OPT_BACKEND = 256, OPT_STDIO, OPT_ONCE, OPT_NO_DECAY, OPT_DAEMON,
       OPT_SOCKET, OPT_WINDOW };

static const struct option top_opts[] = {
	{ "freq", required_argument, NULL, 'F' },
	{ "pid", required_argument, NULL, 'p' },
	{ "cpu", required_argument, NULL, 'C' },
	{ "delay", required_argument, NULL, 'd' },
	{ "mmap-pages", required_argument, NULL, 'm' },
	{ "backend", required_argument, NULL, OPT_BACKEND },
	{ "rows", required_argument, NULL, 'n' },
	{ "kernel", no_argument, NULL, 'K' },
	{ "user", no_argument, NULL, 'U' },
	/* the spellings before report's were taken for all (issue 15) */
	{ "kernel-only", no_argument, NULL, 'K' },
	{ "user-only", no_argument, NULL, 'U' },
	{ "sort", required_argument, NULL, 's' },
	{ "no-decay", no_argument, NULL, OPT_NO_DECAY },
	{ "stdio", no_argument, NULL, OPT_STDIO },
	{ "once", no_argument, NULL, OPT_ONCE },
	{ "daemon", no_argument, NULL, OPT_DAEMON },
	{ "socket", required_argument, NULL, OPT_SOCKET },
	{ "window", required_argument, NULL, OPT_WINDOW },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

/* ---- sampling ------------------------------------------------------ */

/* np_frame_fn of top: symbolized now, interned in top's own table. */
struct top_frame_ctx {
	struct top *t;
	uint32_t pid;
};

static uint32_t top_frame(void *arg, uint64_t addr, int kernel)
{
	struct top_frame_ctx *c = arg;
	struct np_sym sym;

	np_symbolize(c->t->syms, c->pid, addr, kernel, &sym);
	sym.kernel = kernel;
	return np_stacktab_frame(c->t->st, &sym);
}

static int add_sample(struct top *t, const struct np_ev_sample *s)
{
	struct top_frame_ctx ctx = { .t = t, .pid = s->pid };
	const struct np_sym *fr[TOP_MAX_DEPTH];
	struct topview_sample ts;
	uint32_t node;
	unsigned int n;

	/* Its strings are copied by topview: drop the table when it is big. */
	if (np_stacktab_mem(t->st) > TOP_STACKTAB_CAP)
		np_stacktab_clear(t->st);
	node = np_resolve_stack(t->st, s, top_frame, &ctx);
	if (node == NP_ID_NONE)
		return -ENOMEM;
	n = np_stacktab_walk(t->st, node, fr, TOP_MAX_DEPTH);
	if (cli_frames_reserve(&t->cf, n ? n : 1))
		return -ENOMEM;
	for (unsigned int i = 0; i < n; i++)
		cli_frame_from_sym(&t->cf, i, fr[i]);
	ts = (struct topview_sample){
		.cpu = s->cpu, .pid = s->pid, .tid = s->tid, .comm = s->comm,
		.frames = t->cf.f, .nr_frames = n, .weight = 1,
	};
	return cli_topview_add(t->tv, &ts);
}

static int on_event(const struct np_event *ev, void *arg)
{
	struct top *t = arg;

	switch (ev->type) {
	case NP_EV_SAMPLE:
		if (!t->paused && add_sample(t, &ev->sample))
			t->add_failed++;
		break;
	case NP_EV_LOST:
		t->events_lost += ev->lost.lost;
		break;
	case NP_EV_MMAP:
	case NP_EV_COMM:
	case NP_EV_FORK:
	case NP_EV_EXIT:
		np_symbolizer_event(t->syms, ev);
		break;
	default:
		break;
	}
	return 0;
}

int top_pump(struct top *t, int ms)
{
	int ret;

	if (t->target_gone || t->daemon) {
		/*
		 * Nothing to drain: the process is gone (keep the last view up
		 * for reading), or the daemon is asked at each refresh.
		 */
		usleep((useconds_t)ms * 1000);
		return 0;
	}
	ret = np_backend_poll(t->b, ms);
	if (ret == -ESRCH) {
		t->target_gone = 1;	/* the header says so from now on */
	} else if (ret < 0 && ret != -EINTR) {
		return ret;
	}
	ret = np_backend_drain(t->b, on_event, t);
	return ret < 0 && ret != -EINTR ? ret : 0;
}

int top_refresh(struct top *t)
{
	char err[200];

	if (!t->daemon)
		return 0;
	if (top_daemon_fill(t->daemon, &t->filter, t->window_s, t->tv, err,
			    sizeof(err))) {
		snprintf(t->message, sizeof(t->message), "nmiprofd: %s", err);
		return -1;
	}
	return 0;
}

void top_header(struct top *t, char *l1, size_t n1, char *l2, size_t n2)
{
	char filt[160] = "";
	size_t off = 0;

	if (t->daemon) {
		top_daemon_header(t->daemon, topview_total(t->tv), l1, n1);
	} else {
		struct np_backend_stats st;
		uint64_t lost;

		memset(&st, 0, sizeof(st));
		np_backend_stats(t->b, &st);
		lost = st.lost > t->events_lost ? st.lost : t->events_lost;
		snprintf(l1, n1, "nmiprof top  backend: %s (%s)  %u Hz  CPUs: %u  "
			 "samples: %llu  lost: %llu  shown: %.0f",
			 st.backend ? st.backend : np_backend_name(t->b),
			 st.source ? st.source : "?", t->freq_hz, st.nr_cpus,
			 (unsigned long long)st.samples, (unsigned long long)lost,
			 topview_total(t->tv));
	}
	if (t->filter.cpu >= 0)
		off += (size_t)snprintf(filt + off, sizeof(filt) - off, " cpu=%d",
					t->filter.cpu);
	if (t->filter.pid >= 0 && off < sizeof(filt))
		off += (size_t)snprintf(filt + off, sizeof(filt) - off, " pid=%lld",
					(long long)t->filter.pid);
	if (t->filter.comm[0] && off < sizeof(filt))
		off += (size_t)snprintf(filt + off, sizeof(filt) - off, " comm=%s",
					t->filter.comm);
	if (t->filter.search[0] && off < sizeof(filt))
		off += (size_t)snprintf(filt + off, sizeof(filt) - off, " search=%s",
					t->filter.search);
	if (t->zoom_dso[0] && off < sizeof(filt))
		snprintf(filt + off, sizeof(filt) - off, " dso=%s",
			 cli_basename(t->zoom_dso));
	snprintf(l2, n2, "sort: %s  frames: %s  decay: %s  every %us%s%s%s%s",
		 topview_sort_name(t->sort),
		 t->filter.kernel && t->filter.user ? "kernel+user" :
		 t->filter.kernel ? "kernel" : "user",
		 t->daemon ? "n/a" : t->decay ? "on" : "off", t->delay_s,
		 filt[0] ? "  filter:" : "", filt, t->paused ? "  [PAUSED]" : "",
		 t->target_gone ? "  [process exited]" : "");
}

void top_apply_filter(struct top *t)
{
	struct topview_filter f = t->filter;

	if (t->daemon) {
		/* The daemon filters cpu, pid and comm; rows carry neither. */
		f.cpu = -1;
		f.pid = -1;
		f.comm[0] = 0;
	}
	if (topview_set_filter(t->tv, &f))
		snprintf(t->message, sizeof(t->message), "out of memory applying the filter");
	top_refresh(t);
}

/* ---- --stdio / --once ---------------------------------------------- */

static int run_stdio(struct top *t, int once)
{
	struct cli_table_opts to = { .max_rows = t->stdio_rows };
	char l1[256], l2[256];

	for (int first = 1;; first = 0) {
		/* The daemon has its window ready: no need to wait first. */
		uint64_t end = t->daemon && first ? 0 :
			       np_mono_ms() + (uint64_t)t->delay_s * 1000;

		while (!cli_interrupted() && np_mono_ms() < end) {
			int ret = top_pump(t, TOP_POLL_MS * 4);

			if (ret < 0) {
				cli_error("top", "reading samples: %s", strerror(-ret));
				return EXIT_FAILURE_RT;
			}
		}
		if (top_refresh(t)) {
			cli_error("top", "%s", t->message);
			return EXIT_NO_DAEMON;
		}
		topview_sort(t->tv, t->sort);
		top_header(t, l1, sizeof(l1), l2, sizeof(l2));
		printf("# %s\n# %s\n", l1, l2);
		cli_print_table(stdout, t->tv, &to);
		if (fflush(stdout) || ferror(stdout))
			return EXIT_FAILURE_RT;
		if (once || cli_interrupted() || t->target_gone)
			return EXIT_OK;
		putchar('\n');
		if (t->decay && !t->daemon)
			topview_decay(t->tv, TOP_DECAY);
	}
}

static int top_with_daemon(struct top *t, const char *sock, int stdio, int once)
{
	char err[512];
	int ret;

	t->daemon = top_daemon_open(sock, err, sizeof(err));
	if (!t->daemon) {
		cli_error("top", "%s", err);
		return EXIT_NO_DAEMON;
	}
	if (!t->window_s)
		t->window_s = 10;
	if (t->pid_opt > 0)
		t->filter.pid = t->pid_opt;
	t->decay = 0;
	t->tv = topview_new();
	if (!t->tv) {
		cli_error("top", "out of memory");
		top_daemon_close(t->daemon);
		return EXIT_FAILURE_RT;
	}
	topview_set_keys(t->tv, &t->keys);
	cli_catch_signals();
	top_apply_filter(t);		/* also the first query */
	if (t->message[0] && (stdio || once)) {
		cli_error("top", "%s", t->message);
		ret = EXIT_NO_DAEMON;
	} else {
		t->message[0] = 0;
		ret = stdio || once ? run_stdio(t, once) : top_screen_run(t);
	}
	top_daemon_close(t->daemon);
	topview_free(t->tv);
	return ret;
}

/* Does a -s list (parsed already) name a key, not only an order? */
static int names_a_key(const char *list)
{
	for (const char *p = list; *p; p += *p == ',') {
		size_t n = strcspn(p, ",");

		if (!(n == 4 && !strncmp(p, "self", 4)) &&
		    !(n == 8 && (!strncmp(p, "children", 8) || !strncmp(p, "overhead", 8))))
			return n > 0;
		p += n;
	}
	return 0;
}

int cmd_top(int argc, char **argv)
{
	struct np_backend_opts bo;
	struct np_backend_stats bst;
	struct top t;
	int opt, stdio = 0, once = 0, use_daemon = 0, local_opts = 0, ret;
	const char *sock = NULL, *sort_bad;
	char err[512];
	uint64_t v;

	memset(&t, 0, sizeof(t));
	np_backend_opts_init(&bo);
	topview_filter_init(&t.filter);
	t.sort = TOPVIEW_SORT_SELF;
	/* rows per process by default: the screen zooms into a row's pid */
	topview_keys_parse("comm,pid,dso,sym", &t.keys, &t.sort, &(const char *){ NULL });
	t.decay = 1;
	t.delay_s = 2;
	t.stdio_rows = TOP_STDIO_ROWS;
	optind = 1;
	opterr = 0;
	while ((opt = getopt_long(argc, argv, ":F:p:C:d:m:n:KUs:h", top_opts, NULL)) != -1) {
		switch (opt) {
		case 'F':
			if (cli_parse_u64(optarg, 1, NMIPROF_MAX_FREQ, &v))
				return cli_usage_error("top", "bad frequency '%s' (1..%u)",
						       optarg, NMIPROF_MAX_FREQ);
			bo.freq_hz = (uint32_t)v;
			local_opts = 1;
			break;
		case 'p':
			if (cli_parse_u64(optarg, 1, INT32_MAX, &v))
				return cli_usage_error("top", "bad pid '%s'", optarg);
			bo.pid = (int)v;
			t.pid_opt = (int64_t)v;
			break;
		case 'C':
			bo.cpus = optarg;
			local_opts = 1;
			break;
		case 'd':
			if (cli_parse_u64(optarg, 1, 3600, &v))
				return cli_usage_error("top", "bad delay '%s' (1..3600 s)", optarg);
			t.delay_s = (unsigned)v;
			break;
		case 'm':
			if (cli_parse_mmap_pages("top", optarg, &bo.mmap_pages))
				return EXIT_USAGE;
			local_opts = 1;
			break;
		case OPT_BACKEND:
			if (cli_parse_backend(optarg) < 0)
				return cli_usage_error("top", "unknown backend '%s'", optarg);
			bo.kind = (enum np_backend_kind)cli_parse_backend(optarg);
			local_opts = 1;
			break;
		case 'n':
			if (cli_parse_u64(optarg, 1, 1000000, &v))
				return cli_usage_error("top", "bad row count '%s'", optarg);
			t.stdio_rows = (size_t)v;
			break;
		case 'K':
		case 'U':
			if (cli_frames_option("top", opt, &t.filter))
				return EXIT_USAGE;
			break;
		case 's': {
			struct topview_keys k;

			if (topview_keys_parse(optarg, &k, &t.sort, &sort_bad))
				return cli_usage_error("top", "unknown sort key '%.*s'",
						       (int)strcspn(sort_bad, ","), sort_bad);
			/* an order alone (-s children) keeps top's rows per process */
			if (names_a_key(optarg))
				t.keys = k;
			break;
		}
		case OPT_NO_DECAY:
			t.decay = 0;
			break;
		case OPT_STDIO:
			stdio = 1;
			break;
		case OPT_ONCE:
			once = 1;
			break;
		case OPT_DAEMON:
			use_daemon = 1;
			break;
		case OPT_SOCKET:
			sock = optarg;
			break;
		case OPT_WINDOW:
			if (cli_parse_u64(optarg, 1, 86400, &v))
				return cli_usage_error("top", "bad window '%s'", optarg);
			t.window_s = (uint32_t)v;
			break;
		case 'h':
			usage_top(stdout);
			return EXIT_OK;
		default:	/* ':' or '?' */
			return cli_option_error("top", opt, argv);
		}
	}
	if (optind < argc)
		return cli_usage_error("top", "unexpected argument '%s'", argv[optind]);
	if (!stdio && !once && (!isatty(STDIN_FILENO) || !isatty(STDOUT_FILENO)))
		return cli_usage_error("top", "not a terminal: use --stdio or --once");
	if (use_daemon && local_opts)
		return cli_usage_error("top", "-F, -C, -m and --backend configure a local "
				       "backend: not with --daemon");
	if (!use_daemon && (sock || t.window_s))
		return cli_usage_error("top", "--socket and --window need --daemon");
	if (use_daemon)
		return top_with_daemon(&t, sock, stdio, once);

	t.tv = topview_new();
	t.st = np_stacktab_new();
	t.syms = np_symbolizer_new(err, sizeof(err));
	if (!t.tv || !t.st || !t.syms) {
		cli_error("top", "%s", t.syms ? "out of memory" : err);
		ret = EXIT_FAILURE_RT;
		goto out;
	}
	topview_set_filter(t.tv, &t.filter);
	topview_set_keys(t.tv, &t.keys);
	cli_catch_signals();
	t.freq_hz = bo.freq_hz;
	t.b = cli_backend_start("top", &bo, &ret);
	if (!t.b)
		goto out;
	/* Only now: a failure above stays the one line printed. */
	if (np_symbolizer_warning(t.syms) && !cli_backend_user_only(t.b)) {
		if (stdio || once)
			cli_error("top", "warning: %s", np_symbolizer_warning(t.syms));
		else
			snprintf(t.message, sizeof(t.message), "warning: %s",
				 np_symbolizer_warning(t.syms));
	}
	ret = stdio || once ? run_stdio(&t, once) : top_screen_run(&t);
	if (t.add_failed)
		cli_error("top", "warning: %llu samples not counted: out of memory",
			  (unsigned long long)t.add_failed);
	if (!np_backend_stats(t.b, &bst))
		cli_backend_lost_warning("top", t.b, bst.samples, bst.lost >
					 t.events_lost ? bst.lost : t.events_lost);
out:
	if (t.b) {
		np_backend_stop(t.b);
		np_backend_close(t.b);
	}
	cli_frames_free(&t.cf);
	if (t.syms)
		np_symbolizer_free(t.syms);
	np_stacktab_free(t.st);
	topview_free(t.tv);
	return ret;
}
