// SPDX-License-Identifier: GPL-2.0
/*
 * nmiprof lockups: the hard-lockup reports nmiprofd stored (lockstore.h):
 * a list, or one report in full (registers and symbolized stack); or,
 * with --cluster, those the fleet's daemons sent to ClickHouse.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "lockstore.h"
#include "np_fleet.h"

void usage_lockups(FILE *out)
{
	fprintf(out,
		"Usage: nmiprof lockups [--store DIR | --cluster URL [FILTERS]] [list]\n"
		"       nmiprof lockups [--store DIR | --cluster URL [FILTERS]] show ID\n\n"
		"List the hard lockups nmiprofd recorded (oldest first), or show one:\n"
		"the stuck CPU's task, registers and kernel stack.  EP numbers the\n"
		"episodes: lockups whose stuck times overlap (several CPUs stuck at\n"
		"once) share one.  With --cluster, the lockups every host sent, with\n"
		"its name and without registers or episodes.\n\n"
		"      --store DIR        the daemon's store (default %s)\n"
		"      --cluster URL      the fleet's lockups in ClickHouse (docs/fleet.md)\n"
		"FILTERS (with --cluster):\n"
		"      --host GLOB        only hosts matching GLOB (repeatable)\n"
		"      --label K=V        only hosts whose slices have it (repeatable)\n"
		"      --since T, --until T  only lockups reported in [T, T]\n"
		"      --password-file FILE  the server's password (mode 600)\n"
		"  -h, --help             this text\n", NP_STORE_DEFAULT_DIR);
}

static const struct option lockups_opts[] = {
	{ "store", required_argument, NULL, OPT_STORE },
	{ "cluster", required_argument, NULL, OPT_CLUSTER },
	{ "host", required_argument, NULL, OPT_HOST },
	{ "label", required_argument, NULL, OPT_LABEL },
	{ "since", required_argument, NULL, OPT_SINCE },
	{ "until", required_argument, NULL, OPT_UNTIL },
	{ "password-file", required_argument, NULL, OPT_PWFILE },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

/*
 * Episodes: reports and recoveries whose stuck intervals, [time - stuck,
 * time] on the module's monotonic clock, overlap belong together.  When
 * every CPU is stuck at once, each reports itself; they are one event.
 * The list is oldest first, so one running interval is enough; a reboot
 * restarts the clock, which starts a new episode.
 */
struct list_ctx {
	unsigned n, warned;
	unsigned episode;
	uint64_t ep_start, ep_end;
};

static unsigned episode_of(struct list_ctx *c, const struct np_lockup_rec *r)
{
	uint64_t start = r->time_ns > r->stuck_ns ? r->time_ns - r->stuck_ns : 0;

	if (!c->episode || start > c->ep_end || r->time_ns < c->ep_start) {
		c->episode++;
		c->ep_start = start;
		c->ep_end = r->time_ns;
	} else if (r->time_ns > c->ep_end) {
		c->ep_end = r->time_ns;
	}
	return c->episode;
}

static void list_warn(void *arg, const char *msg)
{
	struct list_ctx *c = arg;

	c->warned++;
	cli_error("lockups", "warning: %s", msg);
}

static void flags_str(uint32_t flags, char *buf, size_t len)
{
	snprintf(buf, len, "%s%s%s", flags & NMIPROF_LF_HARD ? "hard" : "-",
		 flags & NMIPROF_LF_SILENT ? ",silent" : "",
		 flags & NMIPROF_LF_RECOVERED ? ",recovered" : "");
}

/* A lower bound (NMIPROF_LF_AT_LEAST) is shown as one: ">=2.40s". */
static int at_least(const struct np_lockup_rec *r)
{
	return !!(r->flags & NMIPROF_LF_AT_LEAST);
}

static int list_one(const struct np_lockup_rec *r, void *arg)
{
	struct list_ctx *c = arg;
	char when[32], fl[32], stuck[32];

	if (!c->n++)
		printf("%-28s  %3s  %-19s  %4s  %8s  %-16s  %9s  %s\n", "ID", "EP",
		       "TIME", "CPU", "PID", "COMM", "STUCK", "FLAGS");
	cli_format_time(r->wall_ns, when, sizeof(when));
	flags_str(r->flags, fl, sizeof(fl));
	snprintf(stuck, sizeof(stuck), "%s%.2fs", at_least(r) ? ">=" : "",
		 (double)r->stuck_ns / 1e9);
	printf("%-28s  %3u  %-19s  %4u  %8u  %-16s  %9s  %s\n", r->id,
	       episode_of(c, r), when, r->cpu, r->pid, r->comm, stuck, fl);
	return 0;
}

