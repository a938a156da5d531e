// SPDX-License-Identifier: GPL-2.0
/*
 * nmiprofd: continuous system-wide profiling and hard-lockup reports.
 *
 * Runs in the foreground (systemd Type=simple) and logs to stderr.
 * Start-up order: configuration, store (fails fast when another daemon
 * holds it), control socket, then sampling; shutdown is the reverse, and
 * the partial slice is written before exiting 0.
 */
#include <getopt.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl_server.h"
#include "fleet.h"
#include "live.h"
#include "nmiprofd.h"
#include "np_log.h"
#include "signals.h"
#include "slices.h"
#include "store.h"
#include "symcache.h"
#include "np_clock.h"

static void npd_usage(FILE *f)
{
	fprintf(f,
"Usage: nmiprofd [options]\n"
"Continuous NMI-based profiler and hard-lockup watchdog daemon.\n"
"\n"
"  -c, --config FILE           configuration file (default " NPD_DEFAULT_CONFIG ")\n"
"  -s, --store-dir DIR         profile store (default " NPD_DEFAULT_STORE ")\n"
"  -S, --socket PATH           control socket (default " NP_CTL_DEFAULT_SOCKET ")\n"
"  -b, --backend NAME          auto, kmod or libperf (default auto)\n"
"  -F, --frequency HZ          samples per second per CPU (default 99)\n"
"      --slice-seconds N       seconds per stored slice (default 60)\n"
"      --retention-size SIZE   keep at most SIZE on disk, e.g. 1G (0: no limit)\n"
"      --retention-age AGE     keep at most AGE, e.g. 7d (0: no limit)\n"
"      --pending-size SIZE     unwritten samples held while the store\n"
"                              fails, at most (default 64M)\n"
"      --kernel-stack-depth N  kernel frames per sample (default %d)\n"
"      --user-stack-depth N    user frames per sample (default %d)\n"
"      --no-user-stacks        kernel stacks only\n"
"      --unwind-budget SIZE    nmiprof.ko's memory for unwind tables\n"
"                              (default: the module's, 32M)\n"
"      --live-seconds N        seconds of live history for top (default 300)\n"
"      --clickhouse-url URL    ship slices to ClickHouse, e.g.\n"
"                              http://127.0.0.1:8123/?database=nmiprof\n"
"      --clickhouse-password-file FILE\n"
"                              its password (the file readable by root only)\n"
"      --clickhouse-timeout T  one request at most T (default 30s)\n"
"      --host-label NAME       this host in the fleet (default: the hostname)\n"
"      --labels K=V[,K=V...]   labels of this host's slices\n"
"  -l, --log-level LEVEL       error, warning, info or debug (default info)\n"
"  -f, --foreground            run in the foreground (the default; accepted)\n"
"      --check-config          print the effective configuration and exit\n"
"  -V, --version               print the version and exit\n"
"  -h, --help                  this help\n"
"\n"
"Flags override the configuration file; SIGHUP reloads it, SIGTERM writes\n"
"the current slice and exits.  See nmiprofd(8).\n",
		NMIPROF_DEFAULT_FRAMES, NMIPROF_DEFAULT_FRAMES);
}

enum {
	OPT_SLICE = 256, OPT_RET_SIZE, OPT_RET_AGE, OPT_KDEPTH, OPT_UDEPTH,
	OPT_NO_USTACKS, OPT_LIVE, OPT_CHECK, OPT_CH_URL, OPT_CH_PWFILE,
	OPT_CH_TIMEOUT, OPT_HOST_LABEL, OPT_LABELS, OPT_PENDING, OPT_UW_BUDGET,
};

