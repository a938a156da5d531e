// SPDX-License-Identifier: GPL-2.0
/*
 * nmiprof status: is the module loaded, which NMI source does it use,
 * is the nested-NMI entry safe, what does the handler cost per CPU, how
 * much was lost, and what state are the daemon and its store in.
 * Asks nmiprofd over its socket when it runs, else looks directly
 * (/sys/module/nmiprof, /dev/nmiprof, the store directory).
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "np_ctl.h"
#include "np_unwind.h"
#include "store.h"

void usage_status(FILE *out)
{
	fprintf(out,
		"Usage: nmiprof status [--socket PATH] [--store DIR]\n\n"
		"Show the module (loaded, NMI source, nested-NMI safety, handler cost\n"
		"and losses per CPU), the daemon and its store.\n\n"
		"      --socket PATH      nmiprofd's control socket (default %s)\n"
		"      --store DIR        store to inspect when no daemon runs\n"
		"                         (default %s)\n"
		"  -h, --help             this text\n\n"
		"Exit status 0 whenever the report could be printed, 6 when the daemon\n"
		"cannot write its store (disk full, directory gone).\n",
		NP_CTL_DEFAULT_SOCKET, NP_STORE_DEFAULT_DIR);
}

enum { OPT_SOCKET = 256, OPT_SSTORE };

static const struct option status_opts[] = {
	{ "socket", required_argument, NULL, OPT_SOCKET },
	{ "store", required_argument, NULL, OPT_SSTORE },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

static const char *source_name(uint32_t s)
{
	switch (s) {
	case NMIPROF_SRC_PMU: return "pmu (cycles overflow NMI)";
	case NMIPROF_SRC_IPI: return "ipi (buddy hrtimer NMI IPIs)";
	case NMIPROF_SRC_EXTERNAL: return "external (unclaimed NMIs)";
	default: return "auto/unknown";
	}
}

static void read_line(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "r");

	buf[0] = 0;
	if (!f)
		return;
	if (fgets(buf, (int)len, f))
		buf[strcspn(buf, "\n")] = 0;
	fclose(f);
}

/* The module's unwind tables (ABI 1.2) and why its table walks ended. */
static void unwind_status(int fd)
{
	struct nmiprof_uw_stats u;

	memset(&u, 0, sizeof(u));
	if (ioctl(fd, NMIPROF_IOC_UW_STATS, &u)) {
		printf("unwind:   unavailable: %s\n", strerror(errno));
		return;
	}
	printf("unwind:   %llu tables, %.1f of %.1f MiB, %llu processes; "
	       "%llu loaded, %llu refused, %llu evicted, %llu reused\n",
	       (unsigned long long)u.tables, u.table_bytes / 1048576.0,
	       u.budget_bytes / 1048576.0, (unsigned long long)u.sets,
	       (unsigned long long)u.loaded, (unsigned long long)u.refused,
	       (unsigned long long)u.evicted, (unsigned long long)u.reused);
	printf("unwind:   %llu walks, ended by:", (unsigned long long)u.walks);
	for (int i = 0; i < NMIPROF_UW_STOP_NR; i++)
		printf("%s %s %llu", i ? "," : "", np_uw_stop_name(i),
		       (unsigned long long)u.stops[i]);
	printf("\n");
}

