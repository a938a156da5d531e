// SPDX-License-Identifier: GPL-2.0
/*
 * bench_unwind: what unwind tables cost for a real process's objects.
 *
 *   bench_unwind [PID]     (default: a python3 started for the purpose)
 *
 * For every file the process maps executable: its .eh_frame size, table
 * rows and bytes, the time to compile it with no cache (cold) and to load
 * it from the cache (cached).  Prints the totals: table memory for the
 * process, and compile time per MiB of .eh_frame cold and cached.
 */
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/wait.h>
#include "np_clock.h"
#include "np_unwind_impl.h"

#define MAX_OBJS 256

int main(int argc, char **argv)
{
	char path[4096], line[4096], err[256], dir[] = "/tmp/np_uw_benchXXXXXX";
	char *objs[MAX_OBJS];
	int nobjs = 0, deferred;
	pid_t pid = argc > 1 ? atoi(argv[1]) : -1, child = -1;
	uint64_t eh = 0, bytes = 0, rows = 0, cold = 0, warm = 0;
	FILE *f;

	if (pid < 0) {
		/*
		 * python3 reads its own pipe, not our stdin: with stdin at
		 * EOF it exited before its maps were read, and with fd 0
		 * closed (CI) pipe() returned fd 0 and it read its own
		 * "ready".  Fds 0-2 are made to exist first for the same reason.
		 */
		int out[2], in[2], nul;

		while ((nul = open("/dev/null", O_RDWR)) >= 0 && nul < 3)
			;
		if (nul >= 0)
			close(nul);
		if (pipe(out) < 0 || pipe(in) < 0)
			return 1;
		child = fork();
		if (!child) {
			dup2(in[0], 0);
			dup2(out[1], 1);
			close(in[0]);
			close(in[1]);
			close(out[0]);
			close(out[1]);
			execl("/usr/bin/python3", "python3", "-c",
			      "import json, sys; print('ready', flush=True); sys.stdin.read()",
			      (char *)NULL);
			_exit(127);
		}
		close(out[1]);
		close(in[0]);
		/* "ready" and its newline may come in two writes */
		for (size_t n = 0; n < 6;) {
			ssize_t r = read(out[0], line + n, 6 - n);

			if (r <= 0)
				break;
			n += r;
		}
		if (memcmp(line, "ready\n", 6)) {
			fprintf(stderr, "bench_unwind: python3 did not start\n");
			return 1;
		}
		pid = child;
	}
	snprintf(path, sizeof(path), "/proc/%d/maps", pid);
	f = fopen(path, "r");
	if (!f) {
		perror(path);
		return 1;
	}
	while (fgets(line, sizeof(line), f) && nobjs < MAX_OBJS) {
		char perms[8], *file = strchr(line, '/');
		int dup = 0;

		if (sscanf(line, "%*x-%*x %7s", perms) != 1 || perms[2] != 'x' || !file)
			continue;
		file[strcspn(file, "\n")] = '\0';
		for (int i = 0; i < nobjs; i++)
			dup |= !strcmp(objs[i], file);
		if (!dup)
			objs[nobjs++] = strdup(file);
	}
	fclose(f);
	if (child > 0) {
		kill(child, SIGKILL);
		waitpid(child, NULL, 0);
	}
	if (!mkdtemp(dir))
		return 1;
	printf("%-58s %9s %8s %9s %8s %8s\n", "object", ".eh_frame", "rows",
	       "bytes", "cold ms", "cache ms");
	for (int i = 0; i < nobjs; i++) {
		struct np_uw_compile_stats st;
		struct np_uw_obj *o;
		uint64_t t0, t1, t2;
		size_t len;
		int fd = open(objs[i], O_RDONLY);
		struct nmiprof_uw_table *t;

		if (fd < 0)
			continue;
		t = np_uw_compile(fd, objs[i], "/usr/lib/debug", &len, &st, err, sizeof(err));
		free(t);
		/* cold: compiled and written; cached: read back */
		t0 = np_mono_ns();
		o = np_uw_obj_load(fd, objs[i], dir, "/usr/lib/debug", NP_UW_LOAD_COMPILE,
				   &deferred, err, sizeof(err));
		t1 = np_mono_ns();
		np_uw_obj_free(o);
		o = np_uw_obj_load(fd, objs[i], dir, "/usr/lib/debug", NP_UW_LOAD_COMPILE,
				   &deferred, err, sizeof(err));
		t2 = np_mono_ns();
		close(fd);
		if (!o) {
			printf("%-58s %s\n", objs[i], err);
			continue;
		}
		printf("%-58s %9llu %8u %9zu %8.1f %8.2f%s\n", objs[i],
		       (unsigned long long)st.eh_frame_bytes, o->t->nr_rows,
		       o->bytes, (t1 - t0) / 1e6, (t2 - t1) / 1e6,
		       o->cached ? "" : " (not cached)");
		eh += st.eh_frame_bytes;
		rows += o->t->nr_rows;
		bytes += o->bytes;
		cold += t1 - t0;
		warm += t2 - t1;
		np_uw_obj_free(o);
	}
	snprintf(line, sizeof(line), "rm -rf '%s'", dir);
	if (system(line) != 0)
		fprintf(stderr, "bench_unwind: could not remove %s\n", dir);
	printf("\ntable memory for pid %d's %d objects: %llu bytes (%llu rows) "
	       "from %llu bytes of .eh_frame (%.2fx)\n", (int)pid, nobjs,
	       (unsigned long long)bytes, (unsigned long long)rows,
	       (unsigned long long)eh, eh ? (double)bytes / eh : 0);
	printf("compile per MiB of .eh_frame: cold %.0f ms, cached %.1f ms\n",
	       eh ? cold / 1e6 / (eh / 1048576.0) : 0,
	       eh ? warm / 1e6 / (eh / 1048576.0) : 0);
	return 0;
}