static void show(const struct np_lockup_rec *r)
{
	static const char *const names[] = {
		"r15", "r14", "r13", "r12", "bp", "bx", "r11", "r10",
		"r9", "r8", "ax", "cx", "dx", "si", "di", "orig_ax",
		"ip", "cs", "flags", "sp", "ss",
	};
	const uint64_t *regs = (const uint64_t *)&r->regs;
	char when[32], fl[32];

	cli_format_time(r->wall_ns, when, sizeof(when));
	flags_str(r->flags, fl, sizeof(fl));
	printf("lockup %s\n  time:  %s\n  cpu:   %u\n  task:  %s pid %u tid %u\n"
	       "  stuck: %s%.3f s\n  flags: %s\n\nregisters:\n", r->id, when,
	       r->cpu, r->comm, r->pid, r->tid, at_least(r) ? "at least " : "",
	       (double)r->stuck_ns / 1e9, fl);
	_Static_assert(sizeof(names) / sizeof(names[0]) ==
		       sizeof(struct nmiprof_regs) / sizeof(uint64_t), "regs");
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		printf("  %-7s 0x%016" PRIx64 "%s", names[i], regs[i],
		       i % 3 == 2 ? "\n" : "");
	printf("\nkernel stack (innermost first):\n");
	for (uint32_t i = 0; i < r->nr_frames; i++) {
		const struct np_sym *s = r->frames ? &r->frames[i] : NULL;

		if (s && s->name)
			printf("  #%-3u 0x%016" PRIx64 "  %s+0x%" PRIx64 " %s\n", i,
			       r->addrs[i], s->name, s->offset,
			       s->dso ? s->dso : "[unknown]");
		else
			printf("  #%-3u 0x%016" PRIx64 "  [unknown]\n", i, r->addrs[i]);
	}
	if (!r->nr_frames)
		printf("  (no stack was captured)\n");
}

/* ---- --cluster ------------------------------------------------------- */

static void fleet_flags_str(int64_t flags, char *buf, size_t len)
{
	/* sent by a daemon (or to a schema) without lockups.flags */
	if (flags < 0)
		snprintf(buf, len, "?");
	else
		flags_str((uint32_t)flags, buf, len);
}

static void fleet_stuck_str(const struct np_fleet_lockup *l, char *buf, size_t len)
{
	snprintf(buf, len, "%s%.2fs",
		 l->flags >= 0 && (l->flags & NMIPROF_LF_AT_LEAST) ? ">=" : "",
		 (double)l->stuck_ns / 1e9);
}

static int fleet_list_one(const struct np_fleet_lockup *l, void *arg)
{
	unsigned int *n = arg;
	char when[32], fl[32], stuck[32];

	if (!(*n)++)
		printf("%-16s  %-28s  %-19s  %4s  %8s  %-16s  %9s  %s\n", "HOST", "ID",
		       "TIME", "CPU", "PID", "COMM", "STUCK", "FLAGS");
	cli_format_time(l->time_s * 1000000000ull, when, sizeof(when));
	fleet_flags_str(l->flags, fl, sizeof(fl));
	fleet_stuck_str(l, stuck, sizeof(stuck));
	printf("%-16s  %-28s  %-19s  %4u  %8u  %-16s  %9s  %s\n", l->host, l->id,
	       when, l->cpu, l->pid, l->comm, stuck, fl);
	return 0;
}

/* show: the first match printed to text, the others only counted. */
struct fleet_show {
	unsigned int n;
	char *text, hosts[256];
	size_t len;
};

static int fleet_show_one(const struct np_fleet_lockup *l, void *arg)
{
	struct fleet_show *c = arg;
	char when[32], fl[32], stuck[32];
	FILE *f;

	snprintf(c->hosts + strlen(c->hosts), sizeof(c->hosts) - strlen(c->hosts),
		 "%s%s", c->n ? ", " : "", l->host);
	if (c->n++)
		return 0;
	f = open_memstream(&c->text, &c->len);
	if (!f)
		return -ENOMEM;
	cli_format_time(l->time_s * 1000000000ull, when, sizeof(when));
	fleet_flags_str(l->flags, fl, sizeof(fl));
	fleet_stuck_str(l, stuck, sizeof(stuck));
	fprintf(f, "lockup %s\n  host:  %s\n  time:  %s\n  cpu:   %u\n"
		"  task:  %s pid %u tid %u\n  stuck: %s\n  flags: %s\n\n"
		"registers: in %s's own store only\n\nkernel stack (innermost first):\n",
		l->id, l->host, when, l->cpu, l->comm, l->pid, l->tid, stuck, fl,
		l->host);
	for (unsigned int i = 0; i < l->nr_frames; i++) {
		const struct np_sym *s = &l->frames[i];

		if (s->name)
			fprintf(f, "  #%-3u %s+0x%" PRIx64 " %s\n", i, s->name,
				s->offset, s->dso);
		else if (strcmp(s->dso, "[unknown]"))
			fprintf(f, "  #%-3u [unknown] %s+0x%" PRIx64 "\n", i, s->dso,
				s->offset);
		else
			fprintf(f, "  #%-3u [unknown]\n", i);
	}
	if (!l->nr_frames)
		fprintf(f, "  (no stack was captured)\n");
	return fclose(f) ? -ENOMEM : 0;
}

