// SPDX-License-Identifier: GPL-2.0
/*
 * nmiprof cluster: the fleet schema on each ClickHouse shard (init), and
 * server-side retention by day partitions (prune).  docs/fleet.md.
 */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "np_fleet.h"
#include "np_clock.h"

#define DAY_NS	(86400 * (uint64_t)1000000000)

void usage_cluster(FILE *out)
{
	fprintf(out,
		"Usage: nmiprof cluster init [--name CLUSTER] [--password-file FILE] URL...\n"
		"       nmiprof cluster prune --older-than AGE [--password-file FILE] URL...\n"
		"       nmiprof cluster rollup [--older-than AGE | --today] [--password-file FILE]\n"
		"                              URL...\n\n"
		"Fleet profiles in ClickHouse (docs/fleet.md).  Each URL is one shard's\n"
		"server, http://HOST:8123/?database=NAME.\n\n"
		"  init   create the database, the local tables and the Distributed tables\n"
		"         over CLUSTER (a <remote_servers> entry of the servers' configuration,\n"
		"         default 'nmiprof') on every URL; running it again changes nothing\n"
		"  prune  drop the day partitions older than AGE ('30d', '12w') on every\n"
		"         URL: server-side retention\n"
		"  rollup sum each host's committed samples per day (default: the days before\n"
		"         today), which queries read instead of the day's slices while no\n"
		"         slice of it came since; run it daily, like prune\n\n"
		"      --name CLUSTER       the cluster the Distributed tables span\n"
		"      --older-than AGE     prune: days older than AGE go; rollup: only those\n"
		"      --today              rollup: today's slices so far too\n"
		"      --password-file FILE the servers' password (mode 600)\n"
		"  -h, --help               this text\n");
}

enum { OPT_NAME = OPT_FIRST_FREE, OPT_OLDER, OPT_TODAY };

static const struct option cluster_opts[] = {
	{ "name", required_argument, NULL, OPT_NAME },
	{ "older-than", required_argument, NULL, OPT_OLDER },
	{ "today", no_argument, NULL, OPT_TODAY },
	{ "password-file", required_argument, NULL, OPT_PWFILE },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

int cmd_cluster(int argc, char **argv)
{
	struct cli_source src = { .pid = -1 };
	const char *name = "nmiprof", *verb;
	uint64_t older = 0, now = np_real_ns();
	char err[600];
	int opt, ret = EXIT_OK, today = 0;

	optind = 1;
	opterr = 0;
	while ((opt = getopt_long(argc, argv, ":h", cluster_opts, NULL)) != -1) {
		switch (opt) {
		case OPT_NAME:
			name = optarg;
			break;
		case OPT_OLDER:
			/* "30d" ago is a time; its distance from now is the age. */
			if (cli_parse_time(optarg, now, &older) || older >= now ||
			    strchr(optarg, '-') || optarg[0] == '@')
				return cli_usage_error("cluster", "bad age '%s' (such as 30d)",
						       optarg);
			break;
		case OPT_TODAY:
			today = 1;
			break;
		case OPT_PWFILE:
			src.password_file = optarg;
			break;
		case 'h':
			usage_cluster(stdout);
			return EXIT_OK;
		default:
			return cli_option_error("cluster", opt, argv);
		}
	}
	if (optind >= argc)
		return cli_usage_error("cluster", "init or prune?");
	verb = argv[optind++];
	if (strcmp(verb, "init") && strcmp(verb, "prune") && strcmp(verb, "rollup"))
		return cli_usage_error("cluster", "unknown action '%s' (init, prune, rollup)",
				       verb);
	if (!strcmp(verb, "prune") && !older)
		return cli_usage_error("cluster", "prune needs --older-than AGE");
	if (today && (older || strcmp(verb, "rollup")))
		return cli_usage_error("cluster", "--today is for rollup, without --older-than");
	if (!strcmp(verb, "rollup") && !older)
		older = today ? now + DAY_NS : now / DAY_NS * DAY_NS;
	if (optind >= argc)
		return cli_usage_error("cluster", "no server URL");
	for (; optind < argc && !ret; optind++) {
		struct np_ch *c;
		unsigned int dropped, made;

		src.cluster = argv[optind];
		c = cli_cluster_open("cluster", &src, &ret);
		if (!c)
			break;
		if (!strcmp(verb, "init")) {
			if (np_fleet_schema_create(c, name, err, sizeof(err))) {
				cli_error("cluster", "%s", err);
				ret = EXIT_FAILURE_RT;
			} else {
				printf("%s: schema ready (database %s, cluster %s)\n",
				       np_ch_url(c), np_ch_database(c), name);
			}
		} else if (!strcmp(verb, "rollup")) {
			if (np_fleet_rollup(c, older, &made, err, sizeof(err))) {
				cli_error("cluster", "%s", err);
				ret = EXIT_FAILURE_RT;
			} else {
				printf("%s: %u host-day(s) rolled up\n", np_ch_url(c), made);
			}
		} else if (np_fleet_prune(c, older, &dropped, err, sizeof(err))) {
			cli_error("cluster", "%s", err);
			ret = EXIT_FAILURE_RT;
		} else {
			printf("%s: %u partition(s) dropped\n", np_ch_url(c), dropped);
		}
		np_ch_close(c);
	}
	if (fflush(stdout) || ferror(stdout))
		ret = EXIT_FAILURE_RT;
	return ret;
}
