// SPDX-License-Identifier: GPL-2.0
/*
 * Compiled tables on disk, one file per build-id: a restart or a second
 * process of the same binary does not recompile libc.  A file is written
 * whole to a temporary name and renamed (np_write_atomic), so a reader
 * sees the old file, the new one, or none; what it reads is validated (np_uw_validate, the
 * rows' crc32c, the build-id) and anything wrong is recompiled.  For
 * nmiprof.ko the header is read first, the rows only if the module
 * does not hold the table yet.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <gelf.h>
#include <elfutils/libdwelf.h>
#include "np_unwind_impl.h"
#include "np_unwind_walk.h"
#include "np_crc32c.h"
#include "np_fileio.h"

/* dir sep <build-id hex>-r<compiler rev>.uw */
static int cache_path(char *buf, size_t len, const char *dir, const char *sep,
		      const uint8_t *bid, int n)
{
	int o = snprintf(buf, len, "%s%s", dir, sep);

	for (int i = 0; i < n && o < (int)len; i++)
		o += snprintf(buf + o, len - o, "%02x", bid[i]);
	if (o >= (int)len || snprintf(buf + o, len - o, "-r%d.uw", NP_UW_COMPILER_REV) >= (int)len - o)
		return -1;
	return 0;
}

static struct nmiprof_uw_table *cache_read(const char *dir, const uint8_t *bid,
					   int bid_size, int validate, size_t *len)
{
	const size_t max = sizeof(struct nmiprof_uw_table) +
			   (size_t)NMIPROF_UW_MAX_ROWS * sizeof(struct nmiprof_uw_row);
	struct nmiprof_uw_table *t;
	const char *why;
	char path[4096];
	void *buf;
	size_t n;

	if (!dir || !*dir || bid_size <= 0 ||
	    cache_path(path, sizeof(path), dir, "/", bid, bid_size) < 0 ||
	    np_read_file(path, max, &buf, &n) < 0)
		return NULL;
	t = buf;
	if (n < sizeof(*t) || (validate && np_uw_validate(t, n, &why) < 0) ||
	    t->crc != np_crc32c(0, t + 1, n - sizeof(*t)) ||
	    t->build_id_size != bid_size || memcmp(t->build_id, bid, bid_size)) {
		free(buf);
		return NULL;
	}
	*len = n;
	return t;
}

/*
 * For nmiprof.ko, which keeps tables past their reader: the header only,
 * checked as far as it goes.  The module may match it to a table a
 * reader before us loaded; the rows are read (and their crc checked)
 * only when it does not, by np_uw_obj_rows().
 */
static struct nmiprof_uw_table *cache_head(const char *dir, const uint8_t *bid,
					   int bid_size, size_t *len)
{
	struct nmiprof_uw_table *t;
	char path[4096];
	struct stat st;
	int fd;

	if (!dir || !*dir || bid_size <= 0 ||
	    cache_path(path, sizeof(path), dir, "/", bid, bid_size) < 0)
		return NULL;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	t = malloc(sizeof(*t));
	if (!t || fstat(fd, &st) < 0 ||
	    pread(fd, t, sizeof(*t), 0) != (ssize_t)sizeof(*t) ||
	    t->magic != NMIPROF_UW_MAGIC || t->version != NMIPROF_UW_VERSION ||
	    t->hdr_size != sizeof(*t) || t->row_size != sizeof(struct nmiprof_uw_row) ||
	    t->nr_rows > NMIPROF_UW_MAX_ROWS ||
	    (uint64_t)st.st_size != sizeof(*t) + (uint64_t)t->nr_rows * t->row_size ||
	    t->build_id_size != bid_size || memcmp(t->build_id, bid, bid_size)) {
		free(t);
		t = NULL;
	} else {
		*len = (size_t)st.st_size;
	}
	close(fd);
	return t;
}

