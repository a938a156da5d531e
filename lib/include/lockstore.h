/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Hard-lockup reports, kept apart from profiles: <store>/lockups/, one
 * small file per lockup, written atomically (temp, fsync, rename, fsync
 * dir).  A lockup is rare and precious, so retention removes lockups only
 * after every profile segment older than them is gone (store.c).
 * Format: docs/store-format.md.
 */
#ifndef NP_LOCKSTORE_H
#define NP_LOCKSTORE_H

#include <stddef.h>
#include <stdint.h>
#include "np_event.h"
#include "symbolizer.h"
#include "store.h"

#define NP_LOCKUP_ID_LEN	64

struct np_lockup_rec {
	char id[NP_LOCKUP_ID_LEN];	/* for `nmiprof lockups show ID` */
	uint64_t wall_ns;		/* CLOCK_REALTIME of the lockup, or
					 * when stored (modules before 1.3) */
	uint64_t time_ns, stuck_ns;	/* from the module (monotonic) */
	uint32_t cpu, pid, tid, flags;	/* flags: NMIPROF_LF_* */
	char comm[NMIPROF_COMM_LEN + 1];
	struct nmiprof_regs regs;
	uint32_t nr_frames;
	uint64_t *addrs;		/* raw, innermost first */
	struct np_sym *frames;		/* symbolized, same order; dso
					 * "[unknown]" if never symbolized */
};

/*
 * Store one lockup under <dir>/lockups.  syms: l->nr_kframes symbolized
 * frames, or NULL to keep raw addresses only.  wall_ns 0: now.  The new
 * record's id is copied to id (may be NULL).  0 or -errno.
 */
int np_lockstore_write(const char *dir, const struct np_ev_lockup *l,
		       const struct np_sym *syms, uint64_t wall_ns,
		       char *id, size_t idlen, char *err, size_t errlen);

typedef int (*np_lockup_fn)(const struct np_lockup_rec *r, void *arg);
/* Every readable lockup, oldest first; damaged files are reported through
 * warn and skipped.  Stops early with fn's nonzero return value. */
int np_lockstore_list(const char *dir, np_lockup_fn fn, void *arg,
		      np_warn_fn warn, void *warn_arg,
		      char *err, size_t errlen);
/* One lockup by id.  *out is freed with np_lockup_rec_free. */
int np_lockstore_read(const char *dir, const char *id,
		      struct np_lockup_rec **out, char *err, size_t errlen);
void np_lockup_rec_free(struct np_lockup_rec *r);

/* For retention: files of <dir>/lockups, oldest first. */
struct np_lockfile {
	char name[NP_LOCKUP_ID_LEN + 8];
	uint64_t wall_ns, size;
};
int np_lockstore_scan(const char *dir, struct np_lockfile **out, size_t *nr);
int np_lockstore_remove(const char *dir, const char *name);

#endif /* NP_LOCKSTORE_H */
