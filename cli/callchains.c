// SPDX-License-Identifier: GPL-2.0
/*
 * Call chains for `report --chains`: for each printed row, the distinct paths
 * from its function up to the root over which its self samples arrived,
 * heaviest first, as perf report's caller graph shows them.
 *
 * One walk over the stacks: the model says which row a stack's innermost
 * frame falls in (topview_foreach_row_stack); printed rows are found by
 * the row's address.  A row wider than a symbol (--sort dso, comm, ...)
 * shows the chains from the sampled function on, as perf's do.
 */
#include <stdlib.h>
#include <string.h>

#include "cli.h"

#define CHAIN_MAX_DISTINCT	64	/* per row; the rest are summed */
#define CHAIN_MAX_DEPTH		12	/* frames shown per chain */

struct chain {
	char *text;
	double w;
};

struct row_chains {
	const struct topview_row *row;
	struct chain *c;
	size_t nr;
	double other;		/* weight of chains past CHAIN_MAX_DISTINCT */
};

struct chains {
	struct row_chains *rows;
	size_t nr;
	char *buf;
	size_t cap;
	unsigned sym_rows;	/* 1: rows are symbols */
};

static struct row_chains *find_row(struct chains *cs, const struct topview_row *r)
{
	/* Rows printed are few: a linear scan on pointers is enough. */
	for (size_t i = 0; i < cs->nr; i++)
		if (cs->rows[i].row == r)
			return &cs->rows[i];
	return NULL;
}

static int add_chain(const struct topview_stack *s, void *arg)
{
	struct chains *cs = arg;
	struct row_chains *rc = find_row(cs, s->rows[0]);
	/* A symbol row names frames[0] already: its chain is the callers. */
	const struct np_frame *frames = s->frames + cs->sym_rows;
	unsigned nr = s->nr - cs->sym_rows;
	double w = s->weight;
	size_t len = 1, n = 0;

	if (!rc)
		return 0;
	for (unsigned i = 0; i < nr && i < CHAIN_MAX_DEPTH; i++)
		len += strlen(frames[i].sym) + 8;
	if (len > cs->cap) {
		char *b = realloc(cs->buf, len);

		if (!b)
			return -1;
		cs->buf = b;
		cs->cap = len;
	}
	cs->buf[0] = 0;
	for (unsigned i = 0; i < nr && i < CHAIN_MAX_DEPTH; i++)
		n += (size_t)snprintf(cs->buf + n, len - n, "%s%s%s", i ? " <- " : "",
				      frames[i].sym, frames[i].kernel ? " [k]" : "");
	if (nr > CHAIN_MAX_DEPTH)
		snprintf(cs->buf + n, len - n, " <- ...");
	if (!nr)
		snprintf(cs->buf, len, "(no callers)");

	for (size_t i = 0; i < rc->nr; i++) {
		if (!strcmp(rc->c[i].text, cs->buf)) {
			rc->c[i].w += w;
			return 0;
		}
	}
	if (rc->nr == CHAIN_MAX_DISTINCT) {
		rc->other += w;
		return 0;
	}
	if (!rc->nr) {
		rc->c = calloc(CHAIN_MAX_DISTINCT, sizeof(*rc->c));
		if (!rc->c)
			return -1;
	}
	rc->c[rc->nr].text = strdup(cs->buf);
	if (!rc->c[rc->nr].text)
		return -1;
	rc->c[rc->nr++].w = w;
	return 0;
}

static int chain_cmp(const void *a, const void *b)
{
	const struct chain *x = a, *y = b;

	if (x->w != y->w)
		return x->w < y->w ? 1 : -1;
	return strcmp(x->text, y->text);
}

void cli_print_chains(FILE *out, struct topview *tv,
		      const struct topview_row *const *rows, size_t nr, size_t max)
{
	struct chains cs = { 0 };

	cs.rows = calloc(nr ? nr : 1, sizeof(*cs.rows));
	if (!cs.rows)
		return;
	cs.nr = nr;
	cs.sym_rows = topview_keys_has(topview_keys(tv), TOPVIEW_KEY_SYM);
	for (size_t i = 0; i < nr; i++)
		cs.rows[i].row = rows[i];
	if (topview_foreach_row_stack(tv, add_chain, &cs))
		fprintf(out, "# call chains incomplete: out of memory\n");
	for (size_t i = 0; i < nr; i++) {
		struct row_chains *rc = &cs.rows[i];
		char line[1024];

		cli_format_row(line, sizeof(line), topview_keys(tv), rc->row, topview_total(tv), 0);
		fprintf(out, "%s\n", line);
		if (rc->nr)
			qsort(rc->c, rc->nr, sizeof(*rc->c), chain_cmp);
		double hidden = rc->other;

		for (size_t j = 0; j < rc->nr; j++) {
			if (j < max)
				fprintf(out, "            %6.2f%%  %s\n",
					100.0 * rc->c[j].w / rc->row->self, rc->c[j].text);
			else
				hidden += rc->c[j].w;
			free(rc->c[j].text);
		}
		free(rc->c);
		if (hidden > 0)
			fprintf(out, "            %6.2f%%  (other chains)\n",
				100.0 * hidden / rc->row->self);
		fputc('\n', out);
	}
	free(cs.rows);
	free(cs.buf);
}