int np_uw_obj_rows(struct np_uw_obj *o)
{
	struct nmiprof_uw_table *t;
	char path[4096];
	size_t len;

	if (!o->head_only)
		return 0;
	t = cache_read(o->cache_dir, o->t->build_id, o->t->build_id_size, 0, &len);
	if (!t) {
		/* bad rows under a good header: compiled again next time */
		if (cache_path(path, sizeof(path), o->cache_dir, "/", o->t->build_id,
			       o->t->build_id_size) == 0)
			unlink(path);
		return -1;
	}
	free(o->t);
	o->t = t;
	o->bytes = len;
	o->head_only = 0;
	return 0;
}

struct nmiprof_uw_table *np_uw_cache_read(const char *dir, const uint8_t *bid,
					  int bid_size, size_t *len)
{
	return cache_read(dir, bid, bid_size, 1, len);
}

int np_uw_cache_write(const char *dir, const struct nmiprof_uw_table *t,
		      size_t len)
{
	char name[128];

	if (!dir || !*dir || !t->build_id_size ||
	    cache_path(name, sizeof(name), "", "", t->build_id, t->build_id_size) < 0)
		return -1;
	if (mkdir(dir, 0755) < 0 && errno != EEXIST)
		return -1;
	return np_write_atomic(dir, name, t, len) < 0 ? -1 : 0;
}

/* Executable PT_LOADs: what maps a mapping's file offsets to vaddrs. */
static int load_segs(Elf *elf, struct np_uw_obj *o)
{
	size_t n;

	if (elf_getphdrnum(elf, &n) < 0)
		return -1;
	for (size_t i = 0; i < n && o->nr_segs < NP_UW_MAX_SEGS; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(elf, i, &ph) || ph.p_type != PT_LOAD ||
		    !(ph.p_flags & PF_X))
			continue;
		o->segs[o->nr_segs++] = (struct np_uw_seg){
			.off = ph.p_offset, .vaddr = ph.p_vaddr, .filesz = ph.p_filesz };
	}
	return o->nr_segs ? 0 : -1;
}

struct np_uw_obj *np_uw_obj_load(int fd, const char *path,
				 const char *cache_dir, const char *debug_root,
				 int flags, int *deferred,
				 char *err, size_t errlen)
{
	struct np_uw_obj *o = calloc(1, sizeof(*o));
	uint8_t bid[20];
	const char *why;
	const void *id;
	ssize_t n = 0;
	Elf *elf;

	*deferred = 0;
	if (!o) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	elf_version(EV_CURRENT);
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!elf || elf_kind(elf) != ELF_K_ELF || load_segs(elf, o) < 0) {
		snprintf(err, errlen, "%s: not an ELF object with code", path);
		goto fail;
	}
	n = dwelf_elf_gnu_build_id(elf, &id);
	if (n > 0 && n <= (ssize_t)sizeof(bid))
		memcpy(bid, id, n);
	else
		n = 0;
	elf_end(elf);
	elf = NULL;
	if (flags & NP_UW_LOAD_KERNEL) {
		o->t = cache_head(cache_dir, bid, n, &o->bytes);
		o->head_only = o->t != NULL;
		o->cache_dir = cache_dir;
	} else {
		o->t = cache_read(cache_dir, bid, n, 1, &o->bytes);
	}
	if (o->t) {
		o->cached = 1;
		return o;
	}
	if (!(flags & NP_UW_LOAD_COMPILE)) {
		*deferred = 1;
		snprintf(err, errlen, "%s: compile deferred", path);
		goto fail;
	}
	o->t = np_uw_compile(fd, path, debug_root, &o->bytes, NULL, err, errlen);
	if (!o->t)
		goto fail;
	if (np_uw_validate(o->t, o->bytes, &why) < 0) {
		snprintf(err, errlen, "%s: compiled table refused: %s", path, why);
		free(o->t);
		goto fail;
	}
	np_uw_cache_write(cache_dir, o->t, o->bytes);	/* best effort */
	return o;
fail:
	if (elf)
		elf_end(elf);
	free(o);
	return NULL;
}

void np_uw_obj_free(struct np_uw_obj *o)
{
	if (!o)
		return;
	free(o->t);
	free(o);
}
