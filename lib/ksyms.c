// SPDX-License-Identifier: GPL-2.0
/*
 * Kernel symbols from /proc/kallsyms, module symbols included ("[mod]").
 * Only text symbols: samples and return addresses point into code.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "np_symtab.h"

static int read_kptr_restrict(void)
{
	FILE *f = fopen("/proc/sys/kernel/kptr_restrict", "r");
	int v = -1;

	if (f) {
		if (fscanf(f, "%d", &v) != 1)
			v = -1;
		fclose(f);
	}
	return v;
}

int np_ksyms_load(struct np_symtab *t, struct np_arena *a, const char *path,
		  char *warning, size_t wlen)
{
	const char *kernel = np_arena_strdup(a, "[kernel.kallsyms]", 17);
	const char *last_mod = NULL;
	char line[1024];
	size_t total = 0, zero = 0;
	FILE *f = fopen(path, "r");

	if (!f) {
		snprintf(warning, wlen, "cannot read %s (%s): kernel frames stay unresolved",
			 path, strerror(errno));
		return -1;
	}
	while (fgets(line, sizeof(line), f)) {
		char *name, *mod, *end;
		uint64_t addr;
		char type;
		const char *dso = kernel;

		addr = strtoull(line, &end, 16);
		if (end == line || end[0] != ' ' || !end[1] || end[2] != ' ')
			continue;
		type = end[1];
		name = end + 3;
		name[strcspn(name, "\n")] = '\0';
		total++;
		if (!addr)
			zero++;
		if (type != 't' && type != 'T' && type != 'w' && type != 'W')
			continue;
		mod = strchr(name, '\t');
		if (mod) {
			*mod++ = '\0';
			/* consecutive symbols share their module's string */
			if (!last_mod || strcmp(last_mod, mod))
				last_mod = np_arena_strdup(a, mod, strlen(mod));
			dso = last_mod;
		}
		name = (char *)np_arena_strdup(a, name, strlen(name));
		if (!name || !dso || np_symtab_add(t, addr, 0, name, dso, 0) < 0) {
			fclose(f);
			return -1;
		}
	}
	fclose(f);
	if (total && zero == total) {
		snprintf(warning, wlen,
			 "kernel addresses are hidden (kernel.kptr_restrict=%d): "
			 "kernel frames stay unresolved; run as root or set it to 0",
			 read_kptr_restrict());
		np_symtab_free(t);
		return -1;
	}
	np_symtab_finish(t);
	return 0;
}
