// SPDX-License-Identifier: GPL-2.0
/*
 * nmiprofd configuration (daemon/config.c): values, units and ranges,
 * the file syntax and its errors, command-line overrides, and what a
 * reload may change.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"

#include "../unit/check.h"

static char tmpfile_path[64];

static const char *write_conf(const char *text)
{
	FILE *f;

	snprintf(tmpfile_path, sizeof(tmpfile_path), "/tmp/npd-conf.XXXXXX");
	int fd = mkstemp(tmpfile_path);

	if (fd < 0)
		abort();
	f = fdopen(fd, "w");
	fputs(text, f);
	fclose(f);
	return tmpfile_path;
}

static void test_values(void)
{
	struct npd_config c;
	char err[256];

	npd_config_defaults(&c);
	CHECK(c.slice_s == 60 && c.freq_hz == 99 && c.backend == NP_BACKEND_AUTO);
	CHECK(c.user_stacks == 1 && c.live_s == 300 && c.log_level == NP_LOG_INFO);
	CHECK(c.pending_bytes == 64ULL << 20);
	CHECK(!strcmp(c.store_dir, "/var/lib/nmiprof"));
	CHECK(!strcmp(c.socket_path, "/run/nmiprof/nmiprofd.sock"));

	CHECK(npd_config_set(&c, "retention_size", "512M", err, sizeof(err)) == 0);
	CHECK(c.retention_bytes == 512ULL << 20);
	CHECK(npd_config_set(&c, "retention_size", "2GiB", err, sizeof(err)) == 0);
	CHECK(c.retention_bytes == 2ULL << 30);
	CHECK(npd_config_set(&c, "retention_size", "0", err, sizeof(err)) == 0);
	CHECK(c.retention_bytes == 0);
	CHECK(npd_config_set(&c, "retention_size", "12345", err, sizeof(err)) == 0);
	CHECK(c.retention_bytes == 12345);
	CHECK(npd_config_set(&c, "pending_size", "1M", err, sizeof(err)) == 0);
	CHECK(c.unwind_budget == 0);	/* unset: the module's own */
	CHECK(npd_config_set(&c, "unwind_budget", "8M", err, sizeof(err)) == 0);
	CHECK(c.unwind_budget == 8ULL << 20);
	CHECK(c.pending_bytes == 1ULL << 20);
	CHECK(npd_config_set(&c, "retention_age", "7d", err, sizeof(err)) == 0);
	CHECK(c.retention_age_s == 7 * 86400);
	CHECK(npd_config_set(&c, "retention_age", "90m", err, sizeof(err)) == 0);
	CHECK(c.retention_age_s == 90 * 60);
	CHECK(npd_config_set(&c, "backend", "perf", err, sizeof(err)) == 0);
	CHECK(c.backend == NP_BACKEND_PERF);
	CHECK(npd_config_set(&c, "backend", "kmod", err, sizeof(err)) == 0);
	CHECK(c.backend == NP_BACKEND_KMOD);
	CHECK(npd_config_set(&c, "log_level", "WARN", err, sizeof(err)) == 0);
	CHECK(c.log_level == NP_LOG_WARN);
	CHECK(npd_config_set(&c, "user_stacks", "off", err, sizeof(err)) == 0);
	CHECK(c.user_stacks == 0);
	CHECK(npd_config_set(&c, "frequency", "100000", err, sizeof(err)) == 0);
	CHECK(c.freq_hz == 100000);

	static const char *const bad[][2] = {
		{ "frequency", "0" }, { "frequency", "100001" },
		{ "frequency", "-5" }, { "frequency", "12abc" },
		{ "frequency", "" }, { "slice_seconds", "86401" },
		{ "kernel_stack_depth", "128" }, { "user_stack_depth", "0" },
		{ "live_seconds", "5" }, { "retention_size", "1X" },
		{ "pending_size", "1023K" }, { "pending_size", "0" },
		{ "unwind_budget", "0" }, { "unwind_budget", "63K" },
		{ "unwind_budget", "2T" },
		{ "retention_size", "99999999999999999999" },
		{ "retention_size", "99999999999T" }, { "retention_age", "3y" },
		{ "backend", "dtrace" }, { "log_level", "loud" },
		{ "user_stacks", "maybe" }, { "store_dir", "" },
		{ "no_such_key", "1" },
	};
	for (unsigned int i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct npd_config before = c;

		err[0] = '\0';
		CHECK(npd_config_set(&c, bad[i][0], bad[i][1], err, sizeof(err)) == -1);
		CHECK(err[0] != '\0' && !strchr(err, '\n'));
		/* A rejected value leaves the setting alone. */
		CHECK(!memcmp(&before, &c, sizeof(c)));
	}
	/* A socket path longer than sun_path is refused, not truncated. */
	{
		char longpath[200];

		memset(longpath, 'a', sizeof(longpath) - 1);
		longpath[0] = '/';
		longpath[sizeof(longpath) - 1] = '\0';
		CHECK(npd_config_set(&c, "socket", longpath, err, sizeof(err)) == -1);
	}
}

