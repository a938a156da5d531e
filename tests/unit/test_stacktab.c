// SPDX-License-Identifier: GPL-2.0
/* Stack table: interning, trie sharing, walk order, clear. */
#include <stdio.h>
#include <string.h>
#include "stacktab.h"

#include "check.h"

static void test_strings(void)
{
	struct np_stacktab *st = np_stacktab_new();
	uint32_t a = np_stacktab_str(st, "libc.so.6", 9);
	uint32_t b = np_stacktab_str(st, "libc.so.6", 9);
	uint32_t c = np_stacktab_str(st, "libc.so", 7);
	uint32_t e = np_stacktab_str(st, "", 0);

	CHECK(a != NP_ID_NONE && a == b && a != c && e != a && e != c);
	CHECK(!strcmp(np_stacktab_str_get(st, a), "libc.so.6"));
	CHECK(!strcmp(np_stacktab_str_get(st, c), "libc.so"));
	CHECK(!strcmp(np_stacktab_str_get(st, e), ""));
	CHECK(np_stacktab_str_get(st, 100000) == NULL);
	/* many strings: survive index growth and arena chunks */
	for (int i = 0; i < 50000; i++) {
		char s[32];
		int n = snprintf(s, sizeof(s), "sym_%d", i);

		CHECK(np_stacktab_str(st, s, n) == np_stacktab_str(st, s, n));
	}
	CHECK(!strcmp(np_stacktab_str_get(st, a), "libc.so.6"));
	np_stacktab_free(st);
}

static void test_frames_and_stacks(void)
{
	struct np_stacktab *st = np_stacktab_new();
	struct np_sym s1[] = {	/* innermost first */
		{ "[kernel.kallsyms]", "copy_page", 0x10, 1, NULL },
		{ "/usr/bin/app", "work", 0x20, 0, NULL },
		{ "/usr/bin/app", "main", 0x30, 0, NULL },
	};
	struct np_sym s2[] = {
		{ "/usr/bin/app", NULL, 0x1234, 0, NULL },	/* unnamed frame */
		{ "/usr/bin/app", "work", 0x20, 0, NULL },
		{ "/usr/bin/app", "main", 0x30, 0, NULL },
	};
	struct np_sym kuser = { "/usr/bin/app", "work", 0x20, 1, NULL };
	const struct np_sym *out[8];
	uint32_t a, b, a2, nodes;
	unsigned int n;

	a = np_stacktab_stack(st, s1, 3);
	nodes = np_stacktab_nr_nodes(st);
	b = np_stacktab_stack(st, s2, 3);
	a2 = np_stacktab_stack(st, s1, 3);
	CHECK(a == a2 && a != b);
	/* s2 shares main->work with s1: only one new node */
	CHECK(np_stacktab_nr_nodes(st) == nodes + 1);
	CHECK(np_stacktab_depth(st, a) == 3);
	n = np_stacktab_walk(st, a, out, 8);
	CHECK(n == 3);
	CHECK(!strcmp(out[0]->name, "copy_page") && out[0]->kernel == 1);
	CHECK(!strcmp(out[2]->name, "main") && out[2]->offset == 0x30);
	n = np_stacktab_walk(st, b, out, 8);
	CHECK(n == 3 && out[0]->name == NULL && out[0]->offset == 0x1234);
	CHECK(np_stacktab_walk(st, a, out, 2) == 2);
	/* kernel flag is part of the frame identity */
	CHECK(np_stacktab_frame(st, &kuser) != np_stacktab_frame(st, &s1[1]));
	/* NULL dso reads as [unknown] */
	{
		struct np_sym u = { NULL, NULL, 5, 0, NULL };
		uint32_t f = np_stacktab_frame(st, &u);

		CHECK(!strcmp(np_stacktab_frame_get(st, f)->dso, "[unknown]"));
	}
	CHECK(np_stacktab_stack(st, s1, 0) == NP_STACK_EMPTY);
	CHECK(np_stacktab_depth(st, NP_STACK_EMPTY) == 0);
	/* bad ids are refused, not followed */
	CHECK(np_stacktab_child(st, 999999, 0) == NP_ID_NONE);
	CHECK(np_stacktab_child(st, 0, 999999) == NP_ID_NONE);
	CHECK(np_stacktab_walk(st, 999999, out, 8) == 0);

	np_stacktab_clear(st);
	CHECK(np_stacktab_nr_nodes(st) == 1 && np_stacktab_nr_frames(st) == 0);
	a = np_stacktab_stack(st, s1, 3);
	n = np_stacktab_walk(st, a, out, 8);
	CHECK(n == 3 && !strcmp(out[1]->name, "work"));
	np_stacktab_free(st);
}

