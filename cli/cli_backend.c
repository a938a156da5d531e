// SPDX-License-Identifier: GPL-2.0
/* Opening a sampling backend for top and record, and stop signals. */
#include <ctype.h>
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "np_backend.h"

int cli_parse_backend(const char *s)
{
	if (!strcmp(s, "auto"))
		return NP_BACKEND_AUTO;
	if (!strcmp(s, "kmod"))
		return NP_BACKEND_KMOD;
	if (!strcmp(s, "perf") || !strcmp(s, "libperf"))
		return NP_BACKEND_PERF;
	return -1;
}

int cli_parse_mmap_pages(const char *cmd, const char *s, uint32_t *pages)
{
	uint64_t psz = (uint64_t)sysconf(_SC_PAGESIZE), v, p = 1;
	const char *units = "BKMG";
	const char *u;
	char *end;

	errno = 0;
	v = isdigit((unsigned char)*s) ? strtoull(s, &end, 10) : 0;
	if (errno || !v || v > NP_MMAP_PAGES_MAX * psz)
		goto bad;
	if (*end) {
		u = strchr(units, toupper((unsigned char)*end));
		if (!u || end[1])
			goto bad;
		for (; u > units; u--)
			v <<= 10;
		v = (v + psz - 1) / psz;
		while (p < v)
			p <<= 1;
		v = p;
	} else if (v & (v - 1)) {
		return cli_usage_error(cmd, "bad -m/--mmap-pages '%s': pages must "
				       "be a power of two (or a size: 512K, 4M)", s);
	}
	if (v > NP_MMAP_PAGES_MAX)
		goto bad;
	*pages = (uint32_t)v;
	return 0;
bad:
	return cli_usage_error(cmd, "bad -m/--mmap-pages '%s': 1 to %u pages, a "
			       "power of two, or a size such as 512K or 4M", s,
			       NP_MMAP_PAGES_MAX);
}

void cli_backend_lost_warning(const char *cmd, struct np_backend *b,
			      uint64_t samples, uint64_t lost)
{
	struct np_backend_stats st;
	uint64_t kib;

	memset(&st, 0, sizeof(st));
	if (!lost || np_backend_stats(b, &st))
		return;
	kib = st.ring_bytes >> 10;
	cli_error(cmd, "warning: lost %llu of %llu samples (%.1f%%): the rings "
		  "(%llu KiB per CPU) overflowed", (unsigned long long)lost,
		  (unsigned long long)(samples + lost),
		  100.0 * (double)lost / (double)(samples + lost),
		  (unsigned long long)kib);
	if (!strcmp(np_backend_name(b), "kmod"))
		cli_error(cmd, "warning: load nmiprof.ko with bigger rings "
			  "(modprobe nmiprof ring_kb=%llu) or lower -F",
			  (unsigned long long)(kib && kib * 4 < 262144 ?
					       kib * 4 : 262144));
	else
		cli_error(cmd, "warning: use bigger rings (-m %llu) or lower -F",
			  (unsigned long long)(kib ? kib * 4 * 1024 /
					       (uint64_t)sysconf(_SC_PAGESIZE) : 256));
}

struct np_backend *cli_backend_start(const char *cmd,
				     const struct np_backend_opts *o,
				     int *exit_code)
{
	char err[512] = "";
	struct np_backend_stats st;
	struct np_backend *b;
	int ret;

	if (o->mmap_pages && np_backend_pick(o) == NP_BACKEND_KMOD) {
		*exit_code = cli_usage_error(cmd, "%s", NP_KMOD_NO_MMAP_PAGES);
		return NULL;
	}
	/* A process or CPU that is not there is the command line's fault. */
	if (np_backend_check_target(o, err, sizeof(err))) {
		*exit_code = cli_usage_error(cmd, "%s", err);
		return NULL;
	}
	errno = 0;
	b = np_backend_open(o, err, sizeof(err));
	if (!b) {
		int e = errno;

		cli_error(cmd, "%s", err[0] ? err : "cannot open a sampling backend");
		/* The backends leave the failing call's errno behind. */
		*exit_code = e == EACCES || e == EPERM ? EXIT_NO_PERM :
			     strstr(err, "range") || strstr(err, "maximum") ||
			     strstr(err, "at least") ?
			     EXIT_USAGE : EXIT_NO_BACKEND;
		return NULL;
	}
	ret = np_backend_start(b);
	if (ret < 0) {
		cli_error(cmd, "starting the %s backend: %s", np_backend_name(b),
			  strerror(-ret));
		np_backend_close(b);
		*exit_code = cli_exit_for_errno(ret);
		return NULL;
	}
	if (np_backend_stats(b, &st) == 0 && st.note)
		cli_error(cmd, "note: %s", st.note);
	*exit_code = EXIT_OK;
	return b;
}

int cli_backend_user_only(struct np_backend *b)
{
	struct np_backend_stats st;

	return np_backend_stats(b, &st) == 0 && st.kernel_excluded;
}

static volatile sig_atomic_t stop_requested;

static void on_signal(int sig)
{
	stop_requested = sig;
}

void cli_catch_signals(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
}

int cli_interrupted(void)
{
	return stop_requested != 0;
}