static int fleet_lockups(const struct cli_source *src,
			 const struct topview_filter *any, const char *id)
{
	struct np_fleet_filter ff;
	struct fleet_show show = { 0 };
	unsigned int n = 0;
	struct np_ch *c;
	char err[600];
	int ret = EXIT_OK;

	c = cli_cluster_open("lockups", src, &ret);
	if (!c)
		return ret;
	cli_cluster_filter(src, any, &ff);
	if (np_fleet_query_lockups(c, &ff, id, id ? fleet_show_one : fleet_list_one,
				   id ? (void *)&show : (void *)&n, err, sizeof(err))) {
		cli_error("lockups", "%s", err[0] ? err : "out of memory");
		ret = strcmp(err, "out of memory") && err[0] ? EXIT_BAD_INPUT :
							       EXIT_FAILURE_RT;
	} else if (!id) {
		if (!n)
			printf("no lockups on %s (database %s)\n", np_ch_url(c),
			       np_ch_database(c));
	} else if (!show.n) {
		cli_error("lockups", "lockup %s: not on %s (database %s)", id,
			  np_ch_url(c), np_ch_database(c));
		ret = EXIT_BAD_INPUT;
	} else if (show.n > 1) {
		cli_error("lockups", "lockup %s: on %u hosts (%s): pick one with --host",
			  id, show.n, show.hosts);
		ret = EXIT_USAGE;
	} else {
		fputs(show.text, stdout);
	}
	free(show.text);
	np_ch_close(c);
	return ret;
}

int cmd_lockups(int argc, char **argv)
{
	const char *verb = "list";
	struct cli_source src = { .pid = -1, .store = NP_STORE_DEFAULT_DIR };
	struct topview_filter any;	/* lockups have no pid, cpu or comm filter */
	struct list_ctx c = { 0 };
	struct np_lockup_rec *r = NULL;
	const char *store;
	char err[512] = "";
	struct stat sb;
	int opt, ret, nargs, filters = 0, stores = 0;

	topview_filter_init(&any);
	optind = 1;
	opterr = 0;
	while ((opt = getopt_long(argc, argv, ":h", lockups_opts, NULL)) != -1) {
		switch (opt) {
		case OPT_STORE:
		case OPT_CLUSTER:
		case OPT_HOST:
		case OPT_LABEL:
		case OPT_SINCE:
		case OPT_UNTIL:
		case OPT_PWFILE:
			stores += opt == OPT_STORE;
			filters += opt != OPT_STORE && opt != OPT_CLUSTER;
			if (cli_source_option("lockups", opt, optarg, &src, &any))
				return EXIT_USAGE;
			break;
		case 'h':
			usage_lockups(stdout);
			return EXIT_OK;
		default:	/* ':' or '?' */
			return cli_option_error("lockups", opt, argv);
		}
	}
	if (src.cluster && stores)
		return cli_usage_error("lockups", "--cluster excludes --store");
	if (filters && !src.cluster)
		return cli_usage_error("lockups", "--host, --label, --since, --until and "
				       "--password-file need --cluster");
	if (optind < argc)
		verb = argv[optind++];
	if (strcmp(verb, "list") && strcmp(verb, "show"))
		return cli_usage_error("lockups", "unknown action '%s' (list, show ID)",
				       verb);
	nargs = !strcmp(verb, "show");	/* show ID */
	if (optind + nargs > argc)
		return cli_usage_error("lockups", "show needs a lockup ID");
	if (optind + nargs < argc)
		return cli_usage_error("lockups", "unexpected argument '%s'",
				       argv[optind + nargs]);
	if (src.cluster)
		return fleet_lockups(&src, &any, nargs ? argv[optind] : NULL);
	/* A store that is not there is an error, not "no lockups": a
	 * watchdog must not look healthy because the path was wrong. */
	store = src.store;
	if (stat(store, &sb) || !S_ISDIR(sb.st_mode)) {
		int e = errno;

		if (!stat(store, &sb))
			cli_error("lockups", "%s: not a store directory", store);
		else
			cli_error("lockups", "%s: %s (no store: is nmiprofd running?)",
				  store, strerror(e));
		return e == EACCES ? EXIT_NO_PERM : EXIT_BAD_INPUT;
	}
	if (!strcmp(verb, "list")) {
		ret = np_lockstore_list(store, list_one, &c, list_warn, &c, err,
					sizeof(err));
		if (ret < 0) {
			cli_error("lockups", "%s", err[0] ? err : strerror(-ret));
			return ret == -EACCES ? EXIT_NO_PERM : EXIT_BAD_INPUT;
		}
		/* A store without a lockups/ directory has none yet. */
		if (!c.n)
			printf("no lockups recorded in %s\n", store);
		return EXIT_OK;
	}
	ret = np_lockstore_read(store, argv[optind], &r, err, sizeof(err));
	if (ret < 0) {
		cli_error("lockups", "%s", err[0] ? err : strerror(-ret));
		return ret == -EACCES ? EXIT_NO_PERM : EXIT_BAD_INPUT;
	}
	show(r);
	np_lockup_rec_free(r);
	return EXIT_OK;
}
