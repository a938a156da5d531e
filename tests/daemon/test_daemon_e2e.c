// SPDX-License-Identifier: GPL-2.0
/*
 * nmiprofd end to end, on this machine, with the libperf backend:
 *
 *   1. start nmiprofd (temp store, temp socket, 2 s slices) and run the
 *      `hot` workload (75% hot_a, 25% hot_b) under it
 *   2. status and top through the client library (lib/include/np_ctl.h): the
 *      counters move, top names hot_a above hot_b, the pid/comm/cpu
 *      filters hold; a malformed request gets an ERR and the connection
 *      stays usable; a client stuck half-way through a request or one
 *      that never reads its replies does not stall anyone
 *   3. SIGHUP with a new frequency: applied, sampling goes on; SIGHUP with
 *      a broken file: ignored, daemon alive
 *   4. SIGTERM: exit 0, socket removed, and the store holds every sample
 *      the daemon counted (the partial slice was flushed), hot_a included
 *   5. a second daemon with 1 s slices, kill -9 mid-slice: the finished
 *      slices read back intact; a restart on the same store and socket
 *      path (stale lock, stale socket) works
 *
 * usage: test_daemon_e2e NMIPROFD HOT
 * Exits 77 (skip) when system-wide perf sampling is not allowed here.
 */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <linux/perf_event.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>

#include "agg.h"
#include "np_ctl.h"
#include "store.h"

#define SKIP 77

/* Bounds on the daemon's response times stretch under ASan + UBSan. */
#ifdef __SANITIZE_ADDRESS__
#define SLOWDOWN 5
#else
#define SLOWDOWN 1
#endif

static const char *nmiprofd_bin, *hot_bin;
static char tmpdir[64];
static pid_t daemon_pid = -1, hot_pid = -1;
static int failures;

struct paths {
	char store[128], sock[128], conf[128], log[128];
};

static void cleanup(void)
{
	if (hot_pid > 0) {
		kill(hot_pid, SIGKILL);
		waitpid(hot_pid, NULL, 0);
		hot_pid = -1;
	}
	if (daemon_pid > 0) {
		kill(daemon_pid, SIGKILL);
		waitpid(daemon_pid, NULL, 0);
		daemon_pid = -1;
	}
}

static int rm_one(const char *path, const struct stat *st, int flag,
		  struct FTW *ftw)
{
	remove(path);
	return 0;
}

static void dump_log(const char *path)
{
	char line[512];
	FILE *f = fopen(path, "r");

	if (!f)
		return;
	fprintf(stderr, "---- %s ----\n", path);
	while (fgets(line, sizeof(line), f))
		fputs(line, stderr);
	fprintf(stderr, "----\n");
	fclose(f);
}

