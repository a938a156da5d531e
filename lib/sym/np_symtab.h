/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Private to the symbolizer (symbolizer.c, symtab.c, ksyms.c, elfsyms.c,
 * maps.c, perfmap.c).  Consumers use symbolizer.h.
 */
#ifndef NP_SYMTAB_H
#define NP_SYMTAB_H

#include <stdint.h>
#include <stddef.h>
#include <string.h>
#include <sys/types.h>
#include "np_arena.h"

/*
 * 24 bytes: the kernel alone has ~10^5 of them, held all the time.  The
 * dso is an index into the table's few dso strings (np_symtab_dso).
 */
struct np_symdef {
	uint64_t start;
	const char *name;
	uint32_t size;		/* [start, start + size) */
	uint32_t dso;
};

/*
 * Sorted array + binary search.  Symbols are added to a wider build
 * array (with a priority and a limit, see symtab.c); np_symtab_finish
 * turns it into v, sized exactly.  Lookups work after finish only.
 */
struct np_symbuild;
struct np_symtab {
	struct np_symdef *v;
	size_t nr;		/* symbols in v, or added so far */
	struct np_symbuild *b;	/* while building */
	size_t cap;		/* of b */
	const char **dsos;	/* np_symdef.dso -> string */
	const char **bids;	/* np_symdef.dso -> build-id hex or NULL; kernel
				 * tables only, set once finished */
	uint32_t nr_dsos;
};
/*
 * __pfx_<fn> is the padding CONFIG_CALL_PADDING puts before each kernel
 * function, not code of its own: skipped, so it reads as the tail of the
 * function before it (a return address after a noreturn call lands
 * there; rest_init's caller is not __pfx_start_kernel).
 */
static inline int np_sym_is_padding(const char *name)
{
	return name[0] == '_' && !strncmp(name, "__pfx_", 6);
}
int np_symtab_add(struct np_symtab *t, uint64_t start, uint64_t size,
		  const char *name, const char *dso, int prio);
/* The last symbol added, when size-less, ends at limit (its section's end). */
void np_symtab_limit_last(struct np_symtab *t, uint64_t limit);
/* Sort, drop duplicates, give size-less symbols the gap to the next. */
void np_symtab_finish(struct np_symtab *t);
const struct np_symdef *np_symtab_find(const struct np_symtab *t, uint64_t addr);
/* The dso string given when d was added (kernel: "[kernel.kallsyms]", "[mod]"). */
static inline const char *np_symtab_dso(const struct np_symtab *t,
					const struct np_symdef *d)
{
	return d->dso < t->nr_dsos ? t->dsos[d->dso] : NULL;
}
static inline const char *np_symtab_build_id(const struct np_symtab *t,
					     const struct np_symdef *d)
{
	return t->bids && d->dso < t->nr_dsos ? t->bids[d->dso] : NULL;
}
void np_symtab_free(struct np_symtab *t);
/* Heap bytes of the table (its names live in an arena, not counted). */
size_t np_symtab_mem(const struct np_symtab *t);

/* ksyms.c: /proc/kallsyms; modules (/proc/modules) bounds module symbols;
 * sys ("/sys") has the kernel's and the modules' build-ids.  warning is
 * set when addresses are hidden. */
int np_ksyms_load(struct np_symtab *t, struct np_arena *a, const char *path,
		  const char *modules, const char *sys, char *warning, size_t wlen);

/* elfsyms.c: one ELF object's symbols, cached per build-id / inode. */
struct np_load_seg {
	uint64_t off, vaddr, filesz;
};

struct np_dso {
	struct np_dso *next;
	const char *path;
	uint8_t build_id[20];
	uint8_t build_id_size;
	const char *build_id_hex;	/* in the cache's arena, or NULL */
	dev_t dev;
	ino_t ino;
	off_t size;
	int64_t mtime;
	int elf;		/* symbols loaded from an ELF file */
	int loaded;		/* read (or found unreadable): segs, syms valid */
	int fd;			/* the mapped file until it is read, else -1 */
	struct np_dso *same;	/* once read: the same object (build-id) read first */
	struct np_load_seg *segs;
	int nr_segs;
	struct np_symtab syms;
	struct np_arena names;	/* of syms: freed with the object */
	unsigned int mark;	/* np_dso_cache_sweep */
};

