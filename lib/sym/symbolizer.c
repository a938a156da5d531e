// SPDX-License-Identifier: GPL-2.0
/*
 * The symbolizer (symbolizer.h): kernel addresses through /proc/kallsyms,
 * user addresses through the sampled process's mappings and the ELF
 * objects behind them, JIT code through /tmp/perf-PID.map.
 */
#include <elf.h>
#include <gelf.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "symbolizer.h"
#include "np_symtab.h"
#include "np_clock.h"
#include "np_hash.h"
#include "np_unwind.h"
#include "np_fileio.h"

/*
 * An exited process's maps are kept this long after its EXIT.  Its
 * samples precede the EXIT in the time-ordered stream, but the drain
 * works in batches; 10 s is far beyond that, and bounds what a machine
 * that starts many short processes costs: fork rate x 10 s processes
 * instead of every process since the daemon started (and bucket chains
 * that grow with them).
 */
#define NP_EXITED_KEEP_NS	(10ULL * 1000000000ULL)

struct np_symbolizer {
	struct np_arena arena;
	struct np_symtab ksyms;
	char kwarning[256];
	uint64_t mods_hash;		/* of /proc/modules' names and addresses */
	uint64_t mods_checked_ns;	/* CLOCK_MONOTONIC of the last look */
	struct np_dso_cache dsos;
	struct np_procs procs;
	unsigned int dso_mark;		/* np_dso_cache_sweep */
};

/* A hash of each loaded module's name and address: changes on (un)load. */
static uint64_t modules_hash(void)
{
	uint64_t h = 1;	/* 0: no /proc/modules */
	char line[512], name[128], addr[32];
	FILE *f = fopen("/proc/modules", "r");

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f)) {
		/* name size refcount deps state address */
		if (sscanf(line, "%127s %*s %*s %*s %*s %31s", name, addr) != 2)
			continue;
		h = np_hash_add(np_hash_add(h, np_hash_str(name)),
				np_hash_str(addr));
	}
	fclose(f);
	return h;
}

/*
 * A kernel address we cannot resolve may be in a module loaded after we
 * read /proc/kallsyms (a long-running daemon sees many).  Look at
 * /proc/modules at most once a second, and re-read kallsyms only when
 * the module list changed: the old names stay in the arena, so memory
 * grows with module loads, not with misses.  Returns 1 if reloaded.
 */
static int ksyms_refresh(struct np_symbolizer *s)
{
	struct np_symtab fresh = { 0 };
	uint64_t now = np_mono_ns(), h;
	char warning[sizeof(s->kwarning)] = "";

	if (now - s->mods_checked_ns < 1000000000ULL)
		return 0;
	s->mods_checked_ns = now;
	h = modules_hash();
	if (h == s->mods_hash)
		return 0;
	s->mods_hash = h;
	if (np_ksyms_load(&fresh, &s->arena, "/proc/kallsyms", "/proc/modules", "/sys",
			  warning, sizeof(warning)) < 0) {
		np_symtab_free(&fresh);
		return 0;
	}
	np_symtab_free(&s->ksyms);
	s->ksyms = fresh;
	return 1;
}

static struct np_symbolizer *symbolizer_new(int kernel, char *err, size_t errlen)
{
	struct np_symbolizer *s = calloc(1, sizeof(*s));

	if (!s) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	if (elf_version(EV_CURRENT) == EV_NONE) {
		snprintf(err, errlen, "libelf: %s", elf_errmsg(-1));
		free(s);
		return NULL;
	}
	s->dsos.arena = &s->arena;
	s->dsos.debug_root = "/usr/lib/debug";
	s->procs.dsos = &s->dsos;
	s->procs.arena = &s->arena;
	s->procs.proc_root = "/proc";
	if (!kernel)
		return s;
	/* Failure leaves kernel frames as dso+offset, with a warning. */
	s->mods_hash = modules_hash();
	np_ksyms_load(&s->ksyms, &s->arena, "/proc/kallsyms", "/proc/modules", "/sys",
		      s->kwarning, sizeof(s->kwarning));
	return s;
}

struct np_symbolizer *np_symbolizer_new(char *err, size_t errlen)
{
	return symbolizer_new(1, err, errlen);
}

struct np_symbolizer *np_symbolizer_new_maps(char *err, size_t errlen)
{
	return symbolizer_new(0, err, errlen);
}

