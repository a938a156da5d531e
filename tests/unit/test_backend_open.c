// SPDX-License-Identifier: GPL-2.0
/*
 * Backend selection and bad input: every refusal is one clear line,
 * never a crash.  Runs without nmiprof.ko (no /dev/nmiprof here).
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "np_backend.h"
#include "np_backend_impl.h"

#include "check.h"

/* open must fail with an error line containing want */
static void refuse(const struct np_backend_opts *o, const char *want)
{
	char err[256] = "";
	struct np_backend *b = np_backend_open(o, err, sizeof(err));

	CHECK(b == NULL);
	np_backend_close(b);
	printf("refused: %s\n", err);
	if (!strstr(err, want) || strchr(err, '\n')) {
		printf("FAIL: expected a line with '%s'\n", want);
		failures++;
	}
}

static void test_cpulist(void)
{
	uint64_t m[16];
	char err[128];

	CHECK(np_cpulist_parse("0,2-3", m, 1024, err, sizeof(err)) == 3);
	CHECK(m[0] == 0xd);
	CHECK(np_cpulist_parse("64-65\n", m, 1024, err, sizeof(err)) == 2);
	CHECK(m[0] == 0 && m[1] == 3);
	CHECK(np_cpulist_parse("1,1,0-1", m, 1024, err, sizeof(err)) == 2);
	CHECK(np_cpulist_parse("", m, 1024, err, sizeof(err)) < 0);
	CHECK(np_cpulist_parse("3-1", m, 1024, err, sizeof(err)) < 0);
	CHECK(np_cpulist_parse("0,x", m, 1024, err, sizeof(err)) < 0);
	CHECK(np_cpulist_parse("1024", m, 1024, err, sizeof(err)) < 0);
	CHECK(strstr(err, "1024") != NULL);
	CHECK(np_cpulist_online(m, 1024, err, sizeof(err)) >= 1);
	CHECK(m[0] & 1);

	/* and back, each range once; a short buffer is refused */
	char list[64], small[6];

	CHECK(np_cpulist_parse("0,2-3,63-65,1023", m, 1024, err, sizeof(err)) == 7);
	CHECK(np_cpulist_format(m, 1024, list, sizeof(list)) == 7);
	CHECK(!strcmp(list, "0,2-3,63-65,1023"));
	CHECK(np_cpulist_format(m, 1024, small, sizeof(small)) < 0);
	memset(m, 0, sizeof(m));
	CHECK(np_cpulist_format(m, 1024, list, sizeof(list)) == 0 && !list[0]);
}

static void test_refusals(void)
{
	struct np_backend_opts o;

	np_backend_opts_init(&o);
	CHECK(o.kind == NP_BACKEND_AUTO && o.freq_hz == 99 && o.pid == -1 &&
	      o.user_stacks && o.kstack_depth == NMIPROF_DEFAULT_FRAMES);

	o.freq_hz = 0;
	refuse(&o, "frequency");
	o.freq_hz = NMIPROF_MAX_FREQ + 1;
	refuse(&o, "frequency");
	np_backend_opts_init(&o);
	o.kstack_depth = NMIPROF_MAX_FRAMES + 1;
	refuse(&o, "depth");
	np_backend_opts_init(&o);
	o.kind = 7;
	refuse(&o, "unknown backend");
	if (access(NMIPROF_DEVICE, F_OK) != 0) {
		np_backend_opts_init(&o);
		o.kind = NP_BACKEND_KMOD;
		refuse(&o, NMIPROF_DEVICE);
	}
	np_backend_opts_init(&o);
	o.kind = NP_BACKEND_PERF;
	o.cpus = "0-";
	refuse(&o, "CPU list");
	o.cpus = "1000";	/* valid syntax, no such CPU */
	refuse(&o, "CPU");
	np_backend_opts_init(&o);
	o.kind = NP_BACKEND_PERF;
	o.pid = 0x3ffffff0;	/* beyond pid_max */
	refuse(&o, "no process");
}

/* a CPU subset opens just those CPUs (when perf works here) */
static void test_cpu_subset(void)
{
	struct np_backend_opts o;
	struct np_backend_stats st;
	struct np_backend *b;
	char err[256];

	np_backend_opts_init(&o);
	o.kind = NP_BACKEND_PERF;
	o.cpus = "0";
	b = np_backend_open(&o, err, sizeof(err));
	if (!b) {
		printf("note: libperf backend unavailable here: %s\n", err);
		return;
	}
	CHECK(np_backend_start(b) == 0);
	CHECK(np_backend_stop(b) == 0);
	CHECK(np_backend_stats(b, &st) == 0);
	CHECK(st.nr_cpus == 1 && !strcmp(st.backend, "libperf"));
	CHECK(!strcmp(np_backend_name(b), "libperf"));
	CHECK(err[0] == '\0');
	np_backend_close(b);
}

static const struct np_test_case cases[] = {
	NP_CASE(test_cpulist),
	NP_CASE(test_refusals),
	NP_CASE(test_cpu_subset),
	{ 0 }
};

int main(int argc, char **argv)
{
	return np_test_main(argc, argv, cases);
}