static void check(int ok, const char *what, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void check(int ok, const char *what, const char *fmt, ...)
{
	va_list ap;

	printf("%s: %s", ok ? "ok  " : "FAIL", what);
	if (fmt) {
		printf(" (");
		va_start(ap, fmt);
		vprintf(fmt, ap);
		va_end(ap);
		printf(")");
	}
	printf("\n");
	fflush(stdout);
	if (!ok)
		failures++;
}

static void fatal(const char *log, const char *fmt, ...)
	__attribute__((format(printf, 2, 3), noreturn));
static void fatal(const char *log, const char *fmt, ...)
{
	va_list ap;

	printf("FAIL: ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
	cleanup();
	if (log)
		dump_log(log);
	exit(1);
}

static void msleep(int ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

/* System-wide sampling is what the daemon does: skip if not allowed. */
static void probe_perf(void)
{
	struct perf_event_attr a = {
		.type = PERF_TYPE_SOFTWARE, .size = sizeof(a),
		.config = PERF_COUNT_SW_CPU_CLOCK, .sample_freq = 99, .freq = 1,
		.disabled = 1,
	};
	int fd = (int)syscall(SYS_perf_event_open, &a, -1, 0, -1, 0);
	char paranoid[16] = "?";
	FILE *f;

	if (fd >= 0) {
		close(fd);
		return;
	}
	f = fopen("/proc/sys/kernel/perf_event_paranoid", "r");
	if (f) {
		if (fgets(paranoid, sizeof(paranoid), f))
			paranoid[strcspn(paranoid, "\n")] = '\0';
		fclose(f);
	}
	printf("SKIP: system-wide perf_event_open is not allowed here: %s (perf_event_paranoid=%s, euid %d)\n",
	       strerror(errno), paranoid, (int)geteuid());
	exit(SKIP);
}

static void make_paths(struct paths *p, const char *tag)
{
	snprintf(p->store, sizeof(p->store), "%s/%s-store", tmpdir, tag);
	snprintf(p->sock, sizeof(p->sock), "%s/run/%s.sock", tmpdir, tag);
	snprintf(p->conf, sizeof(p->conf), "%s/%s.conf", tmpdir, tag);
	snprintf(p->log, sizeof(p->log), "%s/%s.log", tmpdir, tag);
}

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	if (!f || fputs(text, f) < 0 || fclose(f))
		fatal(NULL, "cannot write %s", path);
}

static pid_t spawn(const char *const argv[], const char *out)
{
	pid_t pid = fork();

	if (pid < 0)
		fatal(NULL, "fork: %s", strerror(errno));
	if (pid == 0) {
		int fd = open(out, O_WRONLY | O_CREAT | O_APPEND, 0644);

		if (fd >= 0) {
			dup2(fd, 1);
			dup2(fd, 2);
			close(fd);
		}
		execv(argv[0], (char *const *)argv);
		fprintf(stderr, "exec %s: %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	return pid;
}

/* Start nmiprofd and wait until it answers status (or died: fatal). */
static void start_daemon(const struct paths *p, const char *slice_s)
{
	const char *argv[] = {
		nmiprofd_bin, "-c", p->conf, "-s", p->store, "-S", p->sock,
		"--slice-seconds", slice_s, NULL,
	};
	char err[256] = "";

	daemon_pid = spawn(argv, p->log);
	for (int i = 0; i < 100; i++) {
		struct np_ctl_client *c;
		struct np_ctl_status st;
		int status;

		if (waitpid(daemon_pid, &status, WNOHANG) == daemon_pid) {
			daemon_pid = -1;
			fatal(p->log, "nmiprofd exited during start-up (status 0x%x)",
			      status);
		}
		c = np_ctl_open(p->sock, err, sizeof(err));
		if (c) {
			int rc = np_ctl_status(c, &st, err, sizeof(err));

			np_ctl_close(c);
			if (rc == 0)
				return;
		}
		msleep(100);
	}
	fatal(p->log, "nmiprofd did not answer on %s within 10 s: %s", p->sock, err);
}

static int get_status(const struct paths *p, struct np_ctl_status *st)
{
	char err[256];
	struct np_ctl_client *c = np_ctl_open(p->sock, err, sizeof(err));
	int rc;

	if (!c) {
		printf("status: %s\n", err);
		return -1;
	}
	rc = np_ctl_status(c, st, err, sizeof(err));
	if (rc)
		printf("status: %s\n", err);
	np_ctl_close(c);
	return rc;
}

static int get_top(const struct paths *p, const struct np_ctl_top_query *q,
		   struct np_ctl_top *t)
{
	char err[256];
	struct np_ctl_client *c = np_ctl_open(p->sock, err, sizeof(err));
	int rc;

	if (!c) {
		printf("top: %s\n", err);
		return -1;
	}
	rc = np_ctl_top(c, q, t, err, sizeof(err));
	if (rc)
		printf("top: %s\n", err);
	np_ctl_close(c);
	return rc;
}

static int raw_connect(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM, 0);

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)))
		fatal(NULL, "connect %s: %s", path, strerror(errno));
	return fd;
}

static uint64_t top_samples_of(const struct np_ctl_top *t, const char *sym)
{
	for (uint32_t i = 0; i < t->nr; i++)
		if (t->e[i].sym && !strcmp(t->e[i].sym, sym))
			return t->e[i].samples;
	return 0;
}

