// SPDX-License-Identifier: GPL-2.0
/*
 * nmiprof record: sample system-wide, one process, or a command, and
 * write a profile file: the store's segment format, one segment per
 * minute, symbolized now (while the processes and their maps exist).
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "np_backend.h"
#include "symbolizer.h"
#include "store.h"
#include "np_clock.h"

void usage_record(FILE *out)
{
	fprintf(out,
		"Usage: nmiprof record -o FILE [-F HZ] [-a | -p PID | -- CMD [ARGS]]\n"
		"                      [-C CPUS] [-d SECS] [-m PAGES] [--backend kmod|perf]\n\n"
		"Sample and write a profile file, for 'nmiprof report -i' and\n"
		"'nmiprof export -i'.  Without -p or a command, samples every CPU (-a)\n"
		"until interrupted (Ctrl-C) or for -d SECS.  With a command, exits\n"
		"with its status (255 if it could not be run).\n\n"
		"  -o, --output FILE      the profile file, mode 0600 (an existing one\n"
		"                         is kept as FILE.old); '-': standard output\n"
		"  -F, --freq HZ          samples per second per CPU (default 99)\n"
		"  -a, --all-cpus         system wide (the default)\n"
		"  -p, --pid PID          only this process\n"
		"  -C, --cpu CPUS         only these CPUs, e.g. 0,2-3\n"
		"  -d, --duration SECS    stop after SECS seconds\n"
		"  -m, --mmap-pages N     perf backend: ring pages per CPU, a power of\n"
		"                         two, or a size (512K, 4M) rounded up to one\n"
		"      --backend B        auto (default: kmod if /dev/nmiprof), kmod, perf\n"
		"      --no-user-stacks   kernel stacks only\n"
		"  -h, --help             this text\n");
}

enum { OPT_BACKEND = 256, OPT_NO_USTACKS };

static const struct option record_opts[] = {
	{ "output", required_argument, NULL, 'o' },
	{ "freq", required_argument, NULL, 'F' },
	{ "all-cpus", no_argument, NULL, 'a' },
	{ "pid", required_argument, NULL, 'p' },
	{ "cpu", required_argument, NULL, 'C' },
	{ "duration", required_argument, NULL, 'd' },
	{ "mmap-pages", required_argument, NULL, 'm' },
	{ "backend", required_argument, NULL, OPT_BACKEND },
	{ "no-user-stacks", no_argument, NULL, OPT_NO_USTACKS },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

struct recorder {
	struct np_symbolizer *syms;
	struct np_agg *agg;
	uint64_t oom;
};

static int symbolize(void *arg, uint32_t pid, uint64_t addr, int kernel,
		     struct np_sym *out)
{
	return np_symbolize(arg, pid, addr, kernel, out);
}

static int on_event(const struct np_event *ev, void *arg)
{
	struct recorder *r = arg;

	switch (ev->type) {
	case NP_EV_SAMPLE:
		if (np_agg_sample(r->agg, &ev->sample))
			r->oom++;
		break;
	case NP_EV_LOST:
		np_agg_lost(r->agg, ev->lost.lost);
		break;
	case NP_EV_MMAP:
	case NP_EV_COMM:
	case NP_EV_FORK:
	case NP_EV_EXIT:
		if (np_symbolizer_event(r->syms, ev) > 0)
			np_agg_maps_changed(r->agg);
		break;
	default:
		break;
	}
	return 0;
}

/*
 * Fork the command stopped before exec, so sampling can start on its
 * pid first: it execs when we close the go pipe.  A failed exec writes
 * its errno to *err_fd (closed by a successful exec), so the command's
 * own exit 127 is not taken for ours.
 */
static pid_t spawn(char **argv, int *go_fd, int *err_fd)
{
	int go[2], ep[2];
	pid_t pid;

	if (pipe2(go, O_CLOEXEC))
		return -1;
	if (pipe2(ep, O_CLOEXEC)) {
		close(go[0]);
		close(go[1]);
		return -1;
	}
	pid = fork();
	if (pid < 0) {
		close(go[0]);
		close(go[1]);
		close(ep[0]);
		close(ep[1]);
		return -1;
	}
	if (!pid) {
		char c;
		int e;

		close(go[1]);
		close(ep[0]);
		if (read(go[0], &c, 1) != 1)	/* EOF without a byte: abort */
			_exit(127);
		execvp(argv[0], argv);
		e = errno;
		fprintf(stderr, "nmiprof: record: %s: %s\n", argv[0], strerror(e));
		if (write(ep[1], &e, sizeof(e)) != sizeof(e))
			_exit(127);
		_exit(127);
	}
	close(go[0]);
	close(ep[1]);
	*go_fd = go[1];
	*err_fd = ep[0];
	return pid;
}

