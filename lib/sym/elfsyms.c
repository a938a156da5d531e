// SPDX-License-Identifier: GPL-2.0
/*
 * ELF objects for the user-space symbolizer: .symtab, else .dynsym (or
 * the .symtab of a /usr/lib/debug/.build-id/ file), the PT_LOAD segments
 * that map file offsets to symbol addresses, and the NT_GNU_BUILD_ID.
 *
 * An object is opened when first mapped, and read completely (then
 * closed) when first looked up: most mapped objects are never sampled,
 * and the open file keeps a deleted or replaced one readable.  Objects are shared
 * between processes, keyed by build-id, else by device, inode, size and
 * mtime (a replaced file is a new object).  [vdso] is read from memory.
 * An object no known process maps any more is freed with its names
 * (np_dso_cache_sweep), so the cache follows what runs, not all that ran.
 */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/stat.h>
#include <unistd.h>
#include "np_hex.h"
#include "np_symtab.h"

#ifndef NT_GNU_BUILD_ID
#define NT_GNU_BUILD_ID 3
#endif

static int read_build_id(Elf *elf, uint8_t *id, uint8_t *size)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;

	while ((scn = elf_nextscn(elf, scn)) != NULL) {
		Elf_Data *data;
		GElf_Nhdr nh;
		size_t off = 0, noff, doff;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_NOTE)
			continue;
		data = elf_getdata(scn, NULL);
		while (data && (off = gelf_getnote(data, off, &nh, &noff, &doff)) > 0) {
			if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 &&
			    !memcmp((char *)data->d_buf + noff, "GNU", 4)) {
				*size = nh.n_descsz > 20 ? 20 : nh.n_descsz;
				memcpy(id, (char *)data->d_buf + doff, *size);
				return 0;
			}
		}
	}
	return -1;
}

static int symbol_prio(const GElf_Sym *s)
{
	switch (GELF_ST_BIND(s->st_info)) {
	case STB_GLOBAL:
		return 2;
	case STB_WEAK:
		return 1;
	default:
		return 0;
	}
}

/*
 * An untyped symbol in code names code, as perf's elf_sym__is_label():
 * assembly entry points such as ld.so's _start and _dl_start_user have
 * neither a type nor a size.  Data and absolute labels are not code.
 */
static int is_code_label(Elf *elf, const GElf_Sym *s)
{
	int vis = GELF_ST_VISIBILITY(s->st_other);
	Elf_Scn *scn;
	GElf_Shdr sh;

	if (!s->st_name || s->st_shndx == SHN_UNDEF || s->st_shndx >= SHN_LORESERVE ||
	    vis == STV_HIDDEN || vis == STV_INTERNAL)
		return 0;
	scn = elf_getscn(elf, s->st_shndx);
	return scn && gelf_getshdr(scn, &sh) && (sh.sh_flags & SHF_EXECINSTR);
}

/*
 * The string table at section index link, read in place as elf_strptr()
 * would (each call of which checks the section anew): NULL unless it
 * ends in a NUL, so that every offset below *size starts a string.
 */
static const char *strtab_of(Elf *elf, size_t link, size_t *size)
{
	Elf_Scn *scn = elf_getscn(elf, link);
	Elf_Data *data = scn ? elf_getdata(scn, NULL) : NULL;
	GElf_Shdr sh;

	if (!data || !gelf_getshdr(scn, &sh) || sh.sh_type != SHT_STRTAB ||
	    !data->d_buf || !data->d_size || data->d_size != sh.sh_size ||
	    ((const char *)data->d_buf)[data->d_size - 1] != '\0')
		return NULL;
	*size = data->d_size;
	return data->d_buf;
}