static void test_many(void)
{
	struct np_stacktab *st = np_stacktab_new();
	uint32_t ids[2000];

	/* 2000 stacks of depth 20 over a shared 10-frame prefix */
	for (int round = 0; round < 2; round++)
		for (int i = 0; i < 2000; i++) {
			struct np_sym f[20];
			char names[20][16];

			for (int d = 0; d < 20; d++) {
				snprintf(names[d], sizeof(names[d]), "f%d",
					 d >= 10 ? i * 31 + d : d);
				f[19 - d] = (struct np_sym){ "/bin/x", names[d],
							     (uint64_t)d, 0, NULL };
			}
			if (!round)
				ids[i] = np_stacktab_stack(st, f, 20);
			else
				CHECK(ids[i] == np_stacktab_stack(st, f, 20));
		}
	CHECK(np_stacktab_nr_nodes(st) == 1 + 10 + 2000 * 10);
	np_stacktab_free(st);
}

static uint64_t rnd(uint64_t *x)
{
	*x ^= *x << 13;
	*x ^= *x >> 7;
	*x ^= *x << 17;
	return *x;
}

/*
 * The trie against a naive model: (parent, frame) of every node, found
 * by linear search.  Mostly runs that extend the newest node (chain
 * nodes, stored without a parent), sometimes a child of any node
 * (branch nodes), and repeats of existing edges, which must find them.
 */
#define MODEL_N 6000
static uint32_t m_parent[MODEL_N], m_frame[MODEL_N];

static uint32_t model_child(uint32_t *n, uint32_t parent, uint32_t frame)
{
	for (uint32_t i = 1; i < *n; i++)
		if (m_parent[i] == parent && m_frame[i] == frame)
			return i;
	m_parent[*n] = parent;
	m_frame[*n] = frame;
	return (*n)++;
}

static void test_trie_model(void)
{
	struct np_stacktab *st = np_stacktab_new();
	uint64_t x = 88172645463325252ULL;
	uint32_t n, cur = 0, p, f;
	int bad = 0;

	for (int round = 0; round < 2; round++) {
		n = 1;
		for (int i = 0; i < 8; i++) {
			struct np_sym s = { "/bin/x", NULL, (uint64_t)i, 0, NULL };

			CHECK(np_stacktab_frame(st, &s) == (uint32_t)i);
		}
		while (n < MODEL_N - 1) {
			uint64_t r = rnd(&x);
			uint32_t parent = r % 4 == 0 ? (uint32_t)(r >> 8) % n
				        : r % 4 == 1 ? 0 : cur;
			uint32_t frame = (uint32_t)(r >> 40) % 8;
			uint32_t want = model_child(&n, parent, frame);

			cur = np_stacktab_child(st, parent, frame);
			if (cur != want)
				bad++;
			cur = want;
		}
		CHECK(!bad);
		CHECK(np_stacktab_nr_nodes(st) == n);
		for (uint32_t i = 1; i < n; i++) {
			unsigned int d = 0;

			if (np_stacktab_node(st, i, &p, &f) ||
			    p != m_parent[i] || f != m_frame[i])
				bad++;
			/* every existing edge is found again, not recreated */
			if (np_stacktab_child(st, m_parent[i], m_frame[i]) != i)
				bad++;
			for (p = i; p; p = m_parent[p])
				d++;
			if (np_stacktab_depth(st, i) != d)
				bad++;
		}
		CHECK(np_stacktab_nr_nodes(st) == n);
		CHECK(!bad);
		np_stacktab_clear(st);
	}

	/*
	 * Long distinct tails, as 100k real stacks that part ways early:
	 * a node must cost well under the 8-byte (parent, frame) pair plus
	 * a >= 5.3-byte index slot that a plain trie pays, even with the
	 * arrays' doubling slack.
	 */
	np_stacktab_clear(st);
	for (int i = 0; i < 8; i++) {
		struct np_sym s = { "/bin/x", NULL, (uint64_t)i, 0, NULL };

		np_stacktab_frame(st, &s);
	}
	for (int s = 0; s < 20000; s++) {
		uint32_t node = np_stacktab_child(st, 0, (uint32_t)s % 8);

		for (int d = 0; d < 12; d++)
			node = np_stacktab_child(st, node,
						 (uint32_t)(rnd(&x) % 8));
	}
	n = np_stacktab_nr_nodes(st);
	CHECK(n > 150000);
	CHECK(np_stacktab_mem(st) < (size_t)n * 10);
	if (np_stacktab_mem(st) >= (size_t)n * 10)
		fprintf(stderr, "%zu bytes for %u nodes\n", np_stacktab_mem(st), n);
	np_stacktab_free(st);
}

