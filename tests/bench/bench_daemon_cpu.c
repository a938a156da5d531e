// SPDX-License-Identifier: GPL-2.0
/*
 * nmiprofd's own CPU cost: run it at FREQ Hz on every CPU (libperf
 * backend) for SECONDS under a busy workload (one spinner per CPU), read
 * its utime+stime from /proc/PID/stat and print it as % of one CPU.
 * For scale, `perf record -a -g` at the same frequency is measured the
 * same way in the same run (when perf is installed): it only copies
 * records to a file, while the daemon symbolizes and aggregates them, so
 * the ratio is large by nature.  Figures only; the target (<= 1 % of one
 * CPU at 1 kHz) is not asserted.  Other processes starting meanwhile
 * cost the daemon side-band work, so the fork rate is printed too.
 *
 * With CLICKHOUSE_URL in the environment the daemon also ships its slices
 * there (tests/fleet/bench_fleet.sh starts the servers), SLICE_SECONDS
 * long (default 60, the daemon's: a slice's cost grows with its samples
 * and stacks, so shorter ones do not tell), and the fleet exporter's
 * thread (nmiprofd-fleet) is measured apart in the same run: its CPU,
 * its share of the daemon's, its cost per slice shipped, its minor page
 * faults per slice; and each ship's CPU apart (the status polled each
 * second), the first (cold: every stack new) from the ones after it,
 * whose mean is the steady cost whether 2 or 3 slices closed in the
 * window.  Give SECONDS room for three slices (190 at 60 s).
 *
 * usage: bench_daemon_cpu [NMIPROFD [SECONDS [FREQ]]]  (default: the build
 *        tree's nmiprofd, 20 s, 1000 Hz); BENCH_NO_PERF=1 skips perf
 *        (runs comparing two daemons)
 * Exits 77 (skip) when system-wide perf sampling is not allowed.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <linux/perf_event.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "np_ctl.h"

#define SKIP 77
#define MAX_SPIN 256
#define MAX_SHIP 64

static pid_t spinners[MAX_SPIN];
static int nspin;
static char tmpdir[64];

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void msleep(int ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

/*
 * CPU time of pid in seconds: /proc/PID/schedstat (ns, every thread of
 * a single-threaded daemon), else utime + stime from /proc/PID/stat,
 * whose 10 ms ticks are 0.05 % of a 20 s window.  -1 if gone.
 */
static double cpu_seconds(pid_t pid)
{
	char path[64], buf[1024], *p;
	unsigned long long ut, st, ns;
	FILE *f;
	size_t n;

	snprintf(path, sizeof(path), "/proc/%d/schedstat", (int)pid);
	f = fopen(path, "r");
	if (f) {
		int ok = fscanf(f, "%llu", &ns) == 1;

		fclose(f);
		if (ok)
			return (double)ns / 1e9;
	}
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	f = fopen(path, "r");
	if (!f)
		return -1;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	/* comm may hold spaces: fields restart after the last ')'. */
	p = strrchr(buf, ')');
	if (!p || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu",
			 &ut, &st) != 2)
		return -1;
	return (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
}

/* CPU seconds of pid's thread named comm (schedstat, ns), -1 if none;
 * its minor page faults so far in *minflt (stat), -1 if unknown. */
static double thread_cpu_seconds(pid_t pid, const char *comm, long long *minflt)
{
	char path[128], name[64];
	double s = -1;
	struct dirent *de;
	DIR *d;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	d = opendir(path);
	while (d && (de = readdir(d))) {
		unsigned long long ns;
		FILE *f;
		int ok;

		snprintf(path, sizeof(path), "/proc/%d/task/%.20s/comm", (int)pid,
			 de->d_name);
		f = fopen(path, "r");
		ok = f && fgets(name, sizeof(name), f);
		if (f)
			fclose(f);
		name[strcspn(name, "\n")] = 0;
		if (!ok || strcmp(name, comm))
			continue;
		snprintf(path, sizeof(path), "/proc/%d/task/%.20s/schedstat",
			 (int)pid, de->d_name);
		f = fopen(path, "r");
		if (f && fscanf(f, "%llu", &ns) == 1)
			s = (double)ns / 1e9;
		if (f)
			fclose(f);
		*minflt = -1;
		snprintf(path, sizeof(path), "/proc/%d/task/%.20s/stat",
			 (int)pid, de->d_name);
		f = fopen(path, "r");
		if (f) {
			char buf[1024], *p;
			size_t n = fread(buf, 1, sizeof(buf) - 1, f);

			buf[n] = 0;
			p = strrchr(buf, ')');
			if (!p || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %lld",
					 minflt) != 1)
				*minflt = -1;
			fclose(f);
		}
		break;
	}
	if (d)
		closedir(d);
	return s;
}