/* Add the function symbols of every section of type `type`; returns count. */
static int load_symbols(struct np_dso *d, struct np_arena *a, Elf *elf,
			Elf32_Word type)
{
	int sym64 = gelf_getclass(elf) == ELFCLASS64;
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;
	int n = 0;

	while ((scn = elf_nextscn(elf, scn)) != NULL) {
		const char *str;
		Elf_Data *data;
		size_t nsyms, strsz = 0;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != type || !sh.sh_entsize)
			continue;
		data = elf_getdata(scn, NULL);
		if (!data)
			continue;
		nsyms = sh.sh_size / sh.sh_entsize;
		str = strtab_of(elf, sh.sh_link, &strsz);
		for (size_t i = 0; i < nsyms; i++) {
			GElf_Sym sym;
			const char *name;
			int t;

			/* native 64-bit symbols are read in place: libc's
			 * .dynsym has 10^4 of them */
			if (sym64 && data->d_type == ELF_T_SYM &&
			    (i + 1) * sizeof(Elf64_Sym) <= data->d_size)
				sym = ((const Elf64_Sym *)data->d_buf)[i];
			else if (!gelf_getsym(data, (int)i, &sym))
				continue;
			t = GELF_ST_TYPE(sym.st_info);
			if ((t != STT_FUNC && t != STT_GNU_IFUNC &&
			     !(t == STT_NOTYPE && is_code_label(elf, &sym))) ||
			    sym.st_shndx == SHN_UNDEF || !sym.st_value)
				continue;
			name = str ? (sym.st_name < strsz ? str + sym.st_name : NULL) :
			       elf_strptr(elf, sh.sh_link, sym.st_name);
			if (!name || !*name || np_sym_is_padding(name))
				continue;
			name = np_arena_strdup(a, name, strlen(name));
			if (!name || np_symtab_add(&d->syms, sym.st_value, sym.st_size,
						   name, d->path, t == STT_NOTYPE ? -1 :
						   symbol_prio(&sym)) < 0)
				return n;
			if (!sym.st_size && sym.st_shndx < SHN_LORESERVE) {
				Elf_Scn *in = elf_getscn(elf, sym.st_shndx);
				GElf_Shdr ish;

				if (in && gelf_getshdr(in, &ish))
					np_symtab_limit_last(&d->syms, ish.sh_addr + ish.sh_size);
			}
			n++;
		}
	}
	return n;
}

static int has_section(Elf *elf, Elf32_Word type)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;

	while ((scn = elf_nextscn(elf, scn)) != NULL)
		if (gelf_getshdr(scn, &sh) && sh.sh_type == type)
			return 1;
	return 0;
}

/* Separate debug info found by build-id, as gdb and perf look it up. */
static int load_debug_file(struct np_dso *d, struct np_dso_cache *c)
{
	char path[512];
	int len, fd, n = 0;
	Elf *elf;

	if (!d->build_id_size || !c->debug_root)
		return 0;
	len = snprintf(path, sizeof(path), "%s/.build-id/%02x/", c->debug_root,
		       d->build_id[0]);
	for (int i = 1; i < d->build_id_size && len < (int)sizeof(path) - 8; i++)
		len += snprintf(path + len, sizeof(path) - len, "%02x", d->build_id[i]);
	snprintf(path + len, sizeof(path) - len, ".debug");
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (elf) {
		n = load_symbols(d, &d->names, elf, SHT_SYMTAB);
		elf_end(elf);
	}
	close(fd);
	return n;
}

static void load_elf_image(struct np_dso *d, struct np_dso_cache *c, Elf *elf)
{
	size_t phnum;

	if (elf_kind(elf) != ELF_K_ELF || elf_getphdrnum(elf, &phnum) < 0)
		return;
	d->elf = 1;
	d->segs = calloc(phnum ? phnum : 1, sizeof(*d->segs));
	for (size_t i = 0; d->segs && i < phnum; i++) {
		GElf_Phdr ph;

		if (gelf_getphdr(elf, (int)i, &ph) && ph.p_type == PT_LOAD)
			d->segs[d->nr_segs++] = (struct np_load_seg){
				.off = ph.p_offset, .vaddr = ph.p_vaddr,
				.filesz = ph.p_filesz,
			};
	}
	if (!d->build_id_size)
		read_build_id(elf, d->build_id, &d->build_id_size);
	/* .symtab has everything; a stripped object keeps only .dynsym */
	if (!has_section(elf, SHT_SYMTAB) || !load_symbols(d, &d->names, elf, SHT_SYMTAB)) {
		if (!load_debug_file(d, c))
			load_symbols(d, &d->names, elf, SHT_DYNSYM);
	}
	np_symtab_finish(&d->syms);
}

