/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Consumer side of one nmiprof.ko per-CPU ring (include/nmiprof/
 * nmiprof_abi.h), independent of the device so that tests can feed it
 * rings built in memory.
 */
#ifndef NP_KRING_H
#define NP_KRING_H

#include <stddef.h>
#include <stdint.h>
#include "np_event.h"
#include "np_recfmt.h"

struct np_kring {
	struct nmiprof_ring_ctrl *ctrl;	/* shared, RW: we write ->tail */
	const uint8_t *data;		/* shared, RO */
	uint64_t size;			/* data bytes, a power of two */
	uint32_t cpu;
	uint64_t records, pads, corrupt;
};

/* Check the control page against the mapping; one-line err on mismatch. */
int np_kring_init(struct np_kring *r, void *ctrl, const void *data,
		  uint64_t data_size, uint32_t cpu, char *err, size_t errlen);
/* Bytes between tail and head. */
uint64_t np_kring_pending(const struct np_kring *r);
/*
 * Decode and deliver every record between tail and head, then release
 * the space.  Stops early (after the current record) when fn returns
 * non-zero.  Returns records delivered.
 */
int np_kring_drain(struct np_kring *r, struct np_recfmt *fmt,
		   np_event_fn fn, void *arg, int *stopped);

#endif /* NP_KRING_H */
