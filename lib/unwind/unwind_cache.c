// SPDX-License-Identifier: GPL-2.0
/*
 * Compiled tables on disk, one file per build-id: a restart or a second
 * process of the same binary does not recompile libc.  A file is written
 * whole to a temporary name and renamed, so a reader sees the old file,
 * the new one, or none; what it reads is validated (np_uw_validate, the
 * rows' crc32c, the build-id) and anything wrong is recompiled.
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
#include "np_unwind.h"
#include "store_crc32c.h"

static int cache_path(char *buf, size_t len, const char *dir,
		      const uint8_t *bid, int n)
{
	int o = snprintf(buf, len, "%s/", dir);

	for (int i = 0; i < n && o < (int)len; i++)
		o += snprintf(buf + o, len - o, "%02x", bid[i]);
	if (o >= (int)len || snprintf(buf + o, len - o, "-r%d.uw", NP_UW_COMPILER_REV) >= (int)len - o)
		return -1;
	return 0;
}

struct nmiprof_uw_table *np_uw_cache_read(const char *dir, const uint8_t *bid,
					  int bid_size, size_t *len)
{
	struct nmiprof_uw_table *t = NULL;
	const char *why;
	char path[4096];
	struct stat st;
	int fd;

	if (!dir || !*dir || bid_size <= 0 ||
	    cache_path(path, sizeof(path), dir, bid, bid_size) < 0)
		return NULL;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	if (fstat(fd, &st) < 0 || st.st_size < (off_t)sizeof(*t) ||
	    st.st_size > (off_t)(sizeof(*t) + (uint64_t)NMIPROF_UW_MAX_ROWS *
				 sizeof(struct nmiprof_uw_row)))
		goto bad;
	t = malloc(st.st_size);
	if (!t || pread(fd, t, st.st_size, 0) != st.st_size)
		goto bad;
	if (np_uw_validate(t, st.st_size, &why) < 0 ||
	    t->crc != np_crc32c(0, t + 1, st.st_size - sizeof(*t)) ||
	    t->build_id_size != bid_size || memcmp(t->build_id, bid, bid_size))
		goto bad;
	close(fd);
	*len = st.st_size;
	return t;
bad:
	free(t);
	close(fd);
	return NULL;
}

int np_uw_cache_write(const char *dir, const struct nmiprof_uw_table *t,
		      size_t len)
{
	char path[4096], tmp[4200];
	const char *p = (const char *)t;
	size_t done = 0;
	int fd;

	if (!dir || !*dir || !t->build_id_size ||
	    cache_path(path, sizeof(path), dir, t->build_id, t->build_id_size) < 0)
		return -1;
	if (mkdir(dir, 0755) < 0 && errno != EEXIST)
		return -1;
	snprintf(tmp, sizeof(tmp), "%s.tmp.%d", path, (int)getpid());
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return -1;
	while (done < len) {
		ssize_t n = write(fd, p + done, len - done);

		if (n <= 0) {
			close(fd);
			unlink(tmp);
			return -1;
		}
		done += n;
	}
	if (fsync(fd) < 0 || close(fd) < 0 || rename(tmp, path) < 0) {
		unlink(tmp);
		return -1;
	}
	return 0;
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
				 char *err, size_t errlen)
{
	struct np_uw_obj *o = calloc(1, sizeof(*o));
	uint8_t bid[20];
	const char *why;
	const void *id;
	ssize_t n = 0;
	Elf *elf;

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
	o->t = np_uw_cache_read(cache_dir, bid, n, &o->bytes);
	if (o->t) {
		o->cached = 1;
		return o;
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
