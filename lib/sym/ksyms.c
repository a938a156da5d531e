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

static int read_sysctl(const char *path)
{
	FILE *f = fopen(path, "r");
	int v = -1;

	if (f) {
		if (fscanf(f, "%d", &v) != 1)
			v = -1;
		fclose(f);
	}
	return v;
}

/*
 * The end of a loaded module's memory, from /proc/modules (0 when unknown
 * or hidden).  kallsyms has no sizes, so without this bound the last
 * function of a module would swallow a module loaded after we read it,
 * naming its code "last_symbol+0xee37" instead of missing and reloading.
 */
static uint64_t module_end(const char *modules, const char *mod)
{
	char line[512], name[128];
	size_t len = strlen(mod);

	/* kallsyms says "[name]", /proc/modules "name" */
	if (len < 3 || mod[0] != '[' || mod[len - 1] != ']')
		return 0;
	mod++;
	len -= 2;
	unsigned long long size, base;
	uint64_t end = 0;
	FILE *f = fopen(modules, "r");

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f)) {
		/* name size refcount deps state address */
		if (sscanf(line, "%127s %llu %*s %*s %*s %llx", name, &size,
			   &base) != 3)
			continue;
		if (strlen(name) == len && !strncmp(name, mod, len)) {
			end = base ? base + size : 0;
			break;
		}
	}
	fclose(f);
	return end;
}

int np_ksyms_load(struct np_symtab *t, struct np_arena *a, const char *path,
		  const char *modules, char *warning, size_t wlen)
{
	uint64_t mod_end = 0;
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
		if (np_sym_is_padding(name))
			continue;
		mod = strchr(name, '\t');
		if (mod) {
			*mod++ = '\0';
			/* consecutive symbols share their module's string */
			if (!last_mod || strcmp(last_mod, mod)) {
				last_mod = np_arena_strdup(a, mod, strlen(mod));
				mod_end = module_end(modules, mod);
			}
			dso = last_mod;
		}
		name = (char *)np_arena_strdup(a, name, strlen(name));
		if (!name || !dso || np_symtab_add(t, addr, 0, name, dso, 0) < 0) {
			fclose(f);
			return -1;
		}
		if (dso != kernel && mod_end > addr)
			np_symtab_limit_last(t, mod_end);
	}
	fclose(f);
	if (total && zero == total) {
		/* kallsyms shows addresses to CAP_SYSLOG, or to everyone when
		 * kptr_restrict is 0 and perf_event_paranoid is at most 1.
		 */
		snprintf(warning, wlen,
			 "kernel addresses are hidden (kernel.kptr_restrict=%d, "
			 "kernel.perf_event_paranoid=%d): kernel frames stay "
			 "unresolved; run as root, or set kptr_restrict to 0 and "
			 "perf_event_paranoid to 1",
			 read_sysctl("/proc/sys/kernel/kptr_restrict"),
			 read_sysctl("/proc/sys/kernel/perf_event_paranoid"));
		np_symtab_free(t);
		return -1;
	}
	np_symtab_finish(t);
	return 0;
}
