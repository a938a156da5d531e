/* SPDX-License-Identifier: GPL-2.0 */
#ifndef _NMIPROF_FORMAT_H
#define _NMIPROF_FORMAT_H

#include <linux/types.h>

/*
 * Write record type @type's ftrace-style format text to @buf (at most
 * @len bytes, always NUL-terminated when @len > 0).  Returns the full
 * text length including the NUL, or -EINVAL for an unknown type.
 */
int np_format(u32 type, char *buf, size_t len);

#endif /* _NMIPROF_FORMAT_H */
