// SPDX-License-Identifier: GPL-2.0
/*
 * Kernel symbols from /proc/kallsyms, module symbols included ("[mod]").
 * Only text symbols: samples and return addresses point into code.
 * Build-ids from the notes sysfs shows, as perf reads them.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "np_hex.h"
#include "np_symtab.h"

#ifndef NT_GNU_BUILD_ID
#define NT_GNU_BUILD_ID 3
#endif

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

/*
 * The GNU build-id note among the ELF notes in file path (sysfs gives
 * them raw: /sys/kernel/notes, a module's notes/.note.gnu.build-id), in
 * hex in a; NULL if none.
 */
static const char *notes_build_id(struct np_arena *a, const char *path)
{
	unsigned char buf[4096];
	char hex[41];
	size_t n = 0, off = 0;
	ssize_t r;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return NULL;
	while (n < sizeof(buf) && (r = read(fd, buf + n, sizeof(buf) - n)) > 0)
		n += (size_t)r;
	close(fd);
	while (n - off >= 12) {
		uint32_t h[3];	/* namesz, descsz, type */
		uint64_t name = off + 12, desc, next;

		memcpy(h, buf + off, sizeof(h));
		desc = name + ((h[0] + 3ULL) & ~3ULL);
		next = desc + ((h[1] + 3ULL) & ~3ULL);
		if (next > n)
			break;
		if (h[2] == NT_GNU_BUILD_ID && h[0] == 4 && h[1] &&
		    !memcmp(buf + name, "GNU", 4)) {
			size_t len = h[1] > 20 ? 20 : h[1];

			np_hex_str(hex, buf + desc, len);
			return np_arena_strdup(a, hex, 2 * len);
		}
		off = (size_t)next;
	}
	return NULL;
}

/* Each object's build-id: the kernel's, and each module's ("[name]"). */
static void ksyms_build_ids(struct np_symtab *t, struct np_arena *a,
			    const char *kernel, const char *sys)
{
	char path[512];

	t->bids = calloc(t->nr_dsos ? t->nr_dsos : 1, sizeof(*t->bids));
	for (uint32_t i = 0; t->bids && i < t->nr_dsos; i++) {
		const char *d = t->dsos[i];
		size_t len = strlen(d);

		if (d == kernel)
			snprintf(path, sizeof(path), "%s/kernel/notes", sys);
		else if (len > 2 && d[0] == '[' && d[len - 1] == ']')
			snprintf(path, sizeof(path), "%s/module/%.*s/notes/.note.gnu.build-id",
				 sys, (int)len - 2, d + 1);
		else
			continue;
		t->bids[i] = notes_build_id(a, path);
	}
}

int np_ksyms_load(struct np_symtab *t, struct np_arena *a, const char *path,
		  const char *modules, const char *sys, char *warning, size_t wlen)
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
	ksyms_build_ids(t, a, kernel, sys);
	return 0;
}
