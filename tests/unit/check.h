/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The check of the C tests: a failed CHECK is reported with its place and
 * counted, and the test goes on, so one run shows every failure.  An
 * optional printf-style note says what was found instead.
 *
 * A test is a table of cases, as in KUnit, run by np_test_main():
 *
 *	static const struct np_test_case cases[] = {
 *		NP_CASE(test_roundtrip),
 *		NP_CASE(test_corruption),
 *		{ 0 }
 *	};
 *	int main(int argc, char **argv) { return np_test_main(argc, argv, cases); }
 *
 *	test_x               every case, in table order
 *	test_x roundtrip ... those cases only (the "test_" prefix is optional)
 *	test_x --list        the case names
 */
#ifndef NP_TEST_CHECK_H
#define NP_TEST_CHECK_H

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static int failures;

static inline void np_check_note(const char *fmt, ...)
{
	va_list ap;

	if (fmt[0]) {
		fputs(": ", stderr);
		va_start(ap, fmt);
		vfprintf(stderr, fmt, ap);
		va_end(ap);
	}
	fputc('\n', stderr);
}

#define CHECK(cond, ...) do {						\
	if (!(cond)) {							\
		fprintf(stderr, "FAIL %s:%d: %s", __FILE__, __LINE__,	\
			#cond);						\
		np_check_note("" __VA_ARGS__);				\
		failures++;						\
	}								\
} while (0)

struct np_test_case {
	const char *name;
	void (*run)(void);
	int slow;		/* not run whole under the sanitizers */
};

#define NP_CASE(fn)		{ #fn, fn, 0 }
/*
 * A case that takes a minute under ASan (large synthetic stores): the
 * sanitizer build runs it only when it is named, which keeps the suite's
 * sanitizer phase short; the plain build always runs it.
 */
#define NP_CASE_SLOW(fn)	{ #fn, fn, 1 }

#ifdef __SANITIZE_ADDRESS__
#define NP_TEST_SANITIZED	1
#else
#define NP_TEST_SANITIZED	0
#endif

/* A child that waits, doing nothing, until killed: a live process. */
static inline pid_t np_test_paused_child(void)
{
	pid_t pid = fork();

	if (pid == 0) {
		pause();
		_exit(0);
	}
	return pid;
}

static inline const char *np_case_name(const struct np_test_case *c)
{
	return strncmp(c->name, "test_", 5) ? c->name : c->name + 5;
}

static inline int np_case_is(const struct np_test_case *c, const char *name)
{
	return !strcmp(name, c->name) || !strcmp(name, np_case_name(c));
}

/*
 * Run the cases argv names (all when none), each reported with its
 * failures.  Returns main()'s status: 0 when every check held, 1 if one
 * failed, 2 for a name no case has.
 */
static inline int np_test_main(int argc, char **argv,
			       const struct np_test_case *cases)
{
	const char *prog = argc > 0 ? argv[0] : "test";
	const char *slash = strrchr(prog, '/');
	int ran = 0;

	prog = slash ? slash + 1 : prog;
	if (argc == 2 && !strcmp(argv[1], "--list")) {
		for (const struct np_test_case *c = cases; c->name; c++)
			printf("%s\n", np_case_name(c));
		return 0;
	}
	for (int i = 1; i < argc; i++) {
		const struct np_test_case *c = cases;

		while (c->name && !np_case_is(c, argv[i]))
			c++;
		if (!c->name) {
			fprintf(stderr, "%s: no case '%s' (--list lists them)\n",
				prog, argv[i]);
			return 2;
		}
	}
	for (const struct np_test_case *c = cases; c->name; c++) {
		int before = failures, want = argc < 2;

		for (int i = 1; i < argc && !want; i++)
			want = np_case_is(c, argv[i]);
		if (!want)
			continue;
		if (c->slow && NP_TEST_SANITIZED && argc < 2) {
			printf("skip %s: %s (slow under the sanitizers: name it to run it)\n",
			       prog, np_case_name(c));
			continue;
		}
		c->run();
		ran++;
		printf("%s %s: %s\n", failures == before ? "ok" : "FAIL", prog,
		       np_case_name(c));
		fflush(stdout);
	}
	if (failures)
		fprintf(stderr, "%s: %d failed check(s)\n", prog, failures);
	else
		printf("%s: %d case(s) ok\n", prog, ran);
	return failures != 0;
}

#endif /* NP_TEST_CHECK_H */