/* The module, straight from the device. */
static void module_status(void)
{
	struct nmiprof_hello hello;
	struct nmiprof_stats st;
	struct nmiprof_cpu_stats *cpus;
	char ver[64];
	int fd;

	if (access("/sys/module/nmiprof", F_OK)) {
		printf("module:   not loaded (/sys/module/nmiprof absent); "
		       "top/record use perf events\n");
		return;
	}
	read_line("/sys/module/nmiprof/version", ver, sizeof(ver));
	printf("module:   loaded%s%s\n", ver[0] ? ", version " : "", ver);
	fd = open(NMIPROF_DEVICE, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		printf("device:   %s: %s\n", NMIPROF_DEVICE, strerror(errno));
		return;
	}
	memset(&hello, 0, sizeof(hello));
	hello.magic = NMIPROF_MAGIC;
	hello.abi_version = NMIPROF_ABI_VERSION;
	hello.abi_minor = NMIPROF_ABI_MINOR;
	if (ioctl(fd, NMIPROF_IOC_HELLO, &hello)) {
		printf("device:   %s: hello: %s (module ABI %u.%u, ours %u.%u)\n",
		       NMIPROF_DEVICE, strerror(errno), hello.abi_version,
		       hello.abi_minor, (unsigned int)NMIPROF_ABI_VERSION,
		       (unsigned int)NMIPROF_ABI_MINOR);
		close(fd);
		return;
	}
	printf("nmi:      nested-NMI-safe entry %s\n",
	       hello.nested_nmi_safe ? "found (repeat_nmi/end_repeat_nmi)" :
	       "NOT found: sampling refused");
	cpus = calloc(hello.nr_cpu_ids ? hello.nr_cpu_ids : 1, sizeof(*cpus));
	memset(&st, 0, sizeof(st));
	st.nr_cpus = hello.nr_cpu_ids;
	st.cpus = (uint64_t)(uintptr_t)cpus;
	if (!cpus || ioctl(fd, NMIPROF_IOC_GET_STATS, &st)) {
		printf("stats:    unavailable: %s\n", cpus ? strerror(errno) : "no memory");
		free(cpus);
		close(fd);
		return;
	}
	printf("source:   %s, %s\n", source_name(st.source),
	       st.running ? "running" : "stopped");
	printf("%5s %12s %10s %10s %10s %10s %10s %8s %10s\n", "CPU", "samples",
	       "lost", "latched", "min ns", "avg ns", "max ns", "lockups",
	       "throttled");
	for (uint32_t i = 0; i < st.nr_cpus && i < hello.nr_cpu_ids; i++) {
		const struct nmiprof_cpu_stats *c = &cpus[i];

		if (!c->samples && !c->lost && !c->lockups)
			continue;
		printf("%5u %12llu %10llu %10llu %10llu %10llu %10llu %8llu %10llu\n", i,
		       (unsigned long long)c->samples, (unsigned long long)c->lost,
		       (unsigned long long)c->latched,
		       (unsigned long long)c->cost_min_ns,
		       (unsigned long long)(c->samples ? c->cost_sum_ns / c->samples : 0),
		       (unsigned long long)c->cost_max_ns,
		       (unsigned long long)c->lockups,
		       (unsigned long long)c->throttled);
	}
	free(cpus);
	/* Queued lockups wait for nmiprofd; a full queue drops new ones. */
	if (hello.abi_minor >= 4)
		printf("lockups:  %llu dropped, lockup queue full\n",
		       (unsigned long long)st.lockups_dropped);
	if (hello.abi_minor >= 2)
		unwind_status(fd);
	close(fd);
}

/* Slices not reaching the disk, and what that has cost since start. */
static void store_health(const struct np_ctl_status *s)
{
	if (s->store_errno) {
		uint64_t now = (uint64_t)time(NULL) * 1000000000ULL;
		const char *name = strerrorname_np(s->store_errno);
		char since[32];

		cli_format_time(s->store_since_ns, since, sizeof(since));
		printf("store:    WRITES FAILING since %s (%llu s): %s (%s)\n",
		       since, (unsigned long long)(now > s->store_since_ns ?
		       (now - s->store_since_ns) / 1000000000ULL : 0),
		       s->store_error, name ? name : "?");
		printf("store:    %llu sample(s) pending in memory, %.1f of %.1f MiB "
		       "(pending_size); retried every slice\n",
		       (unsigned long long)s->store_pending,
		       s->store_pending_bytes / 1048576.0,
		       s->store_pending_max / 1048576.0);
	}
	if (s->store_dropped)
		printf("store:    %llu unwritten sample(s) dropped over pending_size "
		       "since start\n", (unsigned long long)s->store_dropped);
	if (s->store_pruned_segs)
		printf("store:    disk full: %llu oldest segment(s), %llu bytes, "
		       "deleted to make room since start\n",
		       (unsigned long long)s->store_pruned_segs,
		       (unsigned long long)s->store_pruned_bytes);
}

