/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Shared by the store tests and benchmarks: a deterministic synthetic
 * sample stream, a fake symbolizer, and a canonical text form of a merged
 * profile for exact comparisons.
 */
#ifndef TEST_STORE_UTIL_H
#define TEST_STORE_UTIL_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "agg.h"
#include "store.h"

#include "check.h"

static inline uint64_t rng_next(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

/* "function" of an address: 64-byte granules named fn_<n> */
static inline int util_sym(void *arg, uint32_t pid, uint64_t addr, int kernel,
		    struct np_sym *out)
{
	static char name[40];

	(void)arg;
	snprintf(name, sizeof(name), "%s_%llx", kernel ? "k" : "fn",
		 (unsigned long long)(addr >> 6));
	out->dso = kernel ? "[kernel.kallsyms]" :
		   (addr >> 24) & 1 ? "/usr/lib/x86_64-linux-gnu/libc.so.6"
				    : "/usr/bin/app";
	out->name = name;
	out->offset = addr & 63;
	out->kernel = kernel;
	return 0;
}

static inline struct np_agg *util_agg(void)
{
	struct np_agg_opts o;

	np_agg_opts_init(&o);
	o.symbolize = util_sym;
	return np_agg_new(&o);
}

/*
 * Feed slice `slice`: n samples over `pool` distinct raw stacks shared by
 * every slice, plus one stack unique to the slice, so each slice is
 * recognisable after a merge.
 */
static inline void util_slice(struct np_agg *a, uint32_t slice, uint32_t n,
		       uint32_t pool)
{
	uint64_t seed = 0x1234 + slice * 7919ULL;
	uint64_t k[24], u[24];

	for (uint32_t i = 0; i < n; i++) {
		struct np_ev_sample s = { 0 };
		uint32_t id = i == 0 ? 1000000 + slice :
			      (uint32_t)(rng_next(&seed) % pool);
		uint64_t st = id * 0x9e3779b97f4a7c15ULL;
		int nk = 3 + id % 8, nu = 4 + id % 12;

		for (int j = 0; j < nk; j++)
			k[j] = 0xffffffff81000000ULL + ((st >> (j % 32)) & 0xfff) * 64 + j;
		for (int j = 0; j < nu; j++)
			u[j] = 0x400000ULL + ((j < 4 ? st >> (j * 5) : (uint64_t)j) & 0xffff) * 64 +
			       ((id & 1) << 24);
		s.pid = 100 + id % 7;
		s.tid = s.pid;
		s.cpu = id % 4;
		snprintf(s.comm, sizeof(s.comm), "proc%u", id % 7);
		s.kframes = k;
		s.nr_kframes = nk;
		s.uframes = u;
		s.nr_uframes = nu;
		s.time_ns = i;
		np_agg_sample(a, &s);
	}
}

struct canon {
	char **v;
	size_t n, cap;
};

static inline int canon_add(const struct np_prof_sample *s, void *arg)
{
	struct canon *c = arg;
	char buf[8192];
	int len = snprintf(buf, sizeof(buf), "%u|%u|%s|", s->pid, s->cpu, s->comm);

	for (unsigned int i = 0; i < s->nr_frames && len < 8000; i++)
		len += snprintf(buf + len, sizeof(buf) - len, "%s:%s+%llx%s;",
				s->frames[i]->dso,
				s->frames[i]->name ? s->frames[i]->name : "?",
				(unsigned long long)s->frames[i]->offset,
				s->frames[i]->kernel ? "k" : "");
	snprintf(buf + len, sizeof(buf) - len, "|%llu",
		 (unsigned long long)s->count);
	if (c->n == c->cap) {
		c->cap = c->cap ? c->cap * 2 : 256;
		c->v = realloc(c->v, c->cap * sizeof(*c->v));
	}
	c->v[c->n++] = strdup(buf);
	return 0;
}

static inline int canon_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Canonical text of a merged profile: sorted tuples, one per line. */
static inline char *util_canon(const struct np_agg *a)
{
	struct canon c = { 0 };
	size_t len = 1, off = 0;
	char *out;

	np_profile_foreach(a, canon_add, &c);
	qsort(c.v, c.n, sizeof(*c.v), canon_cmp);
	for (size_t i = 0; i < c.n; i++)
		len += strlen(c.v[i]) + 1;
	out = malloc(len);
	out[0] = '\0';
	for (size_t i = 0; i < c.n; i++) {
		off += sprintf(out + off, "%s\n", c.v[i]);
		free(c.v[i]);
	}
	free(c.v);
	return out;
}

struct warns {
	int n;
	char last[512];
};

static inline void util_warn(void *arg, const char *msg)
{
	struct warns *w = arg;

	w->n++;
	snprintf(w->last, sizeof(w->last), "%s", msg);
	if (getenv("TEST_VERBOSE"))
		fprintf(stderr, "warn: %s\n", msg);
}

#endif /* TEST_STORE_UTIL_H */