struct np_dso_cache {
	struct np_dso *head;
	struct np_arena *arena;
	const char *debug_root;	/* "/usr/lib/debug" */
	int nr_fds;		/* dsos holding a file not yet read */
};
/* Files held open unread at most; beyond, a new dso is read at once. */
#define NP_DSO_MAX_FDS	128
/*
 * The dso for a mapping of path in pid.  Opens path, or pid's
 * /proc/PID/map_files entry when path is gone, and keeps the file open
 * (cheap) but reads its symbols (costly) only at the first lookup, by
 * np_dso_ready(): the file may be deleted or replaced in between.  Never
 * NULL unless out of memory: an unreadable file yields a dso without
 * symbols.
 */
struct np_dso *np_dso_get(struct np_dso_cache *c, const char *path,
			  const uint8_t *build_id, int build_id_size,
			  uint32_t pid, uint64_t start, uint64_t end);
/* Read d if not yet done; returns the dso to look symbols up in. */
struct np_dso *np_dso_ready(struct np_dso_cache *c, struct np_dso *d);
/* Map a file offset to the ELF virtual address symbols use (d ready). */
int np_dso_off_to_vaddr(const struct np_dso *d, uint64_t off, uint64_t *vaddr);
void np_dso_cache_free(struct np_dso_cache *c);
/*
 * Free the objects whose mark is not mark: those no known process maps
 * (np_procs_mark_dsos set the mark of the others).  Their paths stay in
 * the cache's arena, so a path handed out earlier stays valid; their
 * symbol names go.  Returns how many were freed.
 */
unsigned int np_dso_cache_sweep(struct np_dso_cache *c, unsigned int mark);
size_t np_dso_cache_mem(const struct np_dso_cache *c);

/* perfmap.c: JIT symbols from /tmp/perf-PID.map */
struct np_perfmap {
	const char *path;
	off_t size;		/* of the file when last read */
	int64_t mtime;
	uint64_t next_check_ns;	/* no stat() before (CLOCK_MONOTONIC) */
	struct np_symtab syms;
};
/*
 * (Re)load when the file changed, looking at most once a second (most
 * processes have no map: an unresolved address must not cost a stat()
 * each time); returns 0 if the map has symbols.
 */
int np_perfmap_refresh(struct np_perfmap *m, struct np_arena *a, uint32_t pid);
/* Look at the file at the next refresh (new code was mapped). */
void np_perfmap_recheck(struct np_perfmap *m);
void np_perfmap_free(struct np_perfmap *m);

/* maps.c: per-process address space, fed by side-band events. */
struct np_map {
	uint64_t start, end, pgoff;
	struct np_dso *dso;	/* NULL for anonymous memory */
	const char *name;	/* "[vdso]", "//anon", the path... */
};

struct np_proc {
	struct np_proc *next;
	uint32_t pid;
	int loaded;		/* /proc/PID/maps read, or exec seen */
	int exited;		/* EXIT seen: a FORK of this pid is a new process */
	int leader_gone;	/* its leader's EXIT seen, threads live on */
	uint64_t exit_ns;	/* the EXIT's time (CLOCK_MONOTONIC) */
	struct np_map *maps;
	size_t nr, cap;
	struct np_perfmap *jit;
};

#define NP_PROC_BUCKETS 4096
struct np_procs {
	struct np_proc *b[NP_PROC_BUCKETS];
	struct np_dso_cache *dsos;
	struct np_arena *arena;
	const char *proc_root;	/* "/proc" */
	uint64_t pruned_ns;	/* event time of the last np_procs_prune */
};
struct np_proc *np_procs_get(struct np_procs *p, uint32_t pid, int create);
/* Read /proc/PID/maps once (executable mappings only). */
void np_proc_load(struct np_procs *p, struct np_proc *pr);
/* 1 when it replaced other code at the same addresses, 0, or -1 (ENOMEM). */
int np_proc_add_map(struct np_procs *p, struct np_proc *pr, uint64_t start,
		    uint64_t len, uint64_t pgoff, const char *filename,
		    const uint8_t *build_id, int build_id_size);
void np_proc_clear(struct np_proc *pr);
int np_proc_copy(struct np_proc *dst, const struct np_proc *src);
const struct np_map *np_proc_find(const struct np_proc *pr, uint64_t addr);
void np_procs_free(struct np_procs *p);
size_t np_procs_mem(const struct np_procs *p);
/* Set mark on every object a known process maps (and what it shares). */
void np_procs_mark_dsos(struct np_procs *p, unsigned int mark);
/* Forget the processes that exited before before_ns; returns how many. */
unsigned int np_procs_prune(struct np_procs *p, uint64_t before_ns);

#endif /* NP_SYMTAB_H */
