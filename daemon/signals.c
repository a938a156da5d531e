// SPDX-License-Identifier: GPL-2.0
/*
 * Signal delivery through a signalfd (see signals.h).
 */
#include <signal.h>
#include <unistd.h>
#include <sys/signalfd.h>

#include "np_log.h"
#include "signals.h"

int npd_signals_open(void)
{
	sigset_t set;
	int fd;

	/* A client hanging up must not kill the daemon: EPIPE instead. */
	signal(SIGPIPE, SIG_IGN);
	sigemptyset(&set);
	sigaddset(&set, SIGHUP);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	if (sigprocmask(SIG_BLOCK, &set, NULL))
		return -1;
	fd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
	return fd;
}

unsigned int npd_signals_read(int fd)
{
	struct signalfd_siginfo si;
	unsigned int got = 0;

	while (read(fd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
		switch (si.ssi_signo) {
		case SIGHUP:
			np_info("SIGHUP from pid %u: reloading the configuration",
				si.ssi_pid);
			got |= NPD_SIG_RELOAD;
			break;
		case SIGTERM:
		case SIGINT:
			np_info("%s from pid %u: flushing and exiting",
				si.ssi_signo == SIGTERM ? "SIGTERM" : "SIGINT",
				si.ssi_pid);
			got |= NPD_SIG_STOP;
			break;
		}
	}
	return got;
}

void npd_signals_close(int fd)
{
	sigset_t set;

	if (fd >= 0)
		close(fd);
	sigemptyset(&set);
	sigaddset(&set, SIGHUP);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigprocmask(SIG_UNBLOCK, &set, NULL);
}