static void test_live(const struct paths *p)
{
	struct np_ctl_status st;
	struct np_ctl_top_query q;
	struct np_ctl_top t;
	uint64_t a, b, other;

	if (get_status(p, &st))
		fatal(p->log, "status failed");
	check(!strcmp(st.backend, "libperf"), "status: backend libperf", "%s", st.backend);
	check(st.source[0] != '\0', "status: sample source named", "%s", st.source);
	check(st.pid == daemon_pid, "status: pid", "%lld", (long long)st.pid);
	check(!strcmp(st.version, NMIPROF_VERSION), "status: version", "%s", st.version);
	check(st.proto == NP_CTL_PROTO_VERSION, "status: protocol", "%u", st.proto);
	check(st.freq_hz == 499, "status: frequency from the config file", "%u", st.freq_hz);
	check(st.samples > 0, "status: samples counted", "%llu",
	      (unsigned long long)st.samples);
	check(st.slices >= 1 && st.store_bytes > 0, "status: slices written to the store",
	      "%llu slices, %llu bytes", (unsigned long long)st.slices,
	      (unsigned long long)st.store_bytes);
	/* The parts are within the whole, and each holds something by now. */
	check(st.rss_bytes > 0 && st.mem_live > 0 && st.mem_slice > 0 &&
	      st.mem_symbols > 0 &&
	      st.mem_live + st.mem_slice + st.mem_store + st.mem_symbols < st.rss_bytes,
	      "status: memory of the parts within the RSS",
	      "rss %llu live %llu slice %llu store %llu symbols %llu",
	      (unsigned long long)st.rss_bytes, (unsigned long long)st.mem_live,
	      (unsigned long long)st.mem_slice, (unsigned long long)st.mem_store,
	      (unsigned long long)st.mem_symbols);
	check(st.slice_s == 2 && st.nr_cpus >= 1 && st.uptime_s >= 1,
	      "status: slice, cpus, uptime", "%u s, %u cpus, %llu s", st.slice_s,
	      st.nr_cpus, (unsigned long long)st.uptime_s);

	/* Top of the hot workload: 75% hot_a, 25% hot_b. */
	np_ctl_top_query_init(&q);
	q.n = 10;
	q.secs = 5;
	strcpy(q.comm, "hot");
	if (get_top(p, &q, &t))
		fatal(p->log, "top failed");
	a = top_samples_of(&t, "hot_a");
	b = top_samples_of(&t, "hot_b");
	check(t.matched > 50 && t.matched <= t.samples, "top comm=hot: samples matched",
	      "%llu of %llu", (unsigned long long)t.matched,
	      (unsigned long long)t.samples);
	check(t.nr > 0 && t.e[0].sym && !strcmp(t.e[0].sym, "hot_a"),
	      "top comm=hot: hot_a first", "%s", t.nr && t.e[0].sym ? t.e[0].sym : "-");
	check(a > 2 * b && b > 0, "top comm=hot: hot_a ~3x hot_b", "%llu vs %llu",
	      (unsigned long long)a, (unsigned long long)b);
	check(t.secs >= 2 && t.secs <= 5, "top: window covered", "%u s", t.secs);
	np_ctl_top_free(&t);

	/* By pid: the hot process with its comm. */
	np_ctl_top_query_init(&q);
	q.pid = hot_pid;
	q.sort = NP_CTL_SORT_PID;
	if (get_top(p, &q, &t))
		fatal(p->log, "top pid failed");
	/*
	 * A pid row is (pid, comm): samples taken in the child between
	 * fork and exec rightly carry the parent's comm, as in perf.  Those
	 * are a handful at most; everything else is "hot".
	 */
	other = 0;
	for (uint32_t i = 1; i < t.nr; i++)
		other += t.e[i].pid == hot_pid &&
			 !strcmp(t.e[i].comm, "test_daemon_e2e") ?
			 t.e[i].samples : UINT64_MAX / 2;
	check(t.nr >= 1 && t.e[0].pid == hot_pid && !strcmp(t.e[0].comm, "hot") &&
	      other <= 3 + t.e[0].samples / 50,
	      "top pid=hot sort=pid: the hot row, pid and comm (+ pre-exec samples)",
	      "%u rows: %lld %s, %llu samples in others", t.nr,
	      t.nr ? (long long)t.e[0].pid : -1LL, t.nr ? t.e[0].comm : "-",
	      (unsigned long long)other);
	np_ctl_top_free(&t);

	/* Per-CPU filter: each CPU's share is within the whole. */
	np_ctl_top_query_init(&q);
	q.cpu = 0;
	q.sort = NP_CTL_SORT_COMM;
	if (get_top(p, &q, &t))
		fatal(p->log, "top cpu failed");
	check(t.matched > 0 && t.matched < t.samples + 1, "top cpu=0: filtered",
	      "%llu of %llu", (unsigned long long)t.matched,
	      (unsigned long long)t.samples);
	np_ctl_top_free(&t);

	/* An unknown comm matches nothing, and says so without error. */
	np_ctl_top_query_init(&q);
	strcpy(q.comm, "no-such-comm");
	if (get_top(p, &q, &t))
		fatal(p->log, "top no-such-comm failed");
	check(t.nr == 0 && t.matched == 0 && t.samples > 0, "top: filter with no match",
	      NULL);
	np_ctl_top_free(&t);
}

