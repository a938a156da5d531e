// SPDX-License-Identifier: GPL-2.0
/*
 * Symbol tables for the symbolizer: a sorted array searched by address.
 */
#include <stdlib.h>
#include <string.h>
#include "np_symtab.h"

/* A symbol while its table is being built. */
struct np_symbuild {
	struct {
		uint64_t start, end;	/* end 0: size-less */
		const char *name, *dso;
	} d;
	int prio;		/* on equal start the highest wins (GLOBAL > WEAK > LOCAL) */
	uint64_t limit;		/* a size-less symbol ends here at the latest (0: none) */
};

int np_symtab_add(struct np_symtab *t, uint64_t start, uint64_t size,
		  const char *name, const char *dso, int prio)
{
	if (t->v) {
		/* finished: add to a copy of what it holds */
		struct np_symdef *v = t->v;
		size_t n = t->nr;

		t->v = NULL;
		t->nr = 0;
		for (size_t i = 0; i < n; i++)
			if (np_symtab_add(t, v[i].start, v[i].size, v[i].name,
					  np_symtab_dso(t, &v[i]), 0) < 0) {
				free(v);
				return -1;
			}
		free(v);
		free(t->dsos);
		free(t->bids);
		t->dsos = NULL;
		t->bids = NULL;
		t->nr_dsos = 0;
	}
	if (t->nr == t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 256;
		struct np_symbuild *b = realloc(t->b, cap * sizeof(*b));

		if (!b)
			return -1;
		t->b = b;
		t->cap = cap;
	}
	t->b[t->nr++] = (struct np_symbuild){
		.d = { .start = start, .end = size ? start + size : 0,
		       .name = name, .dso = dso },
		.prio = prio,
	};
	return 0;
}

void np_symtab_limit_last(struct np_symtab *t, uint64_t limit)
{
	if (t->b && t->nr && !t->b[t->nr - 1].d.end)
		t->b[t->nr - 1].limit = limit;
}

static int cmp_sym(const void *a, const void *b)
{
	const struct np_symbuild *x = a, *y = b;

	if (x->d.start != y->d.start)
		return x->d.start < y->d.start ? -1 : 1;
	if (x->prio != y->prio)
		return y->prio - x->prio;
	/* sized before size-less, then by name for a stable choice */
	if ((x->d.end != 0) != (y->d.end != 0))
		return x->d.end ? -1 : 1;
	return strcmp(x->d.name, y->d.name);
}

/* The index of dso in t->dsos, added if new (a table has one, or a few). */
static uint32_t symtab_dso_id(struct np_symtab *t, const char *dso)
{
	const char **v;
	uint32_t i;

	for (i = t->nr_dsos; i--;)	/* the last one is the likeliest */
		if (t->dsos[i] == dso)
			return i;
	v = realloc(t->dsos, (t->nr_dsos + 1) * sizeof(*v));
	if (!v)
		return UINT32_MAX;	/* reads as no dso */
	t->dsos = v;
	t->dsos[t->nr_dsos] = dso;
	return t->nr_dsos++;
}

/* A symbol's place in the sort: its start, its index in the build array. */
struct sym_key {
	uint64_t start;
	size_t i;
};

#define RADIX_BITS	11

/*
 * Sort b[0..n) as a stable qsort() by cmp_sym() would: the keys by start
 * with a stable radix sort (11 bits a pass, as many passes as the largest
 * start needs), then each run of one start by cmp_sym(), stably.
 * qsort() moving the 48-byte build entries through a comparison by
 * pointer took 3.1 M of the 5.6 M instructions libc's .dynsym costs to
 * load (callgrind), in a recorder meeting libc while its job runs.  NULL
 * when out of memory.
 */
static struct np_symbuild *sort_syms(const struct np_symbuild *b, size_t n)
{
	struct sym_key *k = malloc(2 * n * sizeof(*k)), *src, *dst, *x;
	struct np_symbuild *out = malloc(n * sizeof(*out));
	size_t cnt[1U << RADIX_BITS];
	uint64_t max = 0;
	size_t i, j;