static const struct option npd_options[] = {
	{ "config", required_argument, NULL, 'c' },
	{ "store-dir", required_argument, NULL, 's' },
	{ "socket", required_argument, NULL, 'S' },
	{ "backend", required_argument, NULL, 'b' },
	{ "frequency", required_argument, NULL, 'F' },
	{ "slice-seconds", required_argument, NULL, OPT_SLICE },
	{ "retention-size", required_argument, NULL, OPT_RET_SIZE },
	{ "retention-age", required_argument, NULL, OPT_RET_AGE },
	{ "pending-size", required_argument, NULL, OPT_PENDING },
	{ "kernel-stack-depth", required_argument, NULL, OPT_KDEPTH },
	{ "user-stack-depth", required_argument, NULL, OPT_UDEPTH },
	{ "no-user-stacks", no_argument, NULL, OPT_NO_USTACKS },
	{ "unwind-budget", required_argument, NULL, OPT_UW_BUDGET },
	{ "live-seconds", required_argument, NULL, OPT_LIVE },
	{ "clickhouse-url", required_argument, NULL, OPT_CH_URL },
	{ "clickhouse-password-file", required_argument, NULL, OPT_CH_PWFILE },
	{ "clickhouse-timeout", required_argument, NULL, OPT_CH_TIMEOUT },
	{ "host-label", required_argument, NULL, OPT_HOST_LABEL },
	{ "labels", required_argument, NULL, OPT_LABELS },
	{ "log-level", required_argument, NULL, 'l' },
	{ "foreground", no_argument, NULL, 'f' },
	{ "check-config", no_argument, NULL, OPT_CHECK },
	{ "version", no_argument, NULL, 'V' },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

/* The configuration key each flag sets (see config.c). */
static const char *npd_option_key(int opt)
{
	switch (opt) {
	case 's': return "store_dir";
	case 'S': return "socket";
	case 'b': return "backend";
	case 'F': return "frequency";
	case 'l': return "log_level";
	case OPT_SLICE: return "slice_seconds";
	case OPT_RET_SIZE: return "retention_size";
	case OPT_RET_AGE: return "retention_age";
	case OPT_PENDING: return "pending_size";
	case OPT_KDEPTH: return "kernel_stack_depth";
	case OPT_UDEPTH: return "user_stack_depth";
	case OPT_NO_USTACKS: return "user_stacks";
	case OPT_UW_BUDGET: return "unwind_budget";
	case OPT_LIVE: return "live_seconds";
	case OPT_CH_URL: return "clickhouse_url";
	case OPT_CH_PWFILE: return "clickhouse_password_file";
	case OPT_CH_TIMEOUT: return "clickhouse_timeout";
	case OPT_HOST_LABEL: return "host_label";
	case OPT_LABELS: return "labels";
	default: return NULL;
	}
}

/* 0: run; 1: exit 0 (help, version, check); -1: exit 2 (usage error). */
static int npd_parse_args(struct nmiprofd *d, int argc, char **argv, int *check)
{
	char err[256];
	int opt;

	d->config_path = NPD_DEFAULT_CONFIG;
	while ((opt = getopt_long(argc, argv, "c:s:S:b:F:l:fVh", npd_options,
				  NULL)) != -1) {
		const char *key = npd_option_key(opt);

		if (key) {
			const char *val = opt == OPT_NO_USTACKS ? "no" : optarg;

			if (npd_overrides_add(&d->ov, key, val, err, sizeof(err))) {
				fprintf(stderr, "nmiprofd: %s\n", err);
				return -1;
			}
			continue;
		}
		switch (opt) {
		case 'c':
			d->config_path = optarg;
			d->config_must_exist = 1;
			break;
		case 'f':
			break;
		case OPT_CHECK:
			*check = 1;
			break;
		case 'V':
			printf("nmiprofd %s (control protocol %s)\n", NMIPROF_VERSION,
			       NP_CTL_PROTO);
			return 1;
		case 'h':
			npd_usage(stdout);
			return 1;
		default:
			npd_usage(stderr);
			return -1;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "nmiprofd: unexpected argument '%s'\n", argv[optind]);
		return -1;
	}
	return 0;
}

static void npd_print_config(const struct npd_config *c)
{
	printf("store_dir = %s\n", c->store_dir);
	printf("slice_seconds = %u\n", c->slice_s);
	printf("retention_size = %llu\n", (unsigned long long)c->retention_bytes);
	printf("retention_age = %llu\n", (unsigned long long)c->retention_age_s);
	printf("pending_size = %llu\n", (unsigned long long)c->pending_bytes);
	printf("frequency = %u\n", c->freq_hz);
	printf("backend = %s\n", npd_backend_kind_name(c->backend));
	printf("socket = %s\n", c->socket_path);
	printf("kernel_stack_depth = %u\n", c->kstack_depth);
	printf("user_stack_depth = %u\n", c->ustack_depth);
	printf("user_stacks = %s\n", c->user_stacks ? "yes" : "no");
	if (c->unwind_budget)
		printf("unwind_budget = %llu\n", (unsigned long long)c->unwind_budget);
	else
		printf("# unwind_budget unset: nmiprof.ko keeps its unwind_budget_kb\n");
	printf("log_level = %s\n", np_log_level_name(c->log_level));
	printf("live_seconds = %u\n", c->live_s);
	printf("clickhouse_url = %s\n", c->clickhouse_url);
	printf("clickhouse_password_file = %s\n", c->clickhouse_password_file);
	printf("clickhouse_timeout = %u\n", c->clickhouse_timeout_s);
	printf("host_label = %s\n", c->host_label);
	printf("labels = %s\n", c->labels);
}

static int npd_start(struct nmiprofd *d)
{
	char err[512];
	const char *w;

	d->sym = np_symbolizer_new(err, sizeof(err));
	if (!d->sym) {
		np_err("symbolizer: %s", err);
		return -1;
	}
	if ((w = np_symbolizer_warning(d->sym)))
		np_warn("%s", w);
	d->symc = npd_symcache_new(d->sym);
	d->live = npd_live_new(d->cfg.live_s, npd_symcache_lookup, d->symc);
	if (!d->symc || !d->live) {
		np_err("out of memory");
		return -1;
	}
	d->slices = npd_slices_open(&d->cfg, npd_symcache_lookup, d->symc,
				    err, sizeof(err));
	if (!d->slices) {
		np_err("cannot open the store: %s", err);
		return -1;
	}
	d->fleet = npd_fleet_start(&d->cfg);
	if (!d->fleet) {
		np_err("fleet exporter: out of memory");
		return -1;
	}
	d->sigfd = npd_signals_open();
	if (d->sigfd < 0) {
		np_err("signalfd: %m");
		return -1;
	}
	d->ctl = npd_ctl_server_open(d->cfg.socket_path, npd_command, d,
				     err, sizeof(err));
	if (!d->ctl) {
		np_err("control socket: %s", err);
		return -1;
	}
	d->backend = npd_sampler_open(&d->cfg, err, sizeof(err));
	if (!d->backend) {
		np_err("cannot start sampling: %s", err);
		return -1;
	}
	return 0;
}

static void npd_stop(struct nmiprofd *d)
{
	/* First: a transfer in flight is cancelled, not waited for. */
	npd_fleet_stop(d->fleet);
	npd_sampler_retire(d);
	npd_lockups_retry(d, 1);
	npd_lockups_release(d);
	if (d->slices) {
		if (npd_slices_flush(d->slices, np_real_ns()) == 0)
			np_info("%llu samples, %llu lost, %llu slices written",
				(unsigned long long)d->n.samples,
				(unsigned long long)d->n.lost,
				(unsigned long long)npd_slices_written(d->slices));
		npd_slices_close(d->slices);
	}
	npd_ctl_server_close(d->ctl);
	if (d->sigfd >= 0)
		npd_signals_close(d->sigfd);
	npd_live_free(d->live);
	if (d->symc) {
		uint64_t hits, misses;

		npd_symcache_stats(d->symc, &hits, &misses);
		np_dbg("symbol memo: %llu hits, %llu misses",
		       (unsigned long long)hits, (unsigned long long)misses);
		npd_symcache_free(d->symc);
	}
	if (d->sym)
		np_symbolizer_free(d->sym);
	npd_overrides_free(&d->ov);
}

int main(int argc, char **argv)
{
	struct nmiprofd d = { .sigfd = -1 };
	char err[512];
	int check = 0, rc;

	/*
	 * A fixed threshold (which also turns off glibc's adaptive one):
	 * the tables that grow with the profile (stack table, symbol
	 * tables, the store encoder's temporaries) are mmapped and go back
	 * to the kernel when freed or shrunk, instead of raising the
	 * threshold and staying in the heap once the first one is freed.
	 */
	mallopt(M_MMAP_THRESHOLD, 256 << 10);
	np_log_init("nmiprofd", NP_LOG_INFO);
	rc = npd_parse_args(&d, argc, argv, &check);
	if (rc)
		return rc > 0 ? 0 : 2;
	if (npd_config_load(&d.cfg, d.config_path, d.config_must_exist, &d.ov,
			    err, sizeof(err))) {
		np_err("%s", err);
		npd_overrides_free(&d.ov);
		return 2;
	}
	if (check) {
		npd_print_config(&d.cfg);
		npd_overrides_free(&d.ov);
		return 0;
	}
	np_log_set_level(d.cfg.log_level);
	d.start_mono_ns = np_mono_ns();
	np_info("nmiprofd %s starting: store %s, socket %s, slices of %u s",
		NMIPROF_VERSION, d.cfg.store_dir, d.cfg.socket_path, d.cfg.slice_s);

	if (npd_start(&d)) {
		npd_stop(&d);
		return 1;
	}
	rc = npd_loop(&d);
	npd_stop(&d);
	np_info("stopped");
	return rc ? 1 : 0;
}
