/* SPDX-License-Identifier: GPL-2.0 */
#ifndef _NMIPROF_ENTRY_CHECK_H
#define _NMIPROF_ENTRY_CHECK_H

#include <linux/types.h>

/*
 * Does the running kernel carry the nested-NMI entry fix (commit
 * 3f3c8b8c4b2a, repeat_nmi/end_repeat_nmi in entry_64.S)?  Without it a
 * fault or breakpoint inside our NMI handler can let a second NMI clobber
 * the NMI stack, so we then do no work that may fault.
 */
bool np_entry_check(void);

extern bool np_nested_nmi_safe;

#endif /* _NMIPROF_ENTRY_CHECK_H */
