// SPDX-License-Identifier: GPL-2.0
/*
 * Standalone profile files (`nmiprof record -o`: version-3 segments back
 * to back) and the walk over a merged profile.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include "store_codec.h"
#include "store_seg.h"

struct np_profile {
	int fd;
	int level;
	int committed;
	char *path;	/* the name the profile gets at np_profile_commit() */
	char *tmp;	/* where it is written until then */
};

/*
 * The profile is written under a temporary name in path's directory, so
 * a recording that cannot start leaves an existing file alone; 0600, as
 * perf creates perf.data: a profile names other users' processes and,
 * with kernel frames, where the kernel's text sits.
 */
struct np_profile *np_profile_create(const char *path, int level,
			       char *err, size_t errlen)
{
	struct np_profile *f = calloc(1, sizeof(*f));
	size_t n = strlen(path);
	struct stat st;

	if (f) {
		f->path = strdup(path);
		f->tmp = malloc(n + sizeof(".tmp.XXXXXX"));
	}
	if (!f || !f->path || !f->tmp) {
		snprintf(err, errlen, "out of memory");
		goto fail;
	}
	if (!n || path[n - 1] == '/' || (!stat(path, &st) && S_ISDIR(st.st_mode))) {
		snprintf(err, errlen, "%s: %s", path, strerror(EISDIR));
		errno = EISDIR;
		goto fail;
	}
	f->level = level;	/* 0: by size */
	/* "-" is standard output, as perf record -o -; a device or pipe
	 * (/dev/stdout, a fifo) is written as it is. */
	if (!strcmp(path, "-")) {
		f->fd = fcntl(STDOUT_FILENO, F_DUPFD_CLOEXEC, 3);
		f->committed = 1;
	} else if (!stat(path, &st) && !S_ISREG(st.st_mode)) {
		f->fd = open(path, O_WRONLY | O_CLOEXEC);
		f->committed = 1;
	} else {
		memcpy(f->tmp, path, n);
		memcpy(f->tmp + n, ".tmp.XXXXXX", sizeof(".tmp.XXXXXX"));
		f->fd = mkostemp(f->tmp, O_CLOEXEC);	/* mode 0600 */
	}
	if (f->fd < 0) {
		int e = errno;

		snprintf(err, errlen, "%s: %s", path, strerror(e));
		errno = e;
		goto fail;
	}
	return f;
fail:
	if (f) {
		free(f->path);
		free(f->tmp);
	}
	free(f);
	return NULL;
}

int np_profile_commit(struct np_profile *f, char *err, size_t errlen)
{
	struct stat st;
	char *old;

	if (f->committed)
		return 0;
	/* A non-empty profile already there is kept as FILE.old (perf's
	 * perf.data.old), replacing an older one. */
	if (!stat(f->path, &st) && S_ISREG(st.st_mode) && st.st_size) {
		old = malloc(strlen(f->path) + sizeof(".old"));
		if (!old) {
			snprintf(err, errlen, "out of memory");
			return -ENOMEM;
		}
		strcpy(old, f->path);
		strcat(old, ".old");
		if (rename(f->path, old)) {
			int e = errno;

			snprintf(err, errlen, "cannot keep %s as %s: %s", f->path,
				 old, strerror(e));
			free(old);
			return -e;
		}
		free(old);
	}
	if (rename(f->tmp, f->path)) {
		int e = errno;

		snprintf(err, errlen, "%s: %s", f->path, strerror(e));
		return -e;
	}
	f->committed = 1;
	return 0;
}

int np_profile_write(struct np_profile *f, const struct np_agg *a,
		  uint64_t start_ns, uint64_t end_ns, char *err, size_t errlen)
{
	size_t len;
	void *seg;
	int ret = np_seg_encode(a, start_ns, end_ns, f->level, &seg, &len);

	if (ret) {
		snprintf(err, errlen, "encoding segment: %s", strerror(-ret));
		return ret;
	}
	ret = np_write_all(f->fd, seg, len);
	/* Each segment is durable before the next slice starts, so a crash
	 * loses at most the slice in memory; a torn tail is skipped. */
	if (!ret && fdatasync(f->fd) && errno != EINVAL)	/* EINVAL: a pipe */
		ret = -errno;
	free(seg);
	if (ret)
		snprintf(err, errlen, "writing segment: %s", strerror(-ret));
	return ret;
}