static long vm_hwm_kb(pid_t pid)
{
	char path[64], line[256];
	long kb = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	f = fopen(path, "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "VmHWM: %ld kB", &kb) == 1)
			break;
	fclose(f);
	return kb;
}

static __attribute__((noinline)) void bench_spin(void)
{
	volatile unsigned long x = 1;

	for (;;)
		x = x * 6364136223846793005UL + 1442695040888963407UL;
}

static void start_spinners(void)
{
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);

	for (nspin = 0; nspin < ncpu && nspin < MAX_SPIN; nspin++) {
		pid_t pid = fork();

		if (pid == 0)
			bench_spin();
		spinners[nspin] = pid;
	}
}

static void stop_spinners(void)
{
	for (int i = 0; i < nspin; i++) {
		kill(spinners[i], SIGKILL);
		waitpid(spinners[i], NULL, 0);
	}
	nspin = 0;
}

static pid_t spawn(char *const argv[], const char *out)
{
	pid_t pid = fork();

	if (pid == 0) {
		int fd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644);

		if (fd >= 0) {
			dup2(fd, 1);
			dup2(fd, 2);
		}
		execvp(argv[0], argv);
		_exit(127);
	}
	return pid;
}

static int rm_one(const char *path, const struct stat *st, int flag,
		  struct FTW *ftw)
{
	remove(path);
	return 0;
}

struct run {
	double cpu_s, wall_s;
	long hwm_kb;
	int ok;
};

/*
 * Let pid warm up for 1 s (symbol tables, ring set-up are start-up costs,
 * not steady state), then measure its CPU over `seconds`, then stop it
 * with SIGINT (perf) or SIGTERM (nmiprofd) and reap it.
 */
static struct run measure(pid_t pid, int seconds, int sig)
{
	struct run r = { 0 };
	double c0, c1, t0;
	int status;

	msleep(1000);
	c0 = cpu_seconds(pid);
	t0 = now_s();
	msleep(seconds * 1000);
	c1 = cpu_seconds(pid);
	r.wall_s = now_s() - t0;
	r.hwm_kb = vm_hwm_kb(pid);
	kill(pid, sig);
	waitpid(pid, &status, 0);
	r.ok = c0 >= 0 && c1 >= 0;
	r.cpu_s = c1 - c0;
	return r;
}

/* Processes created since boot (/proc/stat): the machine's churn, which
 * costs the daemon side-band work (mmaps, symbol tables) beyond samples. */
static unsigned long long forks_since_boot(void)
{
	unsigned long long n = 0;
	char line[256];
	FILE *f = fopen("/proc/stat", "r");

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "processes %llu", &n) == 1)
			break;
	fclose(f);
	return n;
}

static int probe_perf(void)
{
	struct perf_event_attr a = {
		.type = PERF_TYPE_SOFTWARE, .size = sizeof(a),
		.config = PERF_COUNT_SW_CPU_CLOCK, .sample_freq = 99, .freq = 1,
		.disabled = 1,
	};
	int fd = (int)syscall(SYS_perf_event_open, &a, -1, 0, -1, 0);

	if (fd < 0)
		return -1;
	close(fd);
	return 0;
}