static void test_file(void)
{
	struct npd_config c;
	struct npd_overrides ov = { 0 };
	char err[256];
	const char *path;

	path = write_conf("# comment\n\n  frequency = 250  \nstore_dir = \" /srv/np \"\n"
			  "backend=libperf\n\t# indented comment\nslice_seconds = 10\n");
	CHECK(npd_config_load(&c, path, 1, NULL, err, sizeof(err)) == 0);
	CHECK(c.freq_hz == 250 && c.backend == NP_BACKEND_PERF && c.slice_s == 10);
	CHECK(!strcmp(c.store_dir, " /srv/np "));

	/* Overrides win over the file, in order. */
	CHECK(npd_overrides_add(&ov, "frequency", "1000", err, sizeof(err)) == 0);
	CHECK(npd_overrides_add(&ov, "frequency", "997", err, sizeof(err)) == 0);
	CHECK(npd_overrides_add(&ov, "frequency", "0", err, sizeof(err)) == -1);
	CHECK(npd_overrides_add(&ov, "bogus", "1", err, sizeof(err)) == -1);
	CHECK(npd_config_load(&c, path, 1, &ov, err, sizeof(err)) == 0);
	CHECK(c.freq_hz == 997 && c.slice_s == 10);
	unlink(path);

	/* Errors name the file and line; the output is untouched. */
	path = write_conf("frequency = 250\n\nfrequency = many\n");
	c.freq_hz = 12345;
	err[0] = '\0';
	CHECK(npd_config_load(&c, path, 1, &ov, err, sizeof(err)) == -1);
	CHECK(strstr(err, ":3:") && strstr(err, "frequency"));
	CHECK(c.freq_hz == 12345);
	unlink(path);

	path = write_conf("just words\n");
	CHECK(npd_config_load(&c, path, 1, NULL, err, sizeof(err)) == -1);
	CHECK(strstr(err, ":1:") && strstr(err, "key = value"));
	unlink(path);

	path = write_conf("frobnicate = 1\n");
	CHECK(npd_config_load(&c, path, 1, NULL, err, sizeof(err)) == -1);
	CHECK(strstr(err, "unknown setting 'frobnicate'"));
	unlink(path);

	/* A missing default file is fine, a missing named one is not. */
	CHECK(npd_config_load(&c, "/nonexistent/nmiprofd.conf", 0, &ov, err,
			      sizeof(err)) == 0);
	CHECK(c.freq_hz == 997 && c.slice_s == 60);
	CHECK(npd_config_load(&c, "/nonexistent/nmiprofd.conf", 1, NULL, err,
			      sizeof(err)) == -1);
	npd_overrides_free(&ov);
}

static void test_reload_rules(void)
{
	struct npd_config a, b;

	npd_config_defaults(&a);
	b = a;
	CHECK(!npd_config_backend_changed(&a, &b));
	CHECK(npd_config_restart_needed(&a, &b) == NULL);
	b.log_level = NP_LOG_DEBUG;
	b.slice_s = 5;
	b.retention_bytes = 1;
	CHECK(!npd_config_backend_changed(&a, &b));
	CHECK(npd_config_restart_needed(&a, &b) == NULL);
	b.freq_hz = 1000;
	CHECK(npd_config_backend_changed(&a, &b));
	b = a;
	b.user_stacks = 0;
	CHECK(npd_config_backend_changed(&a, &b));
	b = a;
	b.unwind_budget = 1ULL << 20;
	CHECK(npd_config_backend_changed(&a, &b));
	b = a;
	strcpy(b.store_dir, "/elsewhere");
	CHECK(npd_config_restart_needed(&a, &b) &&
	      !strcmp(npd_config_restart_needed(&a, &b), "store_dir"));
	b = a;
	b.live_s = 60;
	CHECK(npd_config_restart_needed(&a, &b) != NULL);
}

static const struct np_test_case cases[] = {
	NP_CASE(test_values),
	NP_CASE(test_file),
	NP_CASE(test_reload_rules),
	{ 0 }
};

int main(int argc, char **argv)
{
	return np_test_main(argc, argv, cases);
}
