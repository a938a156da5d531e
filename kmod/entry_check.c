// SPDX-License-Identifier: GPL-2.0
/*
 * Load-time check for the x86_64 nested-NMI entry code.
 *
 * repeat_nmi and end_repeat_nmi are local labels of entry_64.S: neither is
 * exported, and kallsyms_lookup_name() isn't either.  register_kprobe()
 * resolves a symbol name through kallsyms before it checks the kprobe
 * blacklist, and it stores the resolved address in kp.addr before that
 * check.  Entry text is blacklisted, so registration fails with -EINVAL
 * but kp.addr tells us the label exists; a missing symbol fails earlier
 * with -ENOENT and leaves kp.addr NULL.  Should a probe ever be accepted
 * we remove it at once.  We never call through the looked-up address.
 */
#include <linux/kernel.h>
#include <linux/kprobes.h>
#include <linux/kallsyms.h>
#include <linux/string.h>

#include "entry_check.h"

bool np_nested_nmi_safe;

static unsigned long np_lookup_label(const char *name)
{
	struct kprobe kp = { .symbol_name = name };
	char found[KSYM_SYMBOL_LEN];
	unsigned long addr;
	int ret;

	ret = register_kprobe(&kp);
	if (!ret)
		unregister_kprobe(&kp);
	addr = (unsigned long)kp.addr;
	if (!addr)
		return 0;

	/* Trust only an address that kallsyms names exactly @name+0x0. */
	sprint_symbol(found, addr);
	if (strncmp(found, name, strlen(name)) ||
	    strncmp(found + strlen(name), "+0x0/", 5))
		return 0;
	return addr;
}

bool np_entry_check(void)
{
	unsigned long repeat = 0, end = 0;

	if (IS_ENABLED(CONFIG_X86_64)) {
		repeat = np_lookup_label("repeat_nmi");
		end = np_lookup_label("end_repeat_nmi");
	}
	np_nested_nmi_safe = repeat && end && repeat < end;
	return np_nested_nmi_safe;
}