/*
 * The exit code of `record -- CMD`, as perf's: the command's own status
 * (128 + signal if killed), 255 if it could not be run at all.
 */
static int command_status(int status, int err_fd)
{
	int e;

	if (err_fd >= 0 && read(err_fd, &e, sizeof(e)) == sizeof(e))
		return 255;
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	return 255;
}

/*
 * Segments are written while the job runs, beside it: zstd's level 19
 * (the store's for small segments) spent 1.2 M instructions on each
 * segment of a few KiB, level 3 a fifth of it, for a few % more bytes.
 */
#define RECORD_ZSTD_LEVEL	3

/*
 * Slices grow from 1 s to the store's slice length, so a recording that
 * is killed early still keeps most of what it sampled.
 */
static uint64_t next_slice_ns(uint64_t cur)
{
	cur = cur ? cur * 2 : 1000000000ULL;
	return cur < NP_STORE_DEFAULT_SLICE_NS ? cur : NP_STORE_DEFAULT_SLICE_NS;
}

int cmd_record(int argc, char **argv)
{
	struct np_backend_opts bo;
	struct recorder r = { 0 };
	struct np_agg_opts ao;
	struct np_backend *b = NULL;
	struct np_profile *file = NULL;
	const char *output = NULL;
	uint64_t v, duration_ns = 0, start_mono, slice_start, wall_start;
	uint64_t samples = 0, lost = 0, segments = 0, slice_ns = 0;
	pid_t child = -1;
	int go_fd = -1, err_fd = -1, opt, ret = EXIT_OK, status = 0, ran = 0;
	int committed = 0;
	char err[512];

	np_backend_opts_init(&bo);
	optind = 1;
	opterr = 0;
	while ((opt = getopt_long(argc, argv, "+:o:F:ap:C:d:m:h", record_opts, NULL)) != -1) {
		switch (opt) {
		case 'o':
			output = optarg;
			break;
		case 'F':
			if (cli_parse_u64(optarg, 1, NMIPROF_MAX_FREQ, &v))
				return cli_usage_error("record", "bad frequency '%s' (1..%u)",
						       optarg, NMIPROF_MAX_FREQ);
			bo.freq_hz = (uint32_t)v;
			break;
		case 'a':
			bo.pid = -1;
			break;
		case 'p':
			if (cli_parse_u64(optarg, 1, INT32_MAX, &v))
				return cli_usage_error("record", "bad pid '%s'", optarg);
			bo.pid = (int)v;
			break;
		case 'C':
			bo.cpus = optarg;
			break;
		case 'd':
			if (cli_parse_u64(optarg, 1, 365ULL * 86400, &v))
				return cli_usage_error("record", "bad duration '%s'", optarg);
			duration_ns = v * 1000000000ULL;
			break;
		case 'm':
			if (cli_parse_mmap_pages("record", optarg, &bo.mmap_pages))
				return EXIT_USAGE;
			break;
		case OPT_BACKEND:
			if (cli_parse_backend(optarg) < 0)
				return cli_usage_error("record", "unknown backend '%s'", optarg);
			bo.kind = (enum np_backend_kind)cli_parse_backend(optarg);
			break;
		case OPT_NO_USTACKS:
			bo.user_stacks = 0;
			break;
		case 'h':
			usage_record(stdout);
			return EXIT_OK;
		default:	/* ':' or '?' */
			return cli_option_error("record", opt, argv);
		}
	}
	if (!output)
		return cli_usage_error("record", "-o FILE is required");
	if (optind < argc && bo.pid > 0)
		return cli_usage_error("record", "-p PID and a command exclude each other");

	r.syms = np_symbolizer_new(err, sizeof(err));
	if (!r.syms) {
		cli_error("record", "%s", err);
		return EXIT_FAILURE_RT;
	}
	np_agg_opts_init(&ao);
	ao.symbolize = symbolize;
	ao.symbolize_arg = r.syms;
	ao.period_ns = NP_NSEC_PER_SEC / bo.freq_hz;	/* into every segment */
	r.agg = np_agg_new(&ao);
	if (!r.agg) {
		cli_error("record", "out of memory");
		np_symbolizer_free(r.syms);
		return EXIT_FAILURE_RT;
	}
	/* The file before sampling: a bad path fails fast, before any work;
	 * an existing one is replaced only once sampling has started. */
	file = np_profile_create(output, RECORD_ZSTD_LEVEL, err, sizeof(err));
	if (!file) {
		cli_error("record", "%s", err);
		ret = errno == EACCES ? EXIT_NO_PERM : EXIT_FAILURE_RT;
		goto out;
	}
	cli_catch_signals();
	if (optind < argc) {
		child = spawn(argv + optind, &go_fd, &err_fd);
		if (child < 0) {
			cli_error("record", "fork: %s", strerror(errno));
			ret = EXIT_FAILURE_RT;
			goto out;
		}
		bo.pid = child;
	}
	b = cli_backend_start("record", &bo, &ret);
	if (!b)
		goto out;
	if (np_symbolizer_warning(r.syms) && !cli_backend_user_only(b))
		cli_error("record", "warning: %s", np_symbolizer_warning(r.syms));
	/* An empty first segment: the file is a valid (empty) profile from
	 * now on, whatever happens to us. */
	wall_start = np_real_ns();
	if (np_profile_write(file, r.agg, wall_start, wall_start, err, sizeof(err)) ||
	    np_profile_commit(file, err, sizeof(err))) {
		cli_error("record", "%s", err);
		ret = EXIT_FAILURE_RT;
		goto out;
	}
	committed = 1;
	if (go_fd >= 0) {
		if (write(go_fd, "g", 1) != 1)
			cli_error("record", "cannot start the command");
		close(go_fd);
		go_fd = -1;
	}

	start_mono = slice_start = np_mono_ns();
	slice_ns = next_slice_ns(0);
	for (;;) {
		uint64_t now = np_mono_ns();
		int done = cli_interrupted() ||
			   (duration_ns && now - start_mono >= duration_ns);

		if (child > 0 && waitpid(child, &status, WNOHANG) == child) {
			child = -1;
			ran = 1;
			done = 1;
		}
		int pr = np_backend_poll(b, done ? 0 : 200);

		/* -p PID or the command exited: drain what is left, then stop. */
		if (pr == -ESRCH)
			done = 1;
		else if (pr < 0 && pr != -EINTR) {
			cli_error("record", "poll: %s", strerror(-pr));
			ret = EXIT_FAILURE_RT;
			done = 1;
		}
		/* Stopping first makes the last drain hand on everything the
		 * backend still holds back for ordering.
		 */
		if (done)
			np_backend_stop(b);
		if (np_backend_drain(b, on_event, &r) < 0 && !done) {
			cli_error("record", "reading samples failed");
			ret = EXIT_FAILURE_RT;
			done = 1;
		}
		/* A segment per slice, and one at the end, each fdatasync'ed. */
		if (done || now - slice_start >= slice_ns) {
			uint64_t wall_now = np_real_ns();

			if (np_agg_samples(r.agg) || np_agg_lost_count(r.agg)) {
				samples += np_agg_samples(r.agg);
				lost += np_agg_lost_count(r.agg);
				if (np_profile_write(file, r.agg, wall_start, wall_now,
						  err, sizeof(err))) {
					cli_error("record", "%s", err);
					ret = EXIT_FAILURE_RT;
					break;
				}
				segments++;
			}
			np_agg_reset(r.agg);
			slice_start = now;
			slice_ns = next_slice_ns(slice_ns);
			wall_start = wall_now;
		}
		if (done)
			break;
	}
	if (r.oom)
		cli_error("record", "warning: %llu samples dropped: out of memory",
			  (unsigned long long)r.oom);
	if (ret == EXIT_OK)
		fprintf(stderr, "nmiprof record: %llu samples, %llu lost, %llu segment(s) "
			"written to %s\n", (unsigned long long)samples,
			(unsigned long long)lost, (unsigned long long)segments, output);
	cli_backend_lost_warning("record", b, samples, lost);
out:
	if (go_fd >= 0)
		close(go_fd);	/* the child sees EOF and exits */
	if (child > 0) {
		if (cli_interrupted())
			kill(child, SIGTERM);
		if (waitpid(child, &status, 0) == child)
			ran = 1;
	}

	if (b) {
		np_backend_stop(b);
		np_backend_close(b);
	}
	if (file && !committed)
		np_profile_discard(file);	/* sampling never started: keep output as it was */
	else if (file && np_profile_close(file) && ret == EXIT_OK) {
		cli_error("record", "%s: close failed", output);
		ret = EXIT_FAILURE_RT;
	}
	if (ran && ret == EXIT_OK)
		ret = command_status(status, err_fd);
	if (err_fd >= 0)
		close(err_fd);
	np_agg_free(r.agg);
	np_symbolizer_free(r.syms);
	return ret;
}
