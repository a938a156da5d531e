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
 * t->other, so that shares stay shares of every matching sample.  When
 * tv's filter shows only kernel (user) frames, that sample holds
 * t->other_kernel (t->other_user) instead, if the daemon sent them, and
 * is a kernel (user) frame.  Stacks without frames are skipped.  Call it
 * again after changing the kernel/user filter.  0, or -ENOMEM (tv is
 * then partly filled).
 */
int topview_load_stacks(struct topview *tv, const struct np_ctl_stacks *t);

#endif /* NP_TOPVIEW_CTL_H */
