// SPDX-License-Identifier: GPL-2.0
/* Unit tests for lib/topview: self/children math, sort, filters, decay. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "topview.h"

#include "check.h"

#define CHECK_NEAR(a, b) CHECK(fabs((a) - (b)) < 1e-9)

static const struct np_frame A = { "/bin/app", "a", 0, NULL };
static const struct np_frame B = { "/bin/app", "b", 0, NULL };
static const struct np_frame C = { "/bin/app", "main", 0, NULL };
static const struct np_frame K1 = { "[kernel.kallsyms]", "do_syscall_64", 1, NULL };
static const struct np_frame K0 = { "[kernel.kallsyms]", "copy_page", 1, NULL };

static void add(struct topview *tv, uint32_t cpu, uint32_t pid, const char *comm,
		double w, int n, ...)
{
	struct np_frame f[16];
	struct topview_sample s = { cpu, pid, comm, f, (unsigned)n, w, 0 };
	va_list ap;

	va_start(ap, n);
	for (int i = 0; i < n; i++)
		f[i] = *va_arg(ap, const struct np_frame *);
	va_end(ap);
	CHECK(topview_add(tv, &s) == 0);
}

static const struct topview_row *find(struct topview *tv, const char *sym, uint32_t pid)
{
	for (size_t i = 0; i < topview_nr_rows(tv); i++) {
		const struct topview_row *r = topview_row(tv, i);

		if (!strcmp(r->sym, sym) && r->pid == pid)
			return r;
	}
	return NULL;
}

/* Rows per process, as the cases below were written for. */
static struct topview *by_pid(void)
{
	struct topview *tv = topview_new();
	enum topview_sort o = TOPVIEW_SORT_SELF;
	struct topview_keys k;
	const char *bad;

	if (tv && !topview_keys_parse("comm,pid,dso,sym", &k, &o, &bad))
		topview_set_keys(tv, &k);
	return tv;
}

static struct topview *fixture(void)
{
	struct topview *tv = by_pid();

	/* innermost first: a called by b called by main */
	add(tv, 0, 100, "app", 3, 3, &A, &B, &C);
	add(tv, 1, 100, "app", 1, 2, &B, &C);
	add(tv, 1, 100, "app", 1, 3, &A, &A, &C);		/* recursion */
	add(tv, 0, 200, "other", 2, 4, &K0, &K1, &A, &C);	/* syscall from a */
	return tv;
}

static void test_self_children(void)
{
	struct topview *tv = fixture();
	const struct topview_row *r;

	CHECK_NEAR(topview_total(tv), 7);
	CHECK(topview_sort(tv, TOPVIEW_SORT_SELF) == 7);
	r = find(tv, "a", 100);
	CHECK(r && fabs(r->self - 4) < 1e-9 && fabs(r->children - 4) < 1e-9);
	r = find(tv, "b", 100);
	CHECK(r && fabs(r->self - 1) < 1e-9 && fabs(r->children - 4) < 1e-9);
	r = find(tv, "main", 100);
	CHECK(r && r->self == 0 && fabs(r->children - 5) < 1e-9);
	r = find(tv, "copy_page", 200);
	CHECK(r && r->kernel && fabs(r->self - 2) < 1e-9);
	r = find(tv, "a", 200);
	CHECK(r && r->self == 0 && fabs(r->children - 2) < 1e-9 && !r->kernel);
	topview_free(tv);
}