void np_symbolizer_free(struct np_symbolizer *s)
{
	if (!s)
		return;
	np_procs_free(&s->procs);
	np_dso_cache_free(&s->dsos);
	np_symtab_free(&s->ksyms);
	np_arena_free(&s->arena);
	free(s);
}

/* A process we meet for the first time existed before we started. */
static struct np_proc *proc_seen(struct np_symbolizer *s, uint32_t pid)
{
	struct np_proc *pr = np_procs_get(&s->procs, pid, 1);

	if (pr)
		np_proc_load(&s->procs, pr);
	return pr;
}

const struct np_map *np_symbolizer_map(struct np_symbolizer *s, uint32_t pid,
				       uint64_t addr)
{
	struct np_proc *pr = proc_seen(s, pid);

	return pr ? np_proc_find(pr, addr) : NULL;
}

const struct np_map *np_symbolizer_maps(struct np_symbolizer *s, uint32_t pid,
					size_t *nr)
{
	struct np_proc *pr = proc_seen(s, pid);

	*nr = pr ? pr->nr : 0;
	return pr ? pr->maps : NULL;
}

int np_symbolizer_event(struct np_symbolizer *s, const struct np_event *ev)
{
	struct np_proc *pr, *parent;
	int changed = 0;

	switch (ev->type) {
	case NP_EV_MMAP:
		if (!(ev->mmap.prot & 4 /* PROT_EXEC */))
			return 0;
		pr = proc_seen(s, ev->mmap.pid);
		if (pr && pr->jit)
			np_perfmap_recheck(pr->jit);	/* new code: maybe JIT's */
		if (pr)
			changed = np_proc_add_map(&s->procs, pr, ev->mmap.start,
						  ev->mmap.len, ev->mmap.pgoff,
						  ev->mmap.filename, ev->mmap.build_id,
						  ev->mmap.build_id_size) > 0;
		break;
	case NP_EV_COMM:
		if (!ev->comm.exec || ev->comm.pid != ev->comm.tid)
			return 0;
		/* exec: a new address space whose MMAP2 events follow */
		pr = np_procs_get(&s->procs, ev->comm.pid, 1);
		if (pr) {
			np_proc_clear(pr);
			pr->loaded = 1;
			pr->exited = 0;
			pr->leader_gone = 0;	/* the exec'ing thread leads now */
		}
		break;
	case NP_EV_FORK:
		if (ev->task.pid == ev->task.ppid)
			return 0;		/* a new thread shares the maps */
		pr = np_procs_get(&s->procs, ev->task.pid, 0);
		/*
		 * Events come in time order, but should a FORK ever come after
		 * the child's own exec and mmaps, it must not overwrite them
		 * with the parent's: only a new pid, or one whose previous
		 * process exited, inherits.
		 */
		if (pr && pr->loaded && !pr->exited)
			return 0;
		parent = proc_seen(s, ev->task.ppid);
		pr = np_procs_get(&s->procs, ev->task.pid, 1);
		if (pr && parent) {
			np_proc_copy(pr, parent);
			pr->loaded = 1;
			pr->exited = 0;
			pr->leader_gone = 0;
		}
		break;
	case NP_EV_EXIT:
		/*
		 * The leader's EXIT, or a thread's after it: the process has
		 * exited when no thread of it runs any more (a zombie leader
		 * aside).  Keep the maps, samples may still be queued.
		 */
		pr = np_procs_get(&s->procs, ev->task.pid, 0);
		if (pr && !pr->exited &&
		    (ev->task.pid == ev->task.tid || pr->leader_gone)) {
			pr->leader_gone = np_proc_threads_live(s->procs.proc_root,
							       pr->pid);
			pr->exited = !pr->leader_gone;
			pr->exit_ns = ev->task.time_ns;
		}
		/*
		 * At most once a second of event time: forget the long gone,
		 * and the objects only they mapped (a build machine runs
		 * thousands of binaries a day; their symbols must not add up).
		 */
		if (ev->task.time_ns >= s->procs.pruned_ns + 1000000000ULL &&
		    ev->task.time_ns > NP_EXITED_KEEP_NS) {
			if (np_procs_prune(&s->procs,
					   ev->task.time_ns - NP_EXITED_KEEP_NS)) {
				np_procs_mark_dsos(&s->procs, ++s->dso_mark);
				np_dso_cache_sweep(&s->dsos, s->dso_mark);
			}
			s->procs.pruned_ns = ev->task.time_ns;
		}
		break;
	default:
		break;
	}
	return changed;
}