static void daemon_status(const struct np_ctl_status *s)
{
	printf("daemon:   nmiprofd %s pid %lld, up %llus, %u client(s)\n", s->version,
	       (long long)s->pid, (unsigned long long)s->uptime_s, s->clients);
	printf("backend:  %s, source %s, %u CPUs at %u Hz\n", s->backend, s->source,
	       s->nr_cpus, s->freq_hz);
	printf("samples:  %llu  lost: %llu  lockups: %llu\n",
	       (unsigned long long)s->samples, (unsigned long long)s->lost,
	       (unsigned long long)s->lockups);
	if (s->nested_nmi_safe >= 0)
		printf("nmi:      nested-NMI-safe entry %s\n",
		       s->nested_nmi_safe ? "found" : "NOT found");
	if (s->cost_max_ns)
		printf("handler:  min %llu ns, avg %llu ns, max %llu ns\n",
		       (unsigned long long)s->cost_min_ns,
		       (unsigned long long)s->cost_avg_ns,
		       (unsigned long long)s->cost_max_ns);
	printf("store:    %s, %llu bytes, %llu slice(s) of %us written, live %us\n",
	       s->store_dir, (unsigned long long)s->store_bytes,
	       (unsigned long long)s->slices, s->slice_s, s->live_s);
	store_health(s);
	if (s->rss_bytes)
		printf("memory:   RSS %.1f MiB; live view %.1f, current slice %.1f, "
		       "store dictionary %.1f, symbols %.1f MiB\n",
		       s->rss_bytes / 1048576.0, s->mem_live / 1048576.0,
		       s->mem_slice / 1048576.0, s->mem_store / 1048576.0,
		       s->mem_symbols / 1048576.0);
	if (!strcmp(s->fleet, "off"))
		printf("fleet:    off (no clickhouse_url)\n");
	else if (s->fleet[0])
		printf("fleet:    %s to %s as %s; %llu slice(s), %llu samples sent, "
		       "%llu waiting; lost to retention before sent: %llu slice(s), "
		       "%llu samples%s%s\n", s->fleet, s->fleet_url, s->fleet_host,
		       (unsigned long long)s->fleet_sent_slices,
		       (unsigned long long)s->fleet_sent_samples,
		       (unsigned long long)s->fleet_backlog,
		       (unsigned long long)s->fleet_lost_slices,
		       (unsigned long long)s->fleet_lost_samples,
		       s->fleet_error[0] ? "; last error: " : "", s->fleet_error);
	if (s->warning[0])
		printf("warning:  %s\n", s->warning);
}

struct seg_count {
	uint64_t n, bytes, first, last;
};

static int count_seg(const char *name, const struct np_seg_info *in, void *arg)
{
	struct seg_count *c = arg;

	c->n++;
	c->bytes += in->size;
	if (!c->first || in->start_ns < c->first)
		c->first = in->start_ns;
	if (in->end_ns > c->last)
		c->last = in->end_ns;
	return 0;
}

static void quiet(void *arg, const char *msg)
{
	(*(unsigned *)arg)++;
}

static void store_status(const char *dir)
{
	struct seg_count c = { 0 };
	unsigned damaged = 0;
	uint64_t dict_bytes, dicts;
	char err[512], t0[32], t1[32];

	if (np_store_list(dir, count_seg, &c, quiet, &damaged, err, sizeof(err))) {
		printf("store:    %s\n", err);
		return;
	}
	if (np_store_dict_bytes(dir, &dict_bytes, &dicts))
		dict_bytes = dicts = 0;
	cli_format_time(c.first, t0, sizeof(t0));
	cli_format_time(c.last, t1, sizeof(t1));
	printf("store:    %s: %llu segment(s), %llu dictionar%s, %llu bytes, %s .. %s%s\n",
	       dir, (unsigned long long)c.n, (unsigned long long)dicts,
	       dicts == 1 ? "y" : "ies",
	       (unsigned long long)(c.bytes + dict_bytes), t0, t1,
	       damaged ? " (some damaged)" : "");
}

int cmd_status(int argc, char **argv)
{
	const char *sock = NP_CTL_DEFAULT_SOCKET, *store = NP_STORE_DEFAULT_DIR;
	struct np_ctl_client *c;
	struct np_ctl_status st;
	char err[512], paranoid[16];
	int opt, ret = EXIT_OK;

	optind = 1;
	opterr = 0;
	while ((opt = getopt_long(argc, argv, ":h", status_opts, NULL)) != -1) {
		switch (opt) {
		case OPT_SOCKET:
			sock = optarg;
			break;
		case OPT_SSTORE:
			store = optarg;
			break;
		case 'h':
			usage_status(stdout);
			return EXIT_OK;
		default:	/* ':' or '?' */
			return cli_option_error("status", opt, argv);
		}
	}
	if (optind < argc)
		return cli_usage_error("status", "unexpected argument '%s'", argv[optind]);

	printf("nmiprof %s\n", NMIPROF_VERSION);
	module_status();
	read_line("/proc/sys/kernel/perf_event_paranoid", paranoid, sizeof(paranoid));
	if (paranoid[0])
		printf("perf:     perf_event_paranoid = %s%s\n", paranoid,
		       atoi(paranoid) > 0 && geteuid() ?
		       " (system-wide sampling needs root or CAP_PERFMON)" : "");

	c = np_ctl_open(sock, err, sizeof(err));
	if (c && !np_ctl_status(c, &st, err, sizeof(err))) {
		daemon_status(&st);
		if (st.store_errno)
			ret = EXIT_FAILURE_RT;
	} else {
		printf("daemon:   not reachable (%s)\n", err);
		store_status(store);
	}
	if (c)
		np_ctl_close(c);
	return ret;
}
