// SPDX-License-Identifier: GPL-2.0
/*
 * JIT symbols: /tmp/perf-PID.map, one "START SIZE name" line (hex) per
 * generated function, appended to by the JIT as it compiles.  Re-read
 * whenever the file changed, so later code resolves too.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include "np_symtab.h"
#include "np_clock.h"

#define RECHECK_NS	1000000000ull

void np_perfmap_recheck(struct np_perfmap *m)
{
	m->next_check_ns = 0;
}

int np_perfmap_refresh(struct np_perfmap *m, struct np_arena *a, uint32_t pid)
{
	char path[64], line[4096];
	struct stat st;
	uint64_t now;
	FILE *f;

	now = np_clock_ns(CLOCK_MONOTONIC_COARSE);
	if (now < m->next_check_ns)
		return m->syms.nr ? 0 : -1;
	m->next_check_ns = now + RECHECK_NS;
	snprintf(path, sizeof(path), "/tmp/perf-%u.map", pid);
	if (stat(path, &st) < 0)
		return m->syms.nr ? 0 : -1;	/* gone: keep what we read */
	if (m->path && st.st_size == m->size && (int64_t)st.st_mtime == m->mtime)
		return m->syms.nr ? 0 : -1;
	f = fopen(path, "r");
	if (!f)
		return m->syms.nr ? 0 : -1;
	if (!m->path)
		m->path = np_arena_strdup(a, path, strlen(path));
	np_symtab_free(&m->syms);
	while (fgets(line, sizeof(line), f)) {
		char *p = line, *end;
		uint64_t start, size;
		const char *name;

		start = strtoull(p, &end, 16);
		if (end == p || *end != ' ')
			continue;
		p = end + 1;
		size = strtoull(p, &end, 16);
		if (end == p || *end != ' ')
			continue;
		p = end + 1;
		p[strcspn(p, "\n")] = '\0';
		name = np_arena_strdup(a, p, strlen(p));
		/* a later line for the same address is newer code: it wins */
		if (!name || np_symtab_add(&m->syms, start, size, name, m->path,
					   (int)m->syms.nr) < 0)
			break;
	}
	fclose(f);
	m->size = st.st_size;
	m->mtime = st.st_mtime;
	np_symtab_finish(&m->syms);
	return m->syms.nr ? 0 : -1;
}

void np_perfmap_free(struct np_perfmap *m)
{
	np_symtab_free(&m->syms);
}