/* A build-id is the object's: every frame of the dso carries it. */
static void test_build_ids(void)
{
	struct np_stacktab *st = np_stacktab_new();
	struct np_sym a = { "/lib/libc.so.6", "memcpy", 0x10, 0, "aa01" };
	struct np_sym b = { "/lib/libc.so.6", "write", 0x20, 0, NULL };
	struct np_sym k = { "[kernel.kallsyms]", "schedule", 0x30, 1, NULL };
	uint32_t fa, fb, fk, dso, bid;

	fb = np_stacktab_frame(st, &b);		/* seen before the build-id */
	CHECK(np_stacktab_frame_get(st, fb)->build_id == NULL);
	fa = np_stacktab_frame(st, &a);
	fk = np_stacktab_frame(st, &k);
	CHECK(!strcmp(np_stacktab_frame_get(st, fa)->build_id, "aa01"));
	CHECK(!strcmp(np_stacktab_frame_get(st, fb)->build_id, "aa01"));
	CHECK(np_stacktab_frame_get(st, fk)->build_id == NULL);
	/* the same object again: the same string, no new one */
	bid = np_stacktab_nr_strs(st);
	CHECK(np_stacktab_frame(st, &a) == fa && np_stacktab_nr_strs(st) == bid);
	/* replaced at the same path: the latest wins, for every frame */
	a.build_id = "bb02";
	CHECK(np_stacktab_frame(st, &a) == fa);
	CHECK(!strcmp(np_stacktab_frame_get(st, fb)->build_id, "bb02"));
	np_stacktab_frame_strs(st, fa, &dso, &bid);
	bid = np_stacktab_build_id(st, dso);
	CHECK(bid != NP_ID_NONE && !strcmp(np_stacktab_str_get(st, bid), "bb02"));
	/* set by id (readers): frames follow after the sync */
	CHECK(np_stacktab_set_build_id(st, dso, NP_ID_NONE) == 0);
	np_stacktab_sync_build_ids(st);
	CHECK(np_stacktab_frame_get(st, fa)->build_id == NULL);
	CHECK(np_stacktab_set_build_id(st, 100000, bid) == -1);
	np_stacktab_clear(st);
	fb = np_stacktab_frame(st, &b);
	CHECK(np_stacktab_frame_get(st, fb)->build_id == NULL);
	np_stacktab_free(st);
}

static const struct np_test_case cases[] = {
	NP_CASE(test_trie_model),
	NP_CASE(test_strings),
	NP_CASE(test_frames_and_stacks),
	NP_CASE(test_many),
	NP_CASE(test_build_ids),
	{ 0 }
};

int main(int argc, char **argv)
{
	return np_test_main(argc, argv, cases);
}