static void test_bad_clients(const struct paths *p)
{
	static const char junk[] = "GET / HTTP/1.0\n";
	char buf[256], err[256];
	struct np_ctl_status st;
	struct np_ctl_client *c;
	int fd, stuck, flood;
	ssize_t n;
	struct timespec t0, t1;
	long ms;

	/* Malformed request: an ERR line, and the connection still works. */
	fd = raw_connect(p->sock);
	if (write(fd, junk, sizeof(junk) - 1) != (ssize_t)sizeof(junk) - 1)
		fatal(NULL, "write");
	n = read(fd, buf, sizeof(buf) - 1);
	buf[n > 0 ? n : 0] = '\0';
	check(!strncmp(buf, NP_CTL_PROTO " ERR msg=", 14), "malformed request: ERR reply",
	      "%.60s", buf);
	c = np_ctl_client_from_fd(fd);
	check(np_ctl_status(c, &st, err, sizeof(err)) == 0,
	      "malformed request: connection still usable", "%s", err);
	np_ctl_close(c);

	/* One client stuck mid-request, one flooding without reading. */
	stuck = raw_connect(p->sock);
	if (write(stuck, "NMIPROF/1 sta", 13) != 13)
		fatal(NULL, "write");
	flood = raw_connect(p->sock);
	fcntl(flood, F_SETFL, O_NONBLOCK);
	/*
	 * Keep writing for 1.5 s: once the replies fill the socket the
	 * daemon stops reading this client, and then our writes stall too.
	 */
	for (int i = 0; i < 150; i++) {
		while (write(flood, "NMIPROF/1 status\n", 17) == 17)
			;
		msleep(10);
	}
	clock_gettime(CLOCK_MONOTONIC, &t0);
	check(get_status(p, &st) == 0, "status while a client is stuck and one floods",
	      NULL);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	ms = (t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000;
	check(ms < 1000 * SLOWDOWN, "status answered within 1 s", "%ld ms, bound %d ms",
	      ms, 1000 * SLOWDOWN);
	/* Keep both open: they must be dropped by the daemon's timeout. */
	msleep(NP_CTL_TIMEOUT_MS + 1500);
	n = get_status(p, &st);
	check(n == 0 && st.clients == 1,
	      "stuck and flooding clients dropped after the timeout", "%u clients",
	      st.clients);
	close(stuck);
	close(flood);
}

static void test_reload(const struct paths *p)
{
	struct np_ctl_status st;
	uint64_t before;
	int i;

	write_file(p->conf, "# reloaded\nfrequency = 199\nlog_level = debug\nbackend = libperf\n");
	kill(daemon_pid, SIGHUP);
	for (i = 0; i < 30; i++) {
		if (get_status(p, &st) == 0 && st.freq_hz == 199)
			break;
		msleep(100);
	}
	check(i < 30, "SIGHUP: new frequency applied", "%u Hz", st.freq_hz);
	before = st.samples;
	msleep(1200);
	i = get_status(p, &st);
	check(i == 0 && st.samples > before,
	      "SIGHUP: sampling goes on with the new backend", "%llu -> %llu",
	      (unsigned long long)before, (unsigned long long)st.samples);

	/*
	 * A backend that cannot open (no nmiprof.ko here): the previous
	 * settings come back and sampling goes on.
	 */
	if (access("/dev/nmiprof", F_OK)) {
		write_file(p->conf, "frequency = 1000\nbackend = kmod\n");
		kill(daemon_pid, SIGHUP);
		msleep(800);
		i = get_status(p, &st);
		check(i == 0 && !strcmp(st.backend, "libperf") && st.freq_hz == 199,
		      "SIGHUP to an unavailable backend: previous one restored",
		      "%s at %u Hz", st.backend, st.freq_hz);
		before = st.samples;
		msleep(1000);
		i = get_status(p, &st);
		check(i == 0 && st.samples > before,
		      "SIGHUP to an unavailable backend: sampling goes on",
		      "%llu -> %llu", (unsigned long long)before,
		      (unsigned long long)st.samples);
	}

	write_file(p->conf, "frequency = banana\n");
	kill(daemon_pid, SIGHUP);
	msleep(500);
	check(get_status(p, &st) == 0 && st.freq_hz == 199,
	      "SIGHUP with a broken file: ignored, still running", NULL);
}

/* "N samples, M lost, K slices written" from the daemon's exit log. */
static int logged_totals(const char *log, unsigned long long *samples,
			 unsigned long long *lost)
{
	char line[512];
	FILE *f = fopen(log, "r");
	int found = 0;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		char *s = strstr(line, "info: ");

		if (s && sscanf(s, "info: %llu samples, %llu lost", samples, lost) == 2)
			found = 1;
	}
	fclose(f);
	return found ? 0 : -1;
}

