// SPDX-License-Identifier: GPL-2.0
/*
 * nmiprof report: the hot-spot table of a profile file (-i) or of the
 * daemon's store over a time range, with perf report's filters.
 */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "store.h"

void usage_report(FILE *out)
{
	fprintf(out,
		"Usage: nmiprof report [-i FILE | [--store DIR | --cluster URL] [--since T] [--until T]]\n"
		"                      [--host GLOB]... [--label K=V]... [--password-file FILE]\n"
		"                      [-s KEYS] [--pid PID] [--comm NAME] [--cpu N]\n"
		"                      [--kernel | --user] [-g | -G | --chains] [--graph-depth N]\n"
		"                      [--graph-limit PCT] [--percent-limit PCT] [-n ROWS]\n\n"
		"Print the hot-spot table of a profile recorded with 'nmiprof record',\n"
		"or of the daemon's store (default %s) between --since and --until.\n\n"
		"  -i, --input FILE       read FILE ('-': standard input) instead of the store\n"
		"      --store DIR        the daemon's store directory\n"
		"      --since T, --until T\n"
		"                         time range: 'now', '@EPOCH', a duration ago ('10m',\n"
		"                         '2h', '1d') or 'YYYY-MM-DD[ HH:MM[:SS]]' local time\n"
		"      --cluster URL      the fleet's profiles in ClickHouse, summed by the\n"
		"                         server (http://HOST:8123/?database=nmiprof)\n"
		"      --host GLOB        --cluster: only hosts matching GLOB (repeatable)\n"
		"      --label K=V        --cluster: only slices with this label (repeatable)\n"
		"      --password-file FILE  --cluster: the server's password (mode 600)\n"
		"  -s, --sort KEYS        what rows group by, as perf: a comma list of comm,\n"
		"                         dso, sym, pid, cpu (default comm,dso,sym); rows are\n"
		"                         ordered by self, or by children if the list has\n"
		"                         'children'; with --cluster also host: samples per\n"
		"                         host, of --symbol NAME if given (where does NAME run?)\n"
		"      --symbol NAME      --sort host: the function to break down\n"
		"      --children, --no-children\n"
		"                         perf's spellings of -s children and -s self\n"
		"      --stdio            the text table (the only output; for perf's habit)\n"
		"      --pid PID          only this process\n"
		"      --comm NAME        only this command name\n"
		"      --cpu N            only samples taken on CPU N\n"
		"  -K, --kernel           kernel frames only\n"
		"  -U, --user             user frames only\n"
		"  -g, --call-graph       under each row, the tree of its callers (callee\n"
		"                         order, as perf report -g): who calls it, and how\n"
		"  -G, --inverted         under each row, the tree of what it calls (caller\n"
		"                         order): where its children samples go\n"
		"      --graph-depth N    levels of the tree below each row (default 8,\n"
		"                         0: all); deeper paths are marked [...]\n"
		"      --graph-limit PCT  fold branches below PCT%% of the shown samples\n"
		"                         into one (other) line (default 0.5)\n"
		"      --chains           show the call chains of each row's self samples\n"
		"                         (rows without self samples are left out)\n"
		"      --percent-limit PCT  hide rows with less overhead\n"
		"  -n, --rows N           print at most N rows\n"
		"  -h, --help             this text\n", NP_STORE_DEFAULT_DIR);
}


enum { OPT_CHAINS = OPT_FIRST_FREE, OPT_GDEPTH, OPT_GLIMIT, OPT_STDIO,
       OPT_CHILDREN, OPT_NO_CHILDREN, OPT_SYMBOL };