static int user_symbolize(struct np_symbolizer *s, uint32_t pid, uint64_t addr,
			  struct np_sym *out)
{
	struct np_proc *pr = proc_seen(s, pid);
	const struct np_symdef *sym;
	const struct np_map *m;
	struct np_dso *dso;
	uint64_t off, vaddr;

	out->dso = "[unknown]";
	out->offset = addr;
	if ((out->name = np_uw_mark_name(addr)) != NULL) {
		out->dso = NP_DSO_UNWIND;	/* where and why a walk stopped */
		out->offset = 0;
		return 0;
	}
	if (!pr)
		return 1;
	m = np_proc_find(pr, addr);
	if (!m || !m->dso) {
		/* anonymous executable memory: JIT code, if it says so */
		if (!pr->jit)
			pr->jit = calloc(1, sizeof(*pr->jit));
		/* re-read the map (one stat) only when it does not know addr */
		sym = pr->jit ? np_symtab_find(&pr->jit->syms, addr) : NULL;
		if (!sym && pr->jit && np_perfmap_refresh(pr->jit, &s->arena, pid) == 0)
			sym = np_symtab_find(&pr->jit->syms, addr);
		if (sym) {
			out->dso = pr->jit->path;
			out->name = sym->name;
			out->offset = addr - sym->start;
			return 0;
		}
		if (m) {
			/* perf's side-band names anonymous memory "//anon" */
			out->dso = m->name[0] && strcmp(m->name, "//anon") ?
				   m->name : "[anon]";
			out->offset = addr - m->start;
		} else if (pr->nr) {
			out->dso = NP_DSO_UNMAPPED;	/* maps known: not code */
		}
		return 1;
	}
	off = addr - m->start + m->pgoff;
	out->dso = m->name;
	out->offset = off;
	dso = np_dso_ready(&s->dsos, m->dso);
	out->build_id = dso->build_id_hex;
	if (np_dso_off_to_vaddr(dso, off, &vaddr) < 0)
		return 1;
	out->offset = vaddr;
	sym = np_symtab_find(&dso->syms, vaddr);
	if (!sym)
		return 1;
	out->name = sym->name;
	out->offset = vaddr - sym->start;
	return 0;
}

const char *np_sym_unnamed(char *buf, size_t len, const char *dso,
			   uint64_t offset)
{
	const char *base = dso && *dso ? dso : "[unknown]", *slash;
	char off[24];
	int room;

	/* "[kernel.kallsyms]", "[anon]" stay whole; a path is its file name */
	slash = base[0] == '[' ? NULL : strrchr(base, '/');
	if (slash && slash[1])
		base = slash + 1;
	snprintf(off, sizeof(off), "+0x%" PRIx64, offset);
	/* a long object name is cut, never the offset */
	room = (int)len - (int)strlen(off) - 1;
	snprintf(buf, len, "%.*s%s", room > 0 ? room : 0, base, off);
	return buf;
}

int np_symbolize(struct np_symbolizer *s, uint32_t pid, uint64_t addr,
		 int kernel, struct np_sym *out)
{
	const struct np_symdef *sym;

	memset(out, 0, sizeof(*out));
	out->kernel = kernel;
	if (!kernel)
		return user_symbolize(s, pid, addr, out);
	out->dso = "[kernel.kallsyms]";
	out->offset = addr;
	sym = np_symtab_find(&s->ksyms, addr);
	if (!sym && ksyms_refresh(s))
		sym = np_symtab_find(&s->ksyms, addr);
	if (!sym)
		return 1;
	out->dso = np_symtab_dso(&s->ksyms, sym);
	out->build_id = np_symtab_build_id(&s->ksyms, sym);
	out->name = sym->name;
	out->offset = addr - sym->start;
	return 0;
}

size_t np_symbolizer_mem(const struct np_symbolizer *s)
{
	return sizeof(*s) + s->arena.bytes + np_symtab_mem(&s->ksyms) +
	       np_dso_cache_mem(&s->dsos) + np_procs_mem(&s->procs);
}

const char *np_symbolizer_warning(const struct np_symbolizer *s)
{
	return s->kwarning[0] ? s->kwarning : NULL;
}
