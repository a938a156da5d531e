// SPDX-License-Identifier: GPL-2.0
/*
 * nmiprof export: a profile (file or store range) as folded stacks,
 * a pprof protobuf or an svg flame graph.
 */
#include <errno.h>
#include <getopt.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "export.h"
#include "store.h"

void usage_export(FILE *out)
{
	fprintf(out,
		"Usage: nmiprof export [-f folded|pprof|svg]\n"
		"                      [-i FILE | [--store DIR | --cluster URL] [--since T] [--until T]]\n"
		"                      [--host GLOB]... [--label K=V]... [--password-file FILE]\n"
		"                      [--pid PID] [--comm NAME] [--cpu N] [--kernel | --user]\n"
		"                      [--title TEXT] [--freq HZ] [-o OUT]\n\n"
		"Write a profile for other tools:\n"
		"  folded  'comm;outer;...;inner count' lines, flamegraph.pl's input\n"
		"          (kernel frames end in _[k])\n"
		"  pprof   a profile.proto message, uncompressed (pprof reads it as is)\n"
		"  svg     a self-contained flame graph: click to zoom, Ctrl-F to search\n\n"
		"  -f, --format FMT       folded (default), pprof or svg\n"
		"  -o, --output OUT       write to OUT instead of standard output ('-')\n"
		"  -i, --input FILE       read FILE ('-': standard input) instead of the\n"
		"                         store (%s)\n"
		"      --store DIR, --cluster URL, --host GLOB, --label K=V, --password-file FILE,\n"
		"      --since T, --until T, --pid PID, --comm NAME, --cpu N,\n"
		"  -K, --kernel, -U, --user\n"
		"                         as for 'nmiprof report'\n"
		"      --title TEXT       svg title\n"
		"      --freq HZ          sampling rate, for pprof's period (default:\n"
		"                         the profile's own, else 99)\n"
		"      --no-comm          folded/svg: no command name as the root frame\n"
		"  -h, --help             this text\n", NP_STORE_DEFAULT_DIR);
}

enum { OPT_TITLE = OPT_FIRST_FREE, OPT_FREQ, OPT_NO_COMM };

static const struct option export_opts[] = {
	{ "format", required_argument, NULL, 'f' },
	{ "output", required_argument, NULL, 'o' },
	{ "input", required_argument, NULL, 'i' },
	{ "store", required_argument, NULL, OPT_STORE },
	{ "cluster", required_argument, NULL, OPT_CLUSTER },
	{ "host", required_argument, NULL, OPT_HOST },
	{ "label", required_argument, NULL, OPT_LABEL },
	{ "password-file", required_argument, NULL, OPT_PWFILE },
	{ "since", required_argument, NULL, OPT_SINCE },
	{ "until", required_argument, NULL, OPT_UNTIL },
	{ "pid", required_argument, NULL, OPT_PID },
	{ "comm", required_argument, NULL, OPT_COMM },
	{ "cpu", required_argument, NULL, OPT_CPU },
	{ "kernel", no_argument, NULL, 'K' },
	{ "user", no_argument, NULL, 'U' },
	{ "title", required_argument, NULL, OPT_TITLE },
	{ "freq", required_argument, NULL, OPT_FREQ },
	{ "no-comm", no_argument, NULL, OPT_NO_COMM },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

int cmd_export(int argc, char **argv)
{
	struct cli_source src = { .pid = -1 };
	int fmt = NP_EXPORT_FOLDED, opt, ret;
	struct cli_profile_info info;
	struct np_export_opts eo;
	const char *output = NULL;
	struct topview *tv;
	struct topview_filter f;
	char err[512];
	FILE *out;
	uint64_t v;

	topview_filter_init(&f);
	np_export_opts_init(&eo);
	optind = 1;
	opterr = 0;
	while ((opt = getopt_long(argc, argv, ":f:o:i:KUh", export_opts, NULL)) != -1) {
		ret = cli_source_option("export", opt, optarg, &src, &f);
		if (ret == 0)
			continue;
		if (ret > 0)
			return ret;
		switch (opt) {
		case 'f':
			fmt = np_export_parse_format(optarg);
			if (fmt < 0)
				return cli_usage_error("export", "unknown format '%s' "
						       "(folded, pprof, svg)", optarg);
			break;
		case 'o':
			output = optarg;
			break;
		case OPT_TITLE:
			eo.title = optarg;
			break;
		case OPT_FREQ:
			if (cli_parse_u64(optarg, 1, NMIPROF_MAX_FREQ, &v))
				return cli_usage_error("export", "bad frequency '%s'", optarg);
			eo.freq_hz = (uint32_t)v;
			break;
		case OPT_NO_COMM:
			eo.no_comm = 1;
			break;
		case 'h':
			usage_export(stdout);
			return EXIT_OK;
		default:	/* ':' or '?' */
			return cli_option_error("export", opt, argv);
		}
	}
	if (optind < argc)
		return cli_usage_error("export", "unexpected argument '%s'", argv[optind]);
	if (output && !strcmp(output, "-"))
		output = NULL;	/* perf's "-o -": standard output */
	if (!output && fmt == NP_EXPORT_PPROF && isatty(STDOUT_FILENO))
		return cli_usage_error("export", "not writing binary pprof data to a "
				       "terminal: use -o FILE");

	ret = cli_load_view("export", &src, &f, NULL, &tv, &info);
	if (ret)
		return ret;
	/* Counts of different periods do not add up to one CPU time. */
	if (fmt == NP_EXPORT_PPROF && !eo.freq_hz && info.period_mixed) {
		cli_error("export", "the profile mixes sampling rates: narrow it "
			  "with --since/--until, or give --freq HZ");
		topview_free(tv);
		return EXIT_BAD_INPUT;
	}
	eo.period_ns = info.period_ns;
	if (info.first_ns && info.last_ns > info.first_ns) {
		eo.time_ns = info.first_ns;
		eo.duration_ns = info.last_ns - info.first_ns;
	}
	/* Loaded fine: only now create the output, so errors leave no stub. */
	out = output ? fopen(output, "w") : stdout;
	if (!out) {
		cli_error("export", "%s: %s", output, strerror(errno));
		topview_free(tv);
		return errno == EACCES ? EXIT_NO_PERM : EXIT_FAILURE_RT;
	}
	err[0] = 0;
	ret = np_export(tv, (enum np_export_format)fmt, &eo, out, err, sizeof(err));
	topview_free(tv);
	if (output && fclose(out) && !ret) {
		snprintf(err, sizeof(err), "%s: %s", output, strerror(errno));
		ret = -EIO;
	}
	if (ret) {
		cli_error("export", "%s", err);
		return EXIT_FAILURE_RT;
	}
	return EXIT_OK;
}
