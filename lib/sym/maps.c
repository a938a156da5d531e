// SPDX-License-Identifier: GPL-2.0
/*
 * Per-process address spaces for the symbolizer.  Built from MMAP2
 * events, or from /proc/PID/maps for processes that existed before we
 * started; inherited on fork, emptied on exec, and kept after exit so
 * that samples drained after a short-lived process ended still resolve
 * (for a while: see np_procs_prune's caller).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "np_symtab.h"

struct np_proc *np_procs_get(struct np_procs *p, uint32_t pid, int create)
{
	struct np_proc **pp = &p->b[pid % NP_PROC_BUCKETS];

	while (*pp && (*pp)->pid != pid)
		pp = &(*pp)->next;
	if (*pp || !create)
		return *pp;
	*pp = calloc(1, sizeof(**pp));
	if (*pp)
		(*pp)->pid = pid;
	return *pp;
}

/* Mappings with symbols: files, and the vDSO (elfsyms.c reads ours). */
static int has_dso(const char *name)
{
	return (name[0] == '/' && strncmp(name, "//anon", 6) != 0) ||
	       !strcmp(name, "[vdso]");
}

/* Replace whatever [start, end) overlapped, as mmap(MAP_FIXED) does. */
int np_proc_add_map(struct np_procs *p, struct np_proc *pr, uint64_t start,
		    uint64_t len, uint64_t pgoff, const char *filename,
		    const uint8_t *build_id, int build_id_size)
{
	uint64_t end = start + len;
	struct np_map m = { .start = start, .end = end, .pgoff = pgoff };
	size_t i, n = 0;
	struct np_map *v;
	int replaced = 0;

	if (!len)
		return 0;
	if (has_dso(filename)) {
		m.dso = np_dso_get(p->dsos, filename, build_id, build_id_size,
				   pr->pid, start, end);
		/* the dso may be shared with another path (same build-id) */
		if (m.dso && !strcmp(m.dso->path, filename))
			m.name = m.dso->path;
	}
	if (!m.name)
		m.name = np_arena_strdup(p->arena, filename, strlen(filename));
	/* worst case: one old map split in two, plus the new one */
	v = malloc((pr->nr + 2) * sizeof(*v));
	if (!v)
		return -1;
	for (i = 0; i < pr->nr; i++) {
		struct np_map o = pr->maps[i];

		if (o.end <= start || o.start >= end) {
			v[n++] = o;
			continue;
		}
		/* the same addresses now hold other code (dlclose, dlopen) */
		if (o.dso != m.dso || o.start - o.pgoff != start - pgoff)
			replaced = 1;
		if (o.start < start) {		/* head survives */
			struct np_map h = o;

			h.end = start;
			v[n++] = h;
		}
		if (o.end > end) {		/* tail survives */
			struct np_map t = o;

			t.pgoff += end - o.start;
			t.start = end;
			v[n++] = t;
		}
	}
	/* insert sorted */
	for (i = n; i > 0 && v[i - 1].start > start; i--)
		v[i] = v[i - 1];
	v[i] = m;
	n++;
	for (i = 1; i < n; i++) {
		/* the tail pieces above may be out of order: keep it sorted */
		for (size_t j = i; j > 0 && v[j - 1].start > v[j].start; j--) {
			struct np_map t = v[j];

			v[j] = v[j - 1];
			v[j - 1] = t;
		}
	}
	free(pr->maps);
	pr->maps = v;
	pr->nr = pr->cap = n;
	return replaced;
}

void np_proc_clear(struct np_proc *pr)
{
	free(pr->maps);
	pr->maps = NULL;
	pr->nr = pr->cap = 0;
}

int np_proc_copy(struct np_proc *dst, const struct np_proc *src)
{
	np_proc_clear(dst);
	if (!src->nr)
		return 0;
	dst->maps = malloc(src->nr * sizeof(*dst->maps));
	if (!dst->maps)
		return -1;
	memcpy(dst->maps, src->maps, src->nr * sizeof(*dst->maps));
	dst->nr = dst->cap = src->nr;
	return 0;
}

const struct np_map *np_proc_find(const struct np_proc *pr, uint64_t addr)
{
	size_t lo = 0, hi = pr->nr;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (pr->maps[mid].start <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo || addr >= pr->maps[lo - 1].end)
		return NULL;
	return &pr->maps[lo - 1];
}

void np_proc_load(struct np_procs *p, struct np_proc *pr)
{
	char path[64], line[4096 + 128];
	FILE *f;

	if (pr->loaded)
		return;
	pr->loaded = 1;
	snprintf(path, sizeof(path), "%s/%u/maps", p->proc_root, pr->pid);
	f = fopen(path, "r");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		uint64_t start, end, off;
		char perms[8];
		int name_at = 0;
		char *name, *del;

		if (sscanf(line, "%" SCNx64 "-%" SCNx64 " %7s %" SCNx64 " %*s %*u %n",
			   &start, &end, perms, &off, &name_at) < 4 || !name_at)
			continue;
		if (!strchr(perms, 'x'))
			continue;	/* samples only land in code */
		name = line + name_at;
		name[strcspn(name, "\n")] = '\0';
		/* np_dso_get falls back to /proc/PID/map_files for these */
		del = strstr(name, " (deleted)");
		if (del && del[10] == '\0')
			*del = '\0';
		np_proc_add_map(p, pr, start, end - start, off, name, NULL, 0);
	}
	fclose(f);
}

static void proc_free(struct np_proc *pr)
{
	np_proc_clear(pr);
	if (pr->jit) {
		np_perfmap_free(pr->jit);
		free(pr->jit);
	}
	free(pr);
}

unsigned int np_procs_prune(struct np_procs *p, uint64_t before_ns)
{
	unsigned int n = 0;

	for (int i = 0; i < NP_PROC_BUCKETS; i++) {
		struct np_proc **pp = &p->b[i];

		while (*pp) {
			struct np_proc *pr = *pp;

			if (pr->exited && pr->exit_ns < before_ns) {
				*pp = pr->next;
				proc_free(pr);
				n++;
			} else {
				pp = &pr->next;
			}
		}
	}
	return n;
}

void np_procs_mark_dsos(struct np_procs *p, unsigned int mark)
{
	for (int i = 0; i < NP_PROC_BUCKETS; i++)
		for (struct np_proc *pr = p->b[i]; pr; pr = pr->next)
			for (size_t j = 0; j < pr->nr; j++) {
				struct np_dso *d = pr->maps[j].dso;

				if (!d)
					continue;
				d->mark = mark;
				if (d->same)
					d->same->mark = mark;
			}
}

size_t np_procs_mem(const struct np_procs *p)
{
	size_t m = 0;

	for (int i = 0; i < NP_PROC_BUCKETS; i++)
		for (const struct np_proc *pr = p->b[i]; pr; pr = pr->next)
			m += sizeof(*pr) + pr->cap * sizeof(*pr->maps) +
			     (pr->jit ? sizeof(*pr->jit) +
					np_symtab_mem(&pr->jit->syms) : 0);
	return m;
}

void np_procs_free(struct np_procs *p)
{
	for (int i = 0; i < NP_PROC_BUCKETS; i++) {
		while (p->b[i]) {
			struct np_proc *pr = p->b[i];

			p->b[i] = pr->next;
			proc_free(pr);
		}
	}
}