struct find_sym {
	const char *comm, *sym;
	uint64_t count;
};

static int find_sym_fn(const struct np_prof_sample *s, void *arg)
{
	struct find_sym *fs = arg;

	if (strcmp(s->comm, fs->comm))
		return 0;
	for (unsigned int i = 0; i < s->nr_frames; i++)
		if (s->frames[i]->name && !strcmp(s->frames[i]->name, fs->sym)) {
			fs->count += s->count;
			break;
		}
	return 0;
}

static struct np_agg *read_store(const char *dir, struct np_read_stats *rs)
{
	struct np_read_opts o;
	struct np_agg *a = np_agg_new(NULL);
	char err[256];

	np_read_opts_init(&o);
	if (!a)
		fatal(NULL, "out of memory");
	if (np_store_read(dir, &o, a, rs, err, sizeof(err)))
		fatal(NULL, "reading the store %s: %s", dir, err);
	return a;
}

static int stop_daemon(int sig, int *status)
{
	for (int i = 0; i < 100; i++) {
		if (waitpid(daemon_pid, status, WNOHANG) == daemon_pid) {
			daemon_pid = -1;
			return 0;
		}
		if (i == 0)
			kill(daemon_pid, sig);
		msleep(100);
	}
	return -1;
}

static void test_sigterm(const struct paths *p)
{
	unsigned long long samples = 0, lost = 0;
	struct find_sym fs = { "hot", "hot_a", 0 };
	struct np_read_stats rs;
	struct np_agg *a;
	struct stat sb;
	int status;

	kill(hot_pid, SIGKILL);
	waitpid(hot_pid, NULL, 0);
	hot_pid = -1;
	if (stop_daemon(SIGTERM, &status))
		fatal(p->log, "nmiprofd did not exit within 10 s of SIGTERM");
	check(WIFEXITED(status) && WEXITSTATUS(status) == 0, "SIGTERM: exit status 0",
	      "0x%x", status);
	check(stat(p->sock, &sb) && errno == ENOENT, "SIGTERM: socket removed", NULL);
	if (logged_totals(p->log, &samples, &lost))
		fatal(p->log, "no totals line in the daemon's log");

	a = read_store(p->store, &rs);
	np_profile_foreach(a, find_sym_fn, &fs);
	check(rs.skipped == 0, "store: no damaged segment", "%u skipped", rs.skipped);
	check(rs.segments >= 2, "store: several slices", "%u segments", rs.segments);
	/* Every sample the daemon counted is on disk: the last slice too. */
	check(rs.samples + rs.lost == samples + lost && samples > 0,
	      "store: holds every sample counted, the flushed partial slice included",
	      "store %llu+%llu lost, daemon %llu+%llu lost",
	      (unsigned long long)rs.samples, (unsigned long long)rs.lost,
	      samples, lost);
	check(fs.count > 0, "store: hot_a stacks of comm hot, symbolized", "%llu",
	      (unsigned long long)fs.count);
	np_agg_free(a);
}

