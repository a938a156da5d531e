/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A daemon's "stacks" reply (np_ctl.h) as topview samples: how
 * `nmiprof top --daemon` gets the in-process view from nmiprofd.
 */
#ifndef NP_TOPVIEW_CTL_H
#define NP_TOPVIEW_CTL_H

#include "np_ctl.h"
#include "topview.h"

/*
 * Replaces tv's samples with t's stacks, each weighted by its count,
 * plus one "[other stacks]" sample (comm "[other]", pid 0) holding
 * t->other, so that shares stay shares of every matching sample.
 * Stacks without frames are skipped.  0, or -ENOMEM (tv is then
 * partly filled).
 */
int topview_load_stacks(struct topview *tv, const struct np_ctl_stacks *t);

#endif /* NP_TOPVIEW_CTL_H */
