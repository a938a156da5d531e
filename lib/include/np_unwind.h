/* SPDX-License-Identifier: GPL-2.0 */
/* The unwinder's names for what its walks report (lib/unwind). */
#ifndef NP_UNWIND_H
#define NP_UNWIND_H

#include <stdint.h>
#include <nmiprof/nmiprof_unwind.h>

/* "no table", "unmapped", ... */
const char *np_uw_stop_name(int reason);
/* "[unwind: no table]" for a marker frame (NMIPROF_UW_MARK), else NULL. */
const char *np_uw_mark_name(uint64_t frame);
#define NP_DSO_UNWIND	"[unwind]"

#endif /* NP_UNWIND_H */