static void test_sort(void)
{
	struct topview *tv = fixture();
	const struct topview_row *r;

	topview_sort(tv, TOPVIEW_SORT_SELF);
	CHECK(!strcmp(topview_row(tv, 0)->sym, "a"));
	CHECK(!strcmp(topview_row(tv, 1)->sym, "copy_page"));
	topview_sort(tv, TOPVIEW_SORT_CHILDREN);
	CHECK(!strcmp(topview_row(tv, 0)->sym, "main"));
	topview_sort(tv, TOPVIEW_SORT_SYMBOL);
	CHECK(!strcmp(topview_row(tv, 0)->sym, "a"));
	CHECK(!strcmp(topview_row(tv, 6)->sym, "main"));
	/* equal symbol "a": ties break on self, so pid 100 first */
	CHECK(topview_row(tv, 0)->pid == 100 && topview_row(tv, 1)->pid == 200);
	topview_sort(tv, TOPVIEW_SORT_COMM);
	CHECK(!strcmp(topview_row(tv, 0)->comm, "app"));
	CHECK(!strcmp(topview_row(tv, 6)->comm, "other"));
	topview_sort(tv, TOPVIEW_SORT_DSO);
	r = topview_row(tv, 0);
	CHECK(!strcmp(r->dso, "/bin/app") && !strcmp(r->sym, "a"));
	CHECK(!strcmp(topview_row(tv, 6)->dso, "[kernel.kallsyms]"));
	CHECK(topview_sort_parse("children") == TOPVIEW_SORT_CHILDREN);
	CHECK(topview_sort_parse("sym") == TOPVIEW_SORT_SYMBOL);
	CHECK(topview_sort_parse("bogus") == -1);
	topview_free(tv);
}

static void test_filters(void)
{
	struct topview *tv = fixture();
	struct topview_filter f;
	const struct topview_row *r;

	topview_filter_init(&f);
	f.user = 0;			/* kernel frames only */
	CHECK(topview_set_filter(tv, &f) == 0);
	CHECK_NEAR(topview_total(tv), 2);
	CHECK(topview_sort(tv, TOPVIEW_SORT_SELF) == 2);

	topview_filter_init(&f);
	f.kernel = 0;			/* user only: pid 200's a becomes self */
	topview_set_filter(tv, &f);
	topview_sort(tv, TOPVIEW_SORT_SELF);
	r = find(tv, "a", 200);
	CHECK(r && fabs(r->self - 2) < 1e-9);
	CHECK(!find(tv, "copy_page", 200));

	topview_filter_init(&f);
	f.cpu = 1;
	topview_set_filter(tv, &f);
	CHECK_NEAR(topview_total(tv), 2);
	topview_sort(tv, TOPVIEW_SORT_SELF);
	r = find(tv, "b", 100);
	CHECK(r && fabs(r->self - 1) < 1e-9);

	topview_filter_init(&f);
	f.pid = 200;
	topview_set_filter(tv, &f);
	CHECK_NEAR(topview_total(tv), 2);

	topview_filter_init(&f);
	strcpy(f.comm, "app");
	topview_set_filter(tv, &f);
	CHECK_NEAR(topview_total(tv), 5);
	/* a comm seen only after the filter was set */
	strcpy(f.comm, "late");
	topview_set_filter(tv, &f);
	CHECK_NEAR(topview_total(tv), 0);
	add(tv, 0, 300, "late", 1, 1, &B);
	CHECK_NEAR(topview_total(tv), 1);
	CHECK_NEAR(topview_total_raw(tv), 8);

	topview_filter_init(&f);
	strcpy(f.search, "ma");
	topview_set_filter(tv, &f);
	CHECK(topview_sort(tv, TOPVIEW_SORT_SELF) == 2);	/* main x2 pids */
	CHECK_NEAR(topview_total(tv), 8);
	topview_free(tv);
}