static void load_elf(struct np_dso *d, struct np_dso_cache *c, int fd)
{
	Elf *elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);

	if (elf) {
		load_elf_image(d, c, elf);
		elf_end(elf);
	}
}

static struct np_dso *find_by_build_id(struct np_dso_cache *c,
				       const uint8_t *id, int size)
{
	for (struct np_dso *d = c->head; d; d = d->next)
		if (d->build_id_size == size && !memcmp(d->build_id, id, size))
			return d;
	return NULL;
}

/*
 * In ns: a file deleted and another written within the same second can
 * get the same inode and size (a rebuilt binary), and must not be taken
 * for the same object.
 */
static int64_t mtime_ns(const struct stat *st)
{
	return (int64_t)st->st_mtim.tv_sec * 1000000000 + st->st_mtim.tv_nsec;
}

static struct np_dso *find_by_file(struct np_dso_cache *c, const struct stat *st)
{
	for (struct np_dso *d = c->head; d; d = d->next)
		if (d->ino == st->st_ino && d->dev == st->st_dev &&
		    d->size == st->st_size && d->mtime == mtime_ns(st))
			return d;
	return NULL;
}

static struct np_dso *find_unreadable(struct np_dso_cache *c, const char *path)
{
	for (struct np_dso *d = c->head; d; d = d->next)
		if (!d->ino && !d->build_id_size && !strcmp(d->path, path))
			return d;
	return NULL;
}

static int open_mapping(const char *path, uint32_t pid, uint64_t start,
			uint64_t end)
{
	char alt[128];
	int fd = -1;

	if (path[0] == '/')
		fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 && end > start) {
		/* deleted, replaced or in another mount namespace */
		snprintf(alt, sizeof(alt), "/proc/%u/map_files/%" PRIx64 "-%" PRIx64,
			 pid, start, end);
		fd = open(alt, O_RDONLY | O_CLOEXEC);
	}
	return fd;
}

/* The build-id as frames carry it; in the arena, as the path, so it
 * outlives a sweep of the object. */
static void dso_build_id_hex(struct np_dso_cache *c, struct np_dso *d)
{
	char hex[2 * sizeof(d->build_id) + 1];

	if (d->build_id_hex || !d->build_id_size)
		return;
	np_hex_str(hex, d->build_id, d->build_id_size);
	d->build_id_hex = np_arena_strdup(c->arena, hex, 2U * d->build_id_size);
}

/*
 * [vdso]: every 64-bit process of this kernel maps the same image as we
 * do, so read symbols from our own copy (found through the aux vector),
 * as perf does.
 */
static struct np_dso *vdso_get(struct np_dso_cache *c)
{
	const unsigned char *img = (const void *)getauxval(AT_SYSINFO_EHDR);
	const Elf64_Ehdr *eh = (const void *)img;
	struct np_dso *d;
	size_t size;
	char *copy;
	Elf *elf;

	for (d = c->head; d; d = d->next)
		if (!strcmp(d->path, "[vdso]"))
			return d;
	d = calloc(1, sizeof(*d));
	if (!d)
		return NULL;
	d->path = np_arena_strdup(c->arena, "[vdso]", 6);
	d->fd = -1;
	d->loaded = 1;
	d->next = c->head;
	c->head = d;
	if (!img || memcmp(eh->e_ident, ELFMAG, SELFMAG))
		return d;
	/* the section headers are the image's tail */
	size = eh->e_shoff + (size_t)eh->e_shnum * eh->e_shentsize;
	if (size > 1 << 20)
		return d;
	copy = malloc(size);
	if (!copy)
		return d;
	memcpy(copy, img, size);
	elf = elf_memory(copy, size);
	if (elf) {
		load_elf_image(d, c, elf);
		elf_end(elf);
	}
	free(copy);
	dso_build_id_hex(c, d);
	return d;
}