int main(int argc, char **argv)
{
	int seconds = argc > 2 ? atoi(argv[2]) : 20;
	int freq = argc > 3 ? atoi(argv[3]) : 1000;
	char store[128], sock[128], log[128], freq_s[16], data[128], plog[128];
	const char *ch_url = getenv("CLICKHOUSE_URL");
	const char *slice_s = getenv("SLICE_SECONDS");
	double x0 = -1, x1 = -1;
	long long xf0 = -1, xf1 = -1;
	struct { uint64_t slices; double cpu; } ship[MAX_SHIP];
	int nship = 0;
	struct np_ctl_status st0 = { 0 }, st1 = { 0 };
	struct np_ctl_client *c;
	struct run d, p = { 0 };
	unsigned long long forks0, forks1;
	char err[256];
	pid_t pid;
	int have_perf;

	const char *nmiprofd = argc > 1 ? argv[1] : NMIPROF_TEST_BINDIR "/../daemon/nmiprofd";

	if (seconds <= 0 || freq <= 0) {
		fprintf(stderr, "usage: %s [NMIPROFD [SECONDS [FREQ]]]\n", argv[0]);
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (probe_perf()) {
		printf("SKIP: system-wide perf_event_open is not allowed here: %s\n",
		       strerror(errno));
		return SKIP;
	}
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/nmiprofd-bench.XXXXXX");
	if (!mkdtemp(tmpdir)) {
		perror("mkdtemp");
		return 1;
	}
	snprintf(store, sizeof(store), "%s/store", tmpdir);
	snprintf(sock, sizeof(sock), "%s/sock", tmpdir);
	snprintf(log, sizeof(log), "%s/nmiprofd.log", tmpdir);
	snprintf(data, sizeof(data), "%s/perf.data", tmpdir);
	snprintf(plog, sizeof(plog), "%s/perf.log", tmpdir);
	snprintf(freq_s, sizeof(freq_s), "%d", freq);

	start_spinners();
	printf("workload: %d spinning processes (one per online CPU); %d s per profiler at %d Hz per CPU\n",
	       nspin, seconds, freq);

	if (ch_url && *ch_url) {
		char *const args[] = {
			(char *)nmiprofd, "-c", "/dev/null", "-s", store, "-S", sock,
			"-F", freq_s, "--backend", "libperf",
			"--clickhouse-url", (char *)ch_url, "--host-label", "bench-cpu",
			"--slice-seconds", (char *)(slice_s ? slice_s : "60"), NULL,
		};

		printf("exporter: slices of %s s to %s\n", slice_s ? slice_s : "60",
		       ch_url);
		pid = spawn(args, log);
	} else {
		char *const args[] = {
			(char *)nmiprofd, "-c", "/dev/null", "-s", store, "-S", sock,
			"-F", freq_s, "--backend", "libperf", NULL,
		};

		pid = spawn(args, log);
	}
	/* Counters at the start of the measured window come from status. */
	for (int i = 0; i < 50; i++) {
		msleep(100);
		c = np_ctl_open(sock, err, sizeof(err));
		if (c && np_ctl_status(c, &st0, err, sizeof(err)) == 0) {
			np_ctl_close(c);
			break;
		}
		np_ctl_close(c);
	}
	if (!st0.backend[0]) {
		printf("FAIL: nmiprofd did not come up: %s (log: %s)\n", err, log);
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		stop_spinners();
		return 1;
	}
	{
		/* measure() without the kill: status needs the daemon alive. */
		double c0, c1, t0;

		msleep(1000);
		c = np_ctl_open(sock, err, sizeof(err));
		if (c)
			np_ctl_status(c, &st0, err, sizeof(err));
		np_ctl_close(c);
		c0 = cpu_seconds(pid);
		x0 = thread_cpu_seconds(pid, "nmiprofd-fleet", &xf0);
		forks0 = forks_since_boot();
		t0 = now_s();
		/* Each second, the exporter's CPU when it has shipped more
		 * (with 60 s slices and a window of two, the count of slices
		 * closing inside the window, 2 or 3, moved the total by half). */
		while (now_s() - t0 < seconds) {
			struct np_ctl_status sn = { 0 };

			msleep(1000);
			c = ch_url && *ch_url && nship < MAX_SHIP ?
			    np_ctl_open(sock, err, sizeof(err)) : NULL;
			if (c && !np_ctl_status(c, &sn, err, sizeof(err)) &&
			    sn.fleet_sent_slices != (nship ? ship[nship - 1].slices :
						     st0.fleet_sent_slices)) {
				ship[nship].slices = sn.fleet_sent_slices;
				ship[nship++].cpu = thread_cpu_seconds(pid, "nmiprofd-fleet",
								       &xf1);
			}
			np_ctl_close(c);
		}
		c1 = cpu_seconds(pid);
		x1 = thread_cpu_seconds(pid, "nmiprofd-fleet", &xf1);
		d.wall_s = now_s() - t0;
		forks1 = forks_since_boot();
		c = np_ctl_open(sock, err, sizeof(err));
		if (c)
			np_ctl_status(c, &st1, err, sizeof(err));
		np_ctl_close(c);
		d.hwm_kb = vm_hwm_kb(pid);
		d.cpu_s = c1 - c0;
		d.ok = c0 >= 0 && c1 >= 0 && st1.backend[0];
		kill(pid, SIGTERM);
		waitpid(pid, NULL, 0);
	}

	/* perf record -a -g at the same rate, same workload, same method. */
	have_perf = access("/usr/bin/perf", X_OK) == 0 && !getenv("BENCH_NO_PERF");
	if (have_perf) {
		char *const args[] = {
			"perf", "record", "-a", "-g", "-F", freq_s, "-o", data,
			"-q", NULL,
		};

		pid = spawn(args, plog);
		p = measure(pid, seconds, SIGINT);
	}
	stop_spinners();

	if (!d.ok) {
		printf("FAIL: could not measure nmiprofd (log: %s)\n", log);
		return 1;
	}
	{
		double pct = 100.0 * d.cpu_s / d.wall_s;
		uint64_t samples = st1.samples - st0.samples;
		uint64_t lost = st1.lost - st0.lost;

		printf("nmiprofd (%s, %s): %.3f %% of one CPU (%.2f s CPU in %.1f s), "
		       "%.0f samples/s, %llu lost, peak RSS %ld kB, store %llu bytes\n",
		       st1.backend, st1.source, pct, d.cpu_s, d.wall_s,
		       samples / d.wall_s, (unsigned long long)lost, d.hwm_kb,
		       (unsigned long long)st1.store_bytes);
		printf("nmiprofd: %.2f us of CPU per sample; meanwhile the machine started %.1f processes/s\n",
		       samples ? 1e6 * d.cpu_s / (double)samples : 0.0,
		       (double)(forks1 - forks0) / d.wall_s);
		if (ch_url && *ch_url && x0 >= 0 && x1 >= 0) {
			uint64_t sent = st1.fleet_sent_slices - st0.fleet_sent_slices;
			double per = sent ? (x1 - x0) / (double)sent : 0;

			printf("exporter (thread nmiprofd-fleet, same run): %.3f %% of one CPU "
			       "(%.3f s CPU), %.1f %% of the daemon's; %llu slices (%llu samples) "
			       "sent, %.1f ms CPU a slice, state %s\n",
			       100.0 * (x1 - x0) / d.wall_s, x1 - x0,
			       d.cpu_s > 0 ? 100.0 * (x1 - x0) / d.cpu_s : 0.0,
			       (unsigned long long)sent,
			       (unsigned long long)(st1.fleet_sent_samples - st0.fleet_sent_samples),
			       1e3 * per, st1.fleet);
			/* The first ship: cold (every stack new to the exporter
			 * and the server); those after it: each slice's own. */
			for (int i = 0; i < nship; i++) {
				double prev = i ? ship[i - 1].cpu : x0;
				uint64_t n = ship[i].slices - (i ? ship[i - 1].slices :
							       st0.fleet_sent_slices);

				printf("exporter: ship %d, %llu slice(s), %.1f ms CPU\n", i + 1,
				       (unsigned long long)n, 1e3 * (ship[i].cpu - prev));
			}
			if (nship > 1) {
				double ms = 1e3 * (ship[nship - 1].cpu - ship[0].cpu) /
					    (double)(ship[nship - 1].slices - ship[0].slices);

				printf("exporter after its first ship: %.1f ms CPU a slice, "
				       "%.3f %% of one CPU at one slice per %s s\n", ms,
				       ms / 10.0 / atof(slice_s ? slice_s : "60"),
				       slice_s ? slice_s : "60");
			}
			if (sent && xf0 >= 0 && xf1 >= 0)
				printf("exporter: %.0f minor page faults a slice\n",
				       (double)(xf1 - xf0) / (double)sent);
			printf("exporter target: < 0.2 %% of one CPU at 1000 Hz with 60 s slices: %s\n",
			       freq != 1000 || (slice_s && atoi(slice_s) != 60) ? "n/a (other settings)" :
			       !sent ? "n/a (no slice sent: a longer run)" :
			       100.0 * (x1 - x0) / d.wall_s < 0.2 ? "met" : "NOT met");
		} else if (ch_url && *ch_url) {
			printf("exporter: not measured (no nmiprofd-fleet thread)\n");
		}
		if (have_perf && p.ok) {
			double ppct = 100.0 * p.cpu_s / p.wall_s;

			printf("perf record -a -g: %.3f %% of one CPU (%.2f s CPU in %.1f s), peak RSS %ld kB\n",
			       ppct, p.cpu_s, p.wall_s, p.hwm_kb);
			if (p.cpu_s > 0)
				printf("ratio nmiprofd / perf record: %.1f\n", pct / ppct);
			else
				printf("ratio nmiprofd / perf record: n/a (perf used less than one clock tick)\n");
		} else {
			printf("perf record: not measured (%s)\n",
			       getenv("BENCH_NO_PERF") ? "BENCH_NO_PERF" :
			       have_perf ? "could not read its CPU time" : "perf not installed");
		}
		printf("target: <= 1 %% of one CPU at 1000 Hz per CPU: %s\n",
		       freq != 1000 ? "n/a (other frequency)" : pct <= 1.0 ? "met" : "NOT met");
	}
	nftw(tmpdir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	return 0;
}
