/* SPDX-License-Identifier: GPL-2.0 */
/* Whole-file reads and crash-safe writes, for the store and its callers. */
#ifndef NP_FILEIO_H
#define NP_FILEIO_H

#include <stddef.h>

/* Read a whole regular file (at most max bytes) into *buf. */
int np_read_file(const char *path, size_t max, void **buf, size_t *len);
/* Read fd to its end (a pipe: `report -i -`), at most max bytes. */
int np_read_fd(int fd, size_t max, void **buf, size_t *len);
/* write(2) all of buf, retrying short writes and EINTR. */
int np_write_all(int fd, const void *buf, size_t len);
/* Write path atomically: temp file in the same dir, fsync, rename, fsync
 * dir.  0 or -errno. */
int np_write_atomic(const char *dir, const char *name, const void *buf,
		    size_t len);
/* State letter and parent pid from a /proc/PID[/task/TID]/stat file. */
int np_proc_stat(const char *path, char *state, unsigned int *ppid);
/*
 * Does process pid (under proc_root, "/proc") have a thread that has not
 * exited?  Its leader may be a zombie while other threads run.
 */
int np_proc_threads_live(const char *proc_root, unsigned int pid);

#endif /* NP_FILEIO_H */