static void test_decay_zero(void)
{
	struct topview *tv = fixture();
	const struct topview_row *r;

	topview_decay(tv, 0.5);
	CHECK_NEAR(topview_total(tv), 3.5);
	topview_sort(tv, TOPVIEW_SORT_SELF);
	r = find(tv, "a", 100);
	CHECK(r && fabs(r->self - 2) < 1e-9 && fabs(r->children - 2) < 1e-9);
	/* decayed to dust: rows disappear from the view */
	for (int i = 0; i < 20; i++)
		topview_decay(tv, 0.5);
	CHECK(topview_sort(tv, TOPVIEW_SORT_SELF) == 0);
	add(tv, 0, 100, "app", 1, 1, &A);
	CHECK(topview_sort(tv, TOPVIEW_SORT_SELF) == 1);
	topview_zero(tv);
	CHECK(topview_total(tv) == 0);
	CHECK(topview_sort(tv, TOPVIEW_SORT_SELF) == 0);
	add(tv, 0, 100, "app", 1, 2, &A, &B);
	CHECK(topview_sort(tv, TOPVIEW_SORT_SELF) == 2);
	topview_free(tv);

	/* pruning path: many buckets decaying to dust get compacted */
	tv = by_pid();
	for (int i = 0; i < 5000; i++) {
		char name[32];
		struct np_frame f = { "/x", name, 0, NULL };
		struct topview_sample s = { 0, (uint32_t)i, "p", &f, 1, 1, 0 };

		snprintf(name, sizeof(name), "f%d", i);
		topview_add(tv, &s);
	}
	for (int i = 0; i < 30; i++)
		topview_decay(tv, 7.0 / 8);
	add(tv, 0, 1, "p", 1, 1, &A);
	CHECK(topview_sort(tv, TOPVIEW_SORT_SELF) == 1);
	CHECK(topview_total_raw(tv) < 1 + 5000 * 0.05);
	topview_free(tv);
}

static void test_callgraph(void)
{
	struct topview *tv = fixture();
	struct topview_edge e[8];
	size_t n;

	topview_sort(tv, TOPVIEW_SORT_SELF);
	n = topview_callers(tv, find(tv, "a", 100), e, 8);
	CHECK(n == 3);	/* b (3), a (recursion, 1), main (1) */
	CHECK(n >= 1 && !strcmp(e[0].row->sym, "b") && fabs(e[0].weight - 3) < 1e-9);
	n = topview_callees(tv, find(tv, "main", 100), e, 8);
	CHECK(n == 2);
	CHECK(n == 2 && !strcmp(e[0].row->sym, "b") && fabs(e[0].weight - 4) < 1e-9);
	CHECK(n == 2 && !strcmp(e[1].row->sym, "a") && fabs(e[1].weight - 1) < 1e-9);
	CHECK(topview_callers(tv, find(tv, "main", 100), e, 8) == 0);
	CHECK(topview_callees(tv, find(tv, "main", 100), e, 1) == 1);
	topview_free(tv);
}

struct stacks_seen {
	int n;
	double w;
	char first[128];
};

static int count_stack(const struct np_frame *f, unsigned nr, uint32_t pid,
		       const char *comm, double w, void *arg)
{
	struct stacks_seen *s = arg;

	if (!s->n)
		snprintf(s->first, sizeof(s->first), "%s:%u:%s:%u", comm, pid,
			 f[0].sym, nr);
	s->n++;
	s->w += w;
	return 0;
}

static void test_foreach(void)
{
	struct topview *tv = fixture();
	struct stacks_seen s = { 0 };
	struct topview_filter f;

	CHECK(topview_foreach_stack(tv, count_stack, &s) == 0);
	CHECK(s.n == 4 && fabs(s.w - 7) < 1e-9);
	CHECK(!strcmp(s.first, "app:100:a:3"));
	topview_filter_init(&f);
	f.user = 0;
	topview_set_filter(tv, &f);
	memset(&s, 0, sizeof(s));
	topview_foreach_stack(tv, count_stack, &s);
	CHECK(s.n == 1 && !strcmp(s.first, "other:200:copy_page:2"));
	topview_free(tv);
}

/*
 * perf's sort model (issue 15): rows are the groups of the keys.  Before,
 * rows were always per (pid, comm, symbol): 300 runs of one command were
 * 300 rows of a third of a percent each.
 */
