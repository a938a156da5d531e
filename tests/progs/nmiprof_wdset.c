// SPDX-License-Identifier: GPL-2.0
/*
 * nmiprof_wdset: time NMIPROF_IOC_SET_WATCHDOG, for the watchdog_setstuck
 * QEMU scenario.
 *
 *   nmiprof_wdset [-s] [-r FILE] [-w TEXT] DELAY_MS ENABLED:THRESHOLD...
 *
 * Pins itself to CPU 0, opens /dev/nmiprof (twice with -s: one file
 * starts a sampling session with the module's defaults), creates FILE if
 * given (ready), waits for a kernel log line with TEXT if given (anywhere
 * in the log; polled: a CPU with interrupts off wakes no reader), sleeps
 * DELAY_MS, with -s closes the session's file, which stops the session
 * (as killing `nmiprof record` does), then sets the watchdog to each
 * ENABLED:THRESHOLD in turn (all CPUs).  Each call's duration goes to
 * stdout and, as a "nmiprof_wdset:" line, to /dev/kmsg, so that dmesg
 * shows it in order with the kernel's own lines (a spin's start and end).
 * Everything is set up before the delay: a process that forks or execs
 * while another CPU has interrupts off may wait for it in the kernel (TLB
 * shootdowns), and that is not what is measured here.
 * Exit status 1 if a call failed.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include "../../include/nmiprof/nmiprof_abi.h"

/* Poll /dev/kmsg for a line with @text: up to 60 s. */
static int wait_kmsg(const char *text)
{
	char rec[1024];
	int i, fd = open("/dev/kmsg", O_RDONLY | O_NONBLOCK);
	ssize_t len;

	if (fd < 0) {
		perror("/dev/kmsg");
		return -1;
	}
	for (i = 0; i < 1200; i++) {
		while ((len = read(fd, rec, sizeof(rec) - 1)) > 0 ||
		       (len < 0 && errno == EPIPE)) {
			if (len <= 0)
				continue;	/* overwritten: next record */
			rec[len] = 0;
			if (strstr(rec, text)) {
				close(fd);
				return 0;
			}
		}
		usleep(50000);
	}
	close(fd);
	fprintf(stderr, "no kernel log line with \"%s\" in 60 s\n", text);
	return -1;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static int open_hello(void)
{
	struct nmiprof_hello h;
	int fd = open(NMIPROF_DEVICE, O_RDWR);

	if (fd < 0) {
		perror(NMIPROF_DEVICE);
		return -1;
	}
	memset(&h, 0, sizeof(h));
	h.magic = NMIPROF_MAGIC;
	h.abi_version = NMIPROF_ABI_VERSION;
	h.abi_minor = NMIPROF_ABI_MINOR;
	if (ioctl(fd, NMIPROF_IOC_HELLO, &h)) {
		perror("HELLO");
		close(fd);
		return -1;
	}
	return fd;
}

/* @what took @ms, @err: to stdout and, in order with the kernel's, kmsg. */
static void say(int kmsg, const char *what, int err, double ms)
{
	char line[160];

	snprintf(line, sizeof(line), "nmiprof_wdset: %s: %s after %.1f ms\n",
		 what, err ? strerror(err) : "done", ms);
	fputs(line, stdout);
	fflush(stdout);
	if (write(kmsg, line, strlen(line)) < 0)
		perror("write /dev/kmsg");
}

int main(int argc, char **argv)
{
	struct nmiprof_watchdog w[8];
	char what[80];
	cpu_set_t set;
	const char *wait_for = NULL, *ready = NULL;
	int i, n, fd, kmsg, opt, sfd = -1, session = 0, ret = 0;
	double t0;

	while ((opt = getopt(argc, argv, "r:sw:")) != -1) {
		if (opt == 'r')
			ready = optarg;
		else if (opt == 's')
			session = 1;
		else if (opt == 'w')
			wait_for = optarg;
		else
			return 2;
	}
	argv += optind - 1;
	argc -= optind - 1;
	if (argc < 3 || argc - 2 > 8) {
		fprintf(stderr, "usage: nmiprof_wdset [-s] [-r FILE] [-w TEXT] DELAY_MS ENABLED:THRESHOLD... (at most 8)\n");
		return 2;
	}
	n = argc - 2;
	for (i = 0; i < n; i++) {
		unsigned int en, th;

		memset(&w[i], 0, sizeof(w[i]));
		if (sscanf(argv[i + 2], "%u:%u", &en, &th) != 2) {
			fprintf(stderr, "%s: want ENABLED:THRESHOLD\n", argv[i + 2]);
			return 2;
		}
		w[i].enabled = en;
		w[i].threshold_s = th;
	}
	CPU_ZERO(&set);
	CPU_SET(0, &set);
	if (sched_setaffinity(0, sizeof(set), &set))
		perror("sched_setaffinity CPU 0");
	kmsg = open("/dev/kmsg", O_WRONLY);
	if (kmsg < 0) {
		perror("/dev/kmsg");
		return 1;
	}
	fd = open_hello();
	if (fd < 0)
		return 1;
	if (session) {
		sfd = open_hello();
		if (sfd < 0)
			return 1;
		if (ioctl(sfd, NMIPROF_IOC_START)) {
			perror("START");
			return 1;
		}
	}
	if (ready && close(open(ready, O_WRONLY | O_CREAT, 0644)))
		perror(ready);
	if (wait_for && wait_kmsg(wait_for))
		return 1;
	usleep(atoi(argv[1]) * 1000);
	if (session) {
		int err;

		t0 = now();
		err = close(sfd) ? errno : 0;
		say(kmsg, "close, stopping the session", err,
		    (now() - t0) * 1e3);
		if (err)
			ret = 1;
	}
	for (i = 0; i < n; i++) {
		int err;

		t0 = now();
		err = ioctl(fd, NMIPROF_IOC_SET_WATCHDOG, &w[i]) ? errno : 0;
		snprintf(what, sizeof(what),
			 "SET_WATCHDOG enabled %u threshold %u",
			 w[i].enabled, w[i].threshold_s);
		say(kmsg, what, err, (now() - t0) * 1e3);
		if (err)
			ret = 1;
	}
	return ret;
}
