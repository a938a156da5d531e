/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Signals as file-descriptor events: SIGHUP, SIGTERM and SIGINT are
 * blocked and read from a signalfd by the main loop, so no handler ever
 * runs in the middle of a drain or a store write.
 */
#ifndef NPD_SIGNALS_H
#define NPD_SIGNALS_H

#define NPD_SIG_RELOAD	(1U << 0)	/* SIGHUP */
#define NPD_SIG_STOP	(1U << 1)	/* SIGTERM, SIGINT */

/* Returns the signalfd, or -1 with errno set. */
int npd_signals_open(void);
/* Non-blocking: NPD_SIG_* bits of the signals that arrived since last time. */
unsigned int npd_signals_read(int fd);
void npd_signals_close(int fd);

#endif /* NPD_SIGNALS_H */