	if (!k || !out) {
		free(k);
		free(out);
		return NULL;
	}
	for (i = 0; i < n; i++) {
		k[i] = (struct sym_key){ .start = b[i].d.start, .i = i };
		max |= b[i].d.start;
	}
	src = k;
	dst = k + n;
	for (unsigned int sh = 0; sh < 64 && max >> sh; sh += RADIX_BITS) {
		const size_t mask = (1U << RADIX_BITS) - 1;
		size_t sum = 0;

		memset(cnt, 0, sizeof(cnt));
		for (i = 0; i < n; i++)
			cnt[src[i].start >> sh & mask]++;
		for (j = 0; j <= mask; j++) {
			size_t c = cnt[j];

			cnt[j] = sum;
			sum += c;
		}
		for (i = 0; i < n; i++)
			dst[cnt[src[i].start >> sh & mask]++] = src[i];
		x = src;
		src = dst;
		dst = x;
	}
	for (i = 0; i < n; i++)
		out[i] = b[src[i].i];
	free(k);
	/* runs of one start (aliases), in their order of addition: insertion */
	for (i = 1; i < n; i++) {
		struct np_symbuild v;

		if (out[i].d.start != out[i - 1].d.start ||
		    cmp_sym(&out[i - 1], &out[i]) <= 0)
			continue;
		v = out[i];
		for (j = i; j > 0 && out[j - 1].d.start == v.d.start &&
		     cmp_sym(&out[j - 1], &v) > 0; j--)
			out[j] = out[j - 1];
		out[j] = v;
	}
	return out;
}

void np_symtab_finish(struct np_symtab *t)
{
	struct np_symbuild *b = t->b, *sorted;
	size_t i, n = 0;

	if (!b)
		return;		/* nothing added since the last finish */
	sorted = t->nr > 1 ? sort_syms(b, t->nr) : NULL;
	if (sorted) {
		free(b);
		b = t->b = sorted;
	} else {
		qsort(b, t->nr, sizeof(*b), cmp_sym);
	}
	for (i = 0; i < t->nr; i++) {
		if (n && b[n - 1].d.start == b[i].d.start)
			continue;	/* an alias of the preferred name */
		b[n++] = b[i];
	}
	for (i = 0; i < n; i++) {
		uint64_t next = i + 1 < n ? b[i + 1].d.start : b[i].d.start + 4096;

		if (!b[i].d.end || b[i].d.end <= b[i].d.start)
			b[i].d.end = next;
		/* e.g. _init must not swallow the .plt that follows it */
		if (b[i].limit > b[i].d.start && b[i].d.end > b[i].limit)
			b[i].d.end = b[i].limit;
	}
	/* The build array is twice the size and up to twice the count:
	 * keep just the symbols.  On ENOMEM, keep the table empty. */
	t->v = n ? malloc(n * sizeof(*t->v)) : NULL;
	t->nr = t->v ? n : 0;
	for (i = 0; i < t->nr; i++) {
		uint64_t size = b[i].d.end - b[i].d.start;

		t->v[i] = (struct np_symdef){
			.start = b[i].d.start, .name = b[i].d.name,
			.size = size > UINT32_MAX ? UINT32_MAX : (uint32_t)size,
			.dso = symtab_dso_id(t, b[i].d.dso),
		};
	}
	free(b);
	t->b = NULL;
	t->cap = 0;
}

const struct np_symdef *np_symtab_find(const struct np_symtab *t, uint64_t addr)
{
	size_t lo = 0, hi = t->v ? t->nr : 0;

	/* last symbol with start <= addr */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (t->v[mid].start <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo)
		return NULL;
	return addr - t->v[lo - 1].start < t->v[lo - 1].size ? &t->v[lo - 1] : NULL;
}

size_t np_symtab_mem(const struct np_symtab *t)
{
	return t->nr * (t->v ? sizeof(*t->v) : 0) + t->cap * sizeof(*t->b) +
	       t->nr_dsos * (sizeof(*t->dsos) + (t->bids ? sizeof(*t->bids) : 0));
}

void np_symtab_free(struct np_symtab *t)
{
	free(t->v);
	free(t->b);
	free(t->dsos);
	free(t->bids);
	memset(t, 0, sizeof(*t));
}
