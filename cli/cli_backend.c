// SPDX-License-Identifier: GPL-2.0
/* Opening a sampling backend for top and record, and stop signals. */
#include <errno.h>
#include <signal.h>
#include <string.h>

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

struct np_backend *cli_backend_start(const char *cmd,
				     const struct np_backend_opts *o,
				     int *exit_code)
{
	char err[512] = "";
	struct np_backend_stats st;
	struct np_backend *b;
	int ret;

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
			     strstr(err, "range") || strstr(err, "maximum") ?
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
