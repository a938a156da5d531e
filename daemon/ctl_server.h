/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The control socket's transport: listening socket, non-blocking clients,
 * line framing, per-client timeouts.  It knows nothing of the commands:
 * each complete request line goes to the handler, which appends a whole
 * reply (np_ctl.h) to the buffer it is given.
 */
#ifndef NPD_CTL_SERVER_H
#define NPD_CTL_SERVER_H

#include <stddef.h>
#include "np_ctl.h"

#define NPD_CTL_MAX_CLIENTS	32
/* A client with no request in flight is dropped after this long. */
#define NPD_CTL_IDLE_MS		(10 * 60 * 1000)

typedef void (*npd_ctl_handler)(const struct np_ctl_line *req,
				struct np_buf *reply, void *arg);

struct npd_ctl_server;

/*
 * Create the socket at path (its directory only if it is the default's,
 * /run/nmiprof), mode 0660, group
 * "nmiprof" if that group exists (else root's).  Refuses to start when a
 * live daemon answers on path; removes a stale socket file.
 */
struct npd_ctl_server *npd_ctl_server_open(const char *path,
					   npd_ctl_handler fn, void *arg,
					   char *err, size_t errlen);
/* Accept, read, answer and write without blocking: wait at most timeout_ms. */
void npd_ctl_server_service(struct npd_ctl_server *s, int timeout_ms);
unsigned int npd_ctl_server_clients(const struct npd_ctl_server *s);
/* Close every client, remove the socket file. */
void npd_ctl_server_close(struct npd_ctl_server *s);

#endif /* NPD_CTL_SERVER_H */
