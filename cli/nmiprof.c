// SPDX-License-Identifier: GPL-2.0
/*
 * nmiprof: the command-line front end.  This file only dispatches: each
 * subcommand is one cmd_<name>.c.
 */
#include <stdio.h>
#include <string.h>

#include "cli.h"

static const struct cli_cmd commands[] = {
	{ "top", "live hot spots, full screen (or --stdio)", cmd_top, usage_top },
	{ "record", "sample into a profile file", cmd_record, usage_record },
	{ "report", "hot-spot table from a file or the daemon's store",
	  cmd_report, usage_report },
	{ "export", "folded stacks, pprof or an svg flame graph",
	  cmd_export, usage_export },
	{ "lockups", "hard-lockup reports kept by the daemon",
	  cmd_lockups, usage_lockups },
	{ "status", "module, backend, daemon and store state",
	  cmd_status, usage_status },
	{ "cluster", "fleet profiles in ClickHouse: create the schema, prune",
	  cmd_cluster, usage_cluster },
};

#define NR_COMMANDS (sizeof(commands) / sizeof(commands[0]))

static void print_exit_codes(FILE *out)
{
	fprintf(out,
		"Exit status:\n"
		"  0  success\n"
		"  1  usage error (bad option or argument)\n"
		"  2  nmiprofd is needed but not reachable\n"
		"  3  permission denied (see perf_event_paranoid, /dev/nmiprof mode)\n"
		"  4  no sampling backend: neither nmiprof.ko nor perf events usable\n"
		"  5  bad input: file or store missing, corrupt or not an nmiprof profile\n"
		"  6  other run-time failure (I/O error, out of memory; status: the\n"
		"     daemon cannot write its store)\n");
}

static void usage(FILE *out)
{
	fprintf(out, "Usage: nmiprof [--version] [--help] COMMAND [ARGS]\n\n"
		"NMI-based sampling profiler and hard-lockup watchdog.\n\n"
		"Commands:\n");
	for (size_t i = 0; i < NR_COMMANDS; i++)
		fprintf(out, "  %-8s %s\n", commands[i].name, commands[i].summary);
	fprintf(out, "  %-8s %s\n\n", "help", "this text, or 'help COMMAND'");
	print_exit_codes(out);
	fprintf(out, "\nSee nmiprof(1) and nmiprof-COMMAND(1).\n");
}

static const struct cli_cmd *find(const char *name)
{
	for (size_t i = 0; i < NR_COMMANDS; i++)
		if (!strcmp(commands[i].name, name))
			return &commands[i];
	return NULL;
}

int main(int argc, char **argv)
{
	const struct cli_cmd *c;

	if (argc < 2) {
		usage(stderr);
		return EXIT_USAGE;
	}
	if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "-V")) {
		printf("nmiprof %s\n", NMIPROF_VERSION);
		return EXIT_OK;
	}
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") ||
	    !strcmp(argv[1], "help")) {
		if (argc > 2 && strcmp(argv[1], "help") == 0 &&
		    strcmp(argv[2], "help")) {	/* help help: this text */
			c = find(argv[2]);
			if (!c) {
				cli_error(NULL, "help: unknown command '%s'", argv[2]);
				return EXIT_USAGE;
			}
			c->usage(stdout);
			return EXIT_OK;
		}
		usage(stdout);
		return EXIT_OK;
	}
	c = find(argv[1]);
	if (!c) {
		cli_error(NULL, "unknown command '%s' (try 'nmiprof help')", argv[1]);
		return EXIT_USAGE;
	}
	return c->run(argc - 1, argv + 1);
}