static void test_kill9(void)
{
	struct np_read_stats rs, rs2;
	struct np_ctl_status st;
	struct np_agg *a;
	struct paths p;
	int status;

	make_paths(&p, "k9");
	write_file(p.conf, "frequency = 499\nbackend = libperf\n");
	start_daemon(&p, "1");
	/* Slices end on whole seconds: 3.5 s leaves >= 2 done, one half full. */
	msleep(3500);
	kill(daemon_pid, SIGKILL);
	waitpid(daemon_pid, &status, 0);
	daemon_pid = -1;

	a = read_store(p.store, &rs);
	check(rs.segments >= 2 && rs.skipped == 0 && rs.samples > 0,
	      "kill -9: finished slices intact", "%u segments, %u skipped, %llu samples",
	      rs.segments, rs.skipped, (unsigned long long)rs.samples);
	np_agg_free(a);

	/* Same store and socket path: stale lock and socket are handled. */
	start_daemon(&p, "1");
	check(get_status(&p, &st) == 0, "restart after kill -9 on the same store",
	      NULL);
	msleep(1500);
	if (stop_daemon(SIGTERM, &status))
		fatal(p.log, "restarted nmiprofd did not exit on SIGTERM");
	check(WIFEXITED(status) && WEXITSTATUS(status) == 0,
	      "restarted daemon: SIGTERM exit 0", "0x%x", status);
	a = read_store(p.store, &rs2);
	check(rs2.segments > rs.segments && rs2.skipped == 0,
	      "restarted daemon: added slices, nothing damaged",
	      "%u -> %u segments", rs.segments, rs2.segments);
	np_agg_free(a);
}

int main(int argc, char **argv)
{
	struct paths p;
	const char *hot_argv[] = { NULL, "30", NULL };

	if (argc != 3) {
		fprintf(stderr, "usage: %s NMIPROFD HOT\n", argv[0]);
		return 2;
	}
	nmiprofd_bin = argv[1];
	hot_bin = argv[2];
	setvbuf(stdout, NULL, _IOLBF, 0);
	signal(SIGPIPE, SIG_IGN);
	probe_perf();

	snprintf(tmpdir, sizeof(tmpdir), "/tmp/nmiprofd-e2e.XXXXXX");
	if (!mkdtemp(tmpdir))
		fatal(NULL, "mkdtemp: %s", strerror(errno));
	{
		char run[96];

		snprintf(run, sizeof(run), "%s/run", tmpdir);	/* socket dir */
		if (mkdir(run, 0755))
			fatal(NULL, "mkdir %s: %s", run, strerror(errno));
	}
	make_paths(&p, "d");
	/* The backend is set in the file, not by flag: reloads may change it. */
	write_file(p.conf, "# e2e\nfrequency = 499\nuser_stacks = yes\nbackend = libperf\n");
	start_daemon(&p, "2");
	/* Started after the daemon: its exec and mmaps come as side-band. */
	hot_argv[0] = hot_bin;
	hot_pid = spawn(hot_argv, "/dev/null");
	msleep(3500);

	test_live(&p);
	test_bad_clients(&p);
	test_reload(&p);
	test_sigterm(&p);
	test_kill9();

	cleanup();
	if (failures) {
		dump_log(p.log);
		printf("test_daemon_e2e: %d check(s) failed (logs in %s)\n", failures,
		       tmpdir);
		return 1;
	}
	nftw(tmpdir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	printf("test_daemon_e2e: all checks passed\n");
	return 0;
}