static const struct option report_opts[] = {
	{ "input", required_argument, NULL, 'i' },
	{ "store", required_argument, NULL, OPT_STORE },
	{ "cluster", required_argument, NULL, OPT_CLUSTER },
	{ "host", required_argument, NULL, OPT_HOST },
	{ "label", required_argument, NULL, OPT_LABEL },
	{ "password-file", required_argument, NULL, OPT_PWFILE },
	{ "symbol", required_argument, NULL, OPT_SYMBOL },
	{ "since", required_argument, NULL, OPT_SINCE },
	{ "until", required_argument, NULL, OPT_UNTIL },
	{ "sort", required_argument, NULL, 's' },
	{ "pid", required_argument, NULL, OPT_PID },
	{ "comm", required_argument, NULL, OPT_COMM },
	{ "cpu", required_argument, NULL, OPT_CPU },
	{ "kernel", no_argument, NULL, 'K' },
	{ "user", no_argument, NULL, 'U' },
	{ "call-graph", no_argument, NULL, 'g' },
	{ "inverted", no_argument, NULL, 'G' },
	{ "graph-depth", required_argument, NULL, OPT_GDEPTH },
	{ "graph-limit", required_argument, NULL, OPT_GLIMIT },
	{ "chains", no_argument, NULL, OPT_CHAINS },
	{ "percent-limit", required_argument, NULL, OPT_PLIMIT },
	{ "rows", required_argument, NULL, 'n' },
	{ "stdio", no_argument, NULL, OPT_STDIO },
	{ "children", no_argument, NULL, OPT_CHILDREN },
	{ "no-children", no_argument, NULL, OPT_NO_CHILDREN },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

/* A percentage 0..100; -1 if not one. */
static int parse_percent(const char *s, double *out)
{
	char *end;
	double p = strtod(s, &end);

	if (*end || end == s || !(p >= 0 && p <= 100))
		return -1;
	*out = p;
	return 0;
}

int cmd_report(int argc, char **argv)
{
	struct cli_source src = { .pid = -1 };
	struct cli_table_opts to = { 0 };
	struct cli_profile_info info;
	enum topview_sort sort = TOPVIEW_SORT_SELF;
	struct topview_keys keys;
	const char *bad;
	struct topview *tv;
	struct topview_filter f;
	const char *symbol = NULL;
	char t0[32], t1[32];
	uint64_t v;
	int opt, ret, graph_opts = 0, by_host = 0;

	topview_filter_init(&f);
	topview_keys_parse(TOPVIEW_KEYS_DEFAULT, &keys, &sort, &bad);
	to.graph.depth = 8;
	to.graph.limit = 0.5;
	optind = 1;
	opterr = 0;
	while ((opt = getopt_long(argc, argv, ":i:s:KUgGn:h", report_opts, NULL)) != -1) {
		ret = cli_source_option("report", opt, optarg, &src, &f);
		if (ret == 0)
			continue;
		if (ret > 0)
			return ret;
		switch (opt) {
		case 's':
			by_host = !strcmp(optarg, "host");
			if (by_host)
				break;
			if (topview_keys_parse(optarg, &keys, &sort, &bad))
				return cli_usage_error("report", "unknown sort key '%.*s'",
						       (int)strcspn(bad, ","), bad);
			if (topview_keys_has(&keys, TOPVIEW_KEY_TID))
				return cli_usage_error("report", "profiles keep no thread "
						       "ids: sort by pid (top has tid)");
			break;
		case OPT_STDIO:		/* perf's: the text table is the only one */
			break;
		case OPT_CHILDREN:
		case OPT_NO_CHILDREN:
			sort = opt == OPT_CHILDREN ? TOPVIEW_SORT_CHILDREN : TOPVIEW_SORT_SELF;
			break;
		case 'g':
		case 'G':
			if (to.callgraph && to.graph.order != (opt == 'G' ?
				CLI_GRAPH_CALLER : CLI_GRAPH_CALLEE))
				return cli_usage_error("report", "-g and -G exclude each other");
			to.callgraph = 1;
			to.graph.order = opt == 'G' ? CLI_GRAPH_CALLER : CLI_GRAPH_CALLEE;
			break;
		case OPT_GDEPTH:
			if (cli_parse_u64(optarg, 0, 1000, &v))
				return cli_usage_error("report", "bad graph depth '%s' (0..1000)",
						       optarg);
			to.graph.depth = (unsigned)v;
			graph_opts = 1;
			break;
		case OPT_GLIMIT:
			if (parse_percent(optarg, &to.graph.limit))
				return cli_usage_error("report", "bad graph limit '%s'", optarg);
			graph_opts = 1;
			break;
		case OPT_CHAINS:
			to.chains = 1;
			break;
		case OPT_SYMBOL:
			symbol = optarg;
			break;
		case OPT_PLIMIT:
			if (parse_percent(optarg, &to.percent_limit))
				return cli_usage_error("report", "bad percent limit '%s'", optarg);
			break;
		case 'n':
			if (cli_parse_u64(optarg, 1, SIZE_MAX, &v))
				return cli_usage_error("report", "bad row count '%s'", optarg);
			to.max_rows = (size_t)v;
			break;
		case 'h':
			usage_report(stdout);
			return EXIT_OK;
		default:	/* ':' or '?' */
			return cli_option_error("report", opt, argv);
		}
	}
	if (optind < argc)
		return cli_usage_error("report", "unexpected argument '%s'", argv[optind]);
	if (to.chains && to.callgraph)
		return cli_usage_error("report", "-g/-G and --chains exclude each other");
	if (graph_opts && !to.callgraph)
		return cli_usage_error("report", "--graph-depth and --graph-limit need -g or -G");

	if (by_host && !src.cluster)
		return cli_usage_error("report", "--sort host needs --cluster");
	if (symbol && !by_host)
		return cli_usage_error("report", "--symbol goes with --sort host");
	if (by_host && (to.callgraph || to.chains))
		return cli_usage_error("report", "--sort host shows no call graphs");
	if (by_host && (src.file || src.store))
		return cli_usage_error("report", "--cluster excludes -i and --store");
	if (by_host) {
		ret = cli_report_by_host(&src, &f, symbol, to.max_rows);
		if (!ret && (fflush(stdout) || ferror(stdout))) {
			cli_error("report", "write error on standard output");
			return EXIT_FAILURE_RT;
		}
		return ret;
	}
	src.by_pid = topview_keys_has(&keys, TOPVIEW_KEY_PID);
	src.rows_only = !to.callgraph && !to.chains;
	src.order = sort;
	src.max_rows = to.max_rows;
	ret = cli_load_view("report", &src, &f, &keys, &tv, &info);
	if (ret)
		return ret;
	topview_sort(tv, sort);
	cli_format_time(info.first_ns, t0, sizeof(t0));
	cli_format_time(info.last_ns, t1, sizeof(t1));
	printf("# nmiprof report: %s\n", src.file ? src.file : src.cluster ? src.cluster :
	       src.store ? src.store : NP_STORE_DEFAULT_DIR);
	printf("# samples: %llu  lost: %llu  segments: %u  span: %s .. %s\n",
	       (unsigned long long)info.samples, (unsigned long long)info.lost,
	       info.segments, t0, t1);
	printf("# shown: %.0f samples  sort: ", topview_total(tv));
	for (unsigned i = 0; i < keys.nr; i++)
		printf("%s%s", i ? "," : "", topview_key_name(keys.key[i]));
	printf("  order: %s%s%s\n#\n", topview_sort_name(sort), f.kernel && !f.user ? "  kernel frames only" : "",
	       f.user && !f.kernel ? "  user frames only" : "");
	cli_print_table(stdout, tv, &to);
	topview_free(tv);
	if (fflush(stdout) || ferror(stdout)) {
		cli_error("report", "write error on standard output");
		return EXIT_FAILURE_RT;
	}
	return EXIT_OK;
}