struct np_dso *np_dso_get(struct np_dso_cache *c, const char *path,
			  const uint8_t *build_id, int build_id_size,
			  uint32_t pid, uint64_t start, uint64_t end)
{
	struct np_dso *d;
	struct stat st;
	int fd;

	if (!strcmp(path, "[vdso]"))
		return vdso_get(c);
	if (build_id_size > 0 && (d = find_by_build_id(c, build_id, build_id_size)))
		return d;
	fd = open_mapping(path, pid, start, end);
	if (fd >= 0 && fstat(fd, &st) == 0) {
		d = find_by_file(c, &st);
		if (d) {
			close(fd);
			return d;
		}
	} else if ((d = find_unreadable(c, path))) {
		if (fd >= 0)
			close(fd);
		return d;
	}
	d = calloc(1, sizeof(*d));
	if (!d) {
		if (fd >= 0)
			close(fd);
		return NULL;
	}
	d->path = np_arena_strdup(c->arena, path, strlen(path));
	if (build_id_size > 0) {
		d->build_id_size = build_id_size > 20 ? 20 : build_id_size;
		memcpy(d->build_id, build_id, d->build_id_size);
		dso_build_id_hex(c, d);
	}
	d->fd = -1;
	d->next = c->head;
	c->head = d;
	if (fd >= 0) {
		d->dev = st.st_dev;
		d->ino = st.st_ino;
		d->size = st.st_size;
		d->mtime = mtime_ns(&st);
		d->fd = fd;
		c->nr_fds++;
		/* bounded open files: past the cap, read now */
		if (c->nr_fds > NP_DSO_MAX_FDS)
			np_dso_ready(c, d);
	} else {
		d->loaded = 1;		/* nothing to read */
	}
	return d;
}

struct np_dso *np_dso_ready(struct np_dso_cache *c, struct np_dso *d)
{
	if (d->loaded)
		return d->same ? d->same : d;
	d->loaded = 1;
	if (d->fd < 0)
		return d;
	load_elf(d, c, d->fd);
	close(d->fd);
	d->fd = -1;
	c->nr_fds--;
	dso_build_id_hex(c, d);
	/* same object reached by another path: share the one read first */
	if (d->build_id_size) {
		for (struct np_dso *o = c->head; o; o = o->next) {
			if (o != d && o->loaded && o->elf && !o->same &&
			    o->build_id_size == d->build_id_size &&
			    !memcmp(o->build_id, d->build_id, d->build_id_size)) {
				np_symtab_free(&d->syms);
				free(d->segs);
				d->segs = NULL;
				d->nr_segs = 0;
				d->same = o;
				return o;
			}
		}
	}
	return d;
}

int np_dso_off_to_vaddr(const struct np_dso *d, uint64_t off, uint64_t *vaddr)
{
	for (int i = 0; i < d->nr_segs; i++) {
		const struct np_load_seg *s = &d->segs[i];

		if (off >= s->off && off < s->off + s->filesz) {
			*vaddr = off - s->off + s->vaddr;
			return 0;
		}
	}
	return -1;
}

size_t np_dso_cache_mem(const struct np_dso_cache *c)
{
	size_t m = 0;

	for (const struct np_dso *d = c->head; d; d = d->next)
		m += sizeof(*d) + np_symtab_mem(&d->syms) + d->names.bytes +
		     (size_t)d->nr_segs * sizeof(*d->segs);
	return m;
}

static void dso_free(struct np_dso_cache *c, struct np_dso *d)
{
	if (d->fd >= 0) {
		close(d->fd);
		c->nr_fds--;
	}
	np_symtab_free(&d->syms);
	np_arena_free(&d->names);
	free(d->segs);
	free(d);
}

unsigned int np_dso_cache_sweep(struct np_dso_cache *c, unsigned int mark)
{
	struct np_dso **pp = &c->head;
	unsigned int n = 0;

	while (*pp) {
		struct np_dso *d = *pp;

		/* [vdso] is the same for every process: kept */
		if (d->mark == mark || !strcmp(d->path, "[vdso]")) {
			pp = &d->next;
			continue;
		}
		*pp = d->next;
		dso_free(c, d);
		n++;
	}
	return n;
}

void np_dso_cache_free(struct np_dso_cache *c)
{
	while (c->head) {
		struct np_dso *d = c->head;

		c->head = d->next;
		dso_free(c, d);
	}
}