static void test_keys(void)
{
	struct topview *tv = topview_new();	/* default comm,dso,sym */
	enum topview_sort o = TOPVIEW_SORT_SELF;
	struct topview_keys k;
	const char *bad = NULL;
	const struct topview_row *r;

	for (uint32_t pid = 1000; pid < 1300; pid++)
		add(tv, pid % 2, pid, "gzip", 1, 2, &A, &C);
	add(tv, 0, 7, "sh", 1, 2, &K0, &B);
	CHECK(topview_sort(tv, TOPVIEW_SORT_SELF) == 4);
	r = topview_row(tv, 0);
	CHECK(r && !strcmp(r->sym, "a") && !strcmp(r->comm, "gzip") &&
	      fabs(r->self - 300) < 1e-9 && r->pid == 0);

	CHECK(!topview_keys_parse("dso", &k, &o, &bad));
	CHECK(!topview_set_keys(tv, &k));
	CHECK(topview_sort(tv, TOPVIEW_SORT_SELF) == 2);
	r = topview_row(tv, 0);
	/* every frame of a sample in /bin/app: children counted once */
	CHECK(r && !strcmp(r->dso, "/bin/app") && fabs(r->self - 300) < 1e-9 &&
	      fabs(r->children - 301) < 1e-9 && !r->sym[0] && !r->comm[0]);

	CHECK(!topview_keys_parse("cpu,children", &k, &o, &bad));
	CHECK(o == TOPVIEW_SORT_CHILDREN && k.nr == 1 && k.key[0] == TOPVIEW_KEY_CPU);
	CHECK(!topview_set_keys(tv, &k));
	CHECK(topview_sort(tv, o) == 2);
	CHECK(topview_row(tv, 0)->cpu == 0 && fabs(topview_row(tv, 0)->self - 151) < 1e-9);

	CHECK(topview_keys_parse("comm,bogus", &k, &o, &bad) && !strcmp(bad, "bogus"));
	CHECK(!topview_keys_parse("self", &k, &o, &bad) && k.nr == 3 &&
	      o == TOPVIEW_SORT_SELF);
	topview_free(tv);
}

/* Rows a server summed: sorted like the others, the shown total given. */
static void test_add_row(void)
{
	struct topview *tv = topview_new();
	struct topview_row r1 = { .self = 2, .children = 9, .comm = "sh",
				  .dso = "/bin/sh", .sym = "b" };
	struct topview_row r2 = { .self = 5, .children = 5, .comm = "sh",
				  .dso = "[kernel.kallsyms]", .sym = "k", .kernel = 1 };
	struct topview_row r3 = r1;
	char name[] = "a";

	r3.sym = name;		/* a tie with r1 but for the name */
	CHECK(!topview_add_row(tv, &r1) && !topview_add_row(tv, &r2) &&
	      !topview_add_row(tv, &r3));
	name[0] = 'z';		/* copied */
	topview_add_shown(tv, 20);
	CHECK_NEAR(topview_total(tv), 20);
	CHECK(topview_sort(tv, TOPVIEW_SORT_SELF) == 3);
	CHECK(!strcmp(topview_row(tv, 0)->sym, "k") && topview_row(tv, 0)->kernel);
	CHECK(!strcmp(topview_row(tv, 1)->sym, "a") && !strcmp(topview_row(tv, 2)->sym, "b"));
	CHECK(topview_sort(tv, TOPVIEW_SORT_CHILDREN) == 3);
	CHECK(!strcmp(topview_row(tv, 0)->sym, "a") && !strcmp(topview_row(tv, 2)->sym, "k"));
	CHECK(!strcmp(topview_row(tv, 0)->comm, "sh") && fabs(topview_row(tv, 0)->children - 9) < 1e-9);
	topview_free(tv);
}

static const struct np_test_case cases[] = {
	NP_CASE(test_keys),
	NP_CASE(test_add_row),
	NP_CASE(test_self_children),
	NP_CASE(test_sort),
	NP_CASE(test_filters),
	NP_CASE(test_decay_zero),
	NP_CASE(test_callgraph),
	NP_CASE(test_foreach),
	{ 0 }
};

int main(int argc, char **argv)
{
	return np_test_main(argc, argv, cases);
}
