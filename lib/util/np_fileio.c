// SPDX-License-Identifier: GPL-2.0
/* Whole-file reads and crash-safe writes (np_fileio.h). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include "np_fileio.h"

int np_write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;

	while (len) {
		ssize_t n = write(fd, p, len);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		p += n;
		len -= n;
	}
	return 0;
}

int np_read_fd(int fd, size_t max, void **buf, size_t *len)
{
	size_t got = 0, cap = 0;
	char *b = NULL;

	for (;;) {
		ssize_t n;

		if (got == cap) {
			char *nb;

			if (cap >= max)
				break;
			cap = cap ? cap * 2 : 1 << 16;
			cap = cap < max ? cap : max;
			nb = realloc(b, cap);
			if (!nb) {
				free(b);
				return -ENOMEM;
			}
			b = nb;
		}
		n = read(fd, b + got, cap - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			int e = errno;

			free(b);
			return -e;
		}
		if (!n)
			break;
		got += n;
	}
	if (got == max) {
		free(b);
		return -EFBIG;
	}
	*buf = b ? b : malloc(1);
	*len = got;
	return *buf ? 0 : -ENOMEM;
}

int np_read_file(const char *path, size_t max, void **buf, size_t *len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	struct stat sb;
	size_t got = 0;
	char *b;
	int ret;

	if (fd < 0)
		return -errno;
	if (fstat(fd, &sb) || !S_ISREG(sb.st_mode) || (uint64_t)sb.st_size > max) {
		ret = S_ISREG(sb.st_mode) ? -EFBIG : -EINVAL;
		close(fd);
		return ret;
	}
	b = malloc(sb.st_size ? sb.st_size : 1);
	if (!b) {
		close(fd);
		return -ENOMEM;
	}
	while (got < (size_t)sb.st_size) {
		ssize_t n = read(fd, b + got, sb.st_size - got);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;	/* shrank under us: use what is there */
		got += n;
	}
	close(fd);
	*buf = b;
	*len = got;
	return 0;
}

int np_write_atomic(const char *dir, const char *name, const void *buf,
		    size_t len)
{
	char tmp[4096], dst[4096];
	int fd, dfd, ret;

	/* A temp name of its own: two writers of one name must not write
	 * into, or rename, each other's temporary file. */
	if (snprintf(tmp, sizeof(tmp), "%s/.tmp-%s.XXXXXX", dir, name) >= (int)sizeof(tmp) ||
	    snprintf(dst, sizeof(dst), "%s/%s", dir, name) >= (int)sizeof(dst))
		return -ENAMETOOLONG;
	fd = mkostemp(tmp, O_CLOEXEC);
	if (fd < 0)
		return -errno;
	ret = fchmod(fd, 0640) ? -errno : 0;	/* mkostemp makes it 0600 */
	if (!ret)
		ret = np_write_all(fd, buf, len);
	/* Data must be on disk before the rename makes it visible, or a
	 * crash could leave a finished name with missing contents. */
	if (!ret && fdatasync(fd))
		ret = -errno;
	if (close(fd) && !ret)
		ret = -errno;
	if (!ret && rename(tmp, dst))
		ret = -errno;
	if (ret) {
		unlink(tmp);
		return ret;
	}
	/* And the rename itself must survive a crash. */
	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return -errno;
	ret = fsync(dfd) ? -errno : 0;
	close(dfd);
	return ret;
}

int np_proc_stat(const char *path, char *state, unsigned int *ppid)
{
	FILE *f = fopen(path, "re");
	char buf[512], *p;
	size_t n;

	if (!f)
		return -errno;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	/* "pid (comm) state ppid ...": comm may hold spaces and parens */
	p = strrchr(buf, ')');
	if (!p || sscanf(p + 1, " %c %u", state, ppid) != 2)
		return -EINVAL;
	return 0;
}

int np_proc_threads_live(const char *proc_root, unsigned int pid)
{
	unsigned int ppid;
	struct dirent *e;
	char path[4096], st;
	int live = 0;
	DIR *d;

	snprintf(path, sizeof(path), "%s/%u/task", proc_root, pid);
	d = opendir(path);
	if (!d)
		return 0;
	while (!live && (e = readdir(d)) != NULL) {
		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%u/task/%.16s/stat", proc_root,
			 pid, e->d_name);
		live = !np_proc_stat(path, &st, &ppid) && st != 'Z' && st != 'X';
	}
	closedir(d);
	return live;
}