static int file_end(struct np_profile *f, int keep)
{
	int ret = 0;

	if (!f)
		return 0;
	if (keep && !f->committed) {
		char err[8];

		ret = np_profile_commit(f, err, sizeof(err));
	}
	if (close(f->fd) && !ret)
		ret = -errno;
	if (!f->committed)
		unlink(f->tmp);
	free(f->path);
	free(f->tmp);
	free(f);
	return ret;
}

int np_profile_close(struct np_profile *f)
{
	return file_end(f, 1);
}

void np_profile_discard(struct np_profile *f)
{
	file_end(f, 0);
}

int np_profile_read(const char *path, const struct np_read_opts *o,
		 struct np_agg *a, struct np_read_stats *st,
		 char *err, size_t errlen)
{
	struct np_read_stats local;
	struct np_read_opts def;
	size_t len;
	void *buf;
	int ret;

	if (!o) {
		np_read_opts_init(&def);
		o = &def;
	}
	if (!st)
		st = &local;
	memset(st, 0, sizeof(*st));
	/* "-": standard input, as perf report -i - */
	ret = strcmp(path, "-") ? np_read_file(path, SIZE_MAX / 2, &buf, &len) :
	      np_read_fd(STDIN_FILENO, SIZE_MAX / 2, &buf, &len);
	if (ret) {
		snprintf(err, errlen, "%s: %s", path, strerror(-ret));
		return ret;
	}
	/* Damage at the very start must not hide later segments: accept
	 * the file if a segment magic appears anywhere. */
	if (len < 8 || !memmem(buf, len, NP_SEG_MAGIC, 8)) {
		snprintf(err, errlen, "%s: not an nmiprof profile", path);
		free(buf);
		return -EINVAL;
	}
	ret = np_seg_read_buf(path, buf, len, o, a, st, NULL);
	free(buf);
	if (ret)
		snprintf(err, errlen, "%s: %s", path, strerror(-ret));
	return ret;
}

static int count_desc(const void *a, const void *b)
{
	const struct np_agg_entry *x = *(const struct np_agg_entry *const *)a;
	const struct np_agg_entry *y = *(const struct np_agg_entry *const *)b;

	if (x->count != y->count)
		return x->count > y->count ? -1 : 1;
	return np_seg_rec_cmp(x, y);
}

int np_profile_foreach(const struct np_agg *a, np_prof_fn fn, void *arg)
{
	const struct np_stacktab *st = np_agg_stacktab(a);
	const struct np_agg_entry *ents, **order;
	const struct np_sym **frames = NULL;
	unsigned int cap = 0;
	uint32_t nr;
	int ret = 0;

	ents = np_agg_entries(a, &nr);
	order = malloc((nr ? nr : 1) * sizeof(*order));
	if (!order)
		return -ENOMEM;
	for (uint32_t i = 0; i < nr; i++)
		order[i] = &ents[i];
	qsort(order, nr, sizeof(*order), count_desc);
	for (uint32_t i = 0; i < nr && !ret; i++) {
		const struct np_agg_entry *e = order[i];
		unsigned int d = np_stacktab_depth(st, e->stack);
		struct np_prof_sample s;

		if (d > cap) {
			const struct np_sym **n = realloc(frames, d * sizeof(*n));

			if (!n) {
				ret = -ENOMEM;
				break;
			}
			frames = n;
			cap = d;
		}
		s.pid = e->pid;
		s.cpu = e->cpu;
		s.comm = np_stacktab_str_get(st, e->comm);
		s.stack = e->stack;
		s.count = e->count;
		s.nr_frames = np_stacktab_walk(st, e->stack, frames, d);
		s.frames = frames;
		ret = fn(&s, arg);
	}
	free(frames);
	free(order);
	return ret;
}
