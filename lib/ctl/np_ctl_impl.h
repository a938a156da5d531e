/* SPDX-License-Identifier: GPL-2.0 */
/* Private to lib/ctl: what the message layer, commands and client share. */
#ifndef NP_CTL_IMPL_H
#define NP_CTL_IMPL_H

#include <stddef.h>
#include <stdint.h>
#include "np_ctl.h"

/* vsnprintf into err if there is one. */
void np_ctl_seterr(char *err, size_t errlen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* "NMIPROF/1 OK <nlines>" line. */
void np_ctl_put_ok(struct np_buf *b, unsigned int nlines);
/* A stacks reply's frame and stack lines; 0 or -1. */
int np_ctl_parse_frame(const struct np_ctl_line *l, struct np_ctl_frame *f);
int np_ctl_parse_stack(const struct np_ctl_line *l, struct np_ctl_stack *st,
		       uint32_t nr_frames);

#endif /* NP_CTL_IMPL_H */
