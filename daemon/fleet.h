/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The fleet exporter: ships every slice the store holds, in order, to
 * ClickHouse (lib/fleet), from a thread of its own so that a slow or dead
 * server never delays the drain.  The local store is the spool: a
 * durable cursor (<store>/fleet.cursor) names the newest slice the
 * server acknowledged; what retention removes before it was sent is
 * counted there too.
 */
#ifndef NPD_FLEET_H
#define NPD_FLEET_H

#include <stdint.h>

#include "config.h"
#include "np_ctl.h"

struct npd_fleet;

/* Starts the thread (idle while clickhouse_url is empty).  NULL: ENOMEM. */
struct npd_fleet *npd_fleet_start(const struct npd_config *cfg);
/* SIGHUP: new URL, password file, host label, labels, timeout. */
void npd_fleet_configure(struct npd_fleet *f, const struct npd_config *cfg);
/* A slice (or lockup) was written: look at the store now. */
void npd_fleet_kick(struct npd_fleet *f);
/* Ends a transfer in flight and joins the thread. */
void npd_fleet_stop(struct npd_fleet *f);
/* The fleet_* fields of a status reply. */
void npd_fleet_status(struct npd_fleet *f, struct np_ctl_status *st);
/* Heap bytes the exporter holds (its stack memo and buffers). */
size_t npd_fleet_mem(struct npd_fleet *f);

/*
 * One slice of the store read into a (reset first) to be shipped.  0
 * read; 1 lost to the fleet (retention removed it: err empty, or it is
 * damaged); -1 not read now (short of memory or file descriptors, err
 * says which): the exporter tries it again after a backoff.
 */
struct np_store_reader;
struct np_agg;
struct np_read_stats;
int npd_fleet_read_slice(struct np_store_reader *rd, const char *name,
			 struct np_agg *a, struct np_read_stats *st,
			 char *err, size_t errlen);

#endif /* NPD_FLEET_H */
