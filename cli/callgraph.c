// SPDX-License-Identifier: GPL-2.0
/*
 * Call-graph trees for `report -g` / `report -G`, as perf report -g draws
 * them: under each printed row, the tree of the stacks that contain its
 * function (the row's children samples), with each node's share of all
 * shown samples.
 *
 *   callee order (-g, perf's default): the row's function at the root,
 *     its callers below it, their callers below them: who calls this?
 *   caller order (-G): the row's function at the root, what it calls
 *     below it, down to the sampled functions: where does its time go?
 *
 * A stack that holds the function more than once (recursion) is counted
 * once per tree, from the occurrence that keeps the rest of the path in
 * the tree: the innermost for callee order, the outermost for caller
 * order.  The root's weight is therefore the row's children count.
 * Nodes deeper than the depth limit are folded into their ancestor (the
 * ancestor says so), and branches below the percent limit are summed
 * into one "(other)" line per node so that every level adds up.
 *
 * Rows wider than a symbol (--sort dso, comm, ...) have no function at
 * the root: their trees start at the frame in the row, as perf's do.
 *
 * One walk over the stacks builds every tree: the model says which row
 * each frame falls in (topview_foreach_row_stack), and a printed row's
 * tree is found by the row's address.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "np_idx.h"

struct gnode {
	const char *sym, *dso;
	int kernel;
	int deeper;		/* paths went on past the depth limit */
	double w;
	uint32_t child, next;	/* first child, next sibling; 0: none */
};

struct gtree {
	const struct topview_row *row;
	struct gnode *n;	/* n[0]: the root, the row's function */
	uint32_t nr, cap;
	uint64_t stamp;		/* last stack counted */
};

struct graph {
	struct gtree *t;
	size_t nr;
	struct np_idx idx;	/* trees by row */
	uint64_t stack_no;
	const struct cli_graph_opts *o;
	int sym_rows;		/* rows are symbols: the tree's root */
	int oom;
};

static uint32_t row_hash(const struct topview_row *r)
{
	return (uint32_t)np_hash_u64((uintptr_t)r);
}

static struct gtree *find_tree(struct graph *g, const struct topview_row *r)
{
	uint32_t h = row_hash(r), pos = np_idx_first(&g->idx, h), i;

	while ((i = np_idx_next(&g->idx, h, &pos)) != NP_IDX_NONE)
		if (g->t[i].row == r)
			return &g->t[i];
	return NULL;
}

/* The child of node for frame f, created if new; 0 on ENOMEM. */
static uint32_t child_of(struct graph *g, struct gtree *t, uint32_t node,
			 const struct np_frame *f)
{
	uint32_t c;

	for (c = t->n[node].child; c; c = t->n[c].next)
		if (t->n[c].sym == f->sym && t->n[c].dso == f->dso &&
		    !t->n[c].kernel == !f->kernel)
			return c;
	if (t->nr == t->cap) {
		uint32_t cap = t->cap * 2;
		struct gnode *n = realloc(t->n, cap * sizeof(*n));

		if (!n) {
			g->oom = 1;
			return 0;
		}
		t->n = n;
		t->cap = cap;
	}
	c = t->nr++;
	t->n[c] = (struct gnode){
		.sym = f->sym, .dso = f->dso, .kernel = f->kernel,
		.next = t->n[node].child,
	};
	t->n[node].child = c;
	return c;
}

/* Count one stack into t from frames[at] outwards (callee) or inwards. */
static void add_path(struct graph *g, struct gtree *t, const struct np_frame *frames,
		     unsigned nr, unsigned at, double w)
{
	int step = g->o->order == CLI_GRAPH_CALLER ? -1 : 1;
	uint32_t node = 0;
	unsigned depth = 0;

	t->n[0].w += w;
	for (long j = (long)at + (g->sym_rows ? step : 0); j >= 0 && j < (long)nr;
	     j += step) {
		if (g->o->depth && depth == g->o->depth) {
			t->n[node].deeper = 1;
			return;
		}
		node = child_of(g, t, node, &frames[j]);
		if (!node)
			return;
		t->n[node].w += w;
		depth++;
	}
}

static int add_stack(const struct topview_stack *s, void *arg)
{
	struct graph *g = arg;
	int caller = g->o->order == CLI_GRAPH_CALLER;

	g->stack_no++;
	/* The occurrence that leaves the rest of the path inside the tree. */
	for (unsigned k = 0; k < s->nr; k++) {
		unsigned i = caller ? s->nr - 1 - k : k;
		struct gtree *t = find_tree(g, s->rows[i]);

		if (!t || t->stamp == g->stack_no)
			continue;
		t->stamp = g->stack_no;
		add_path(g, t, s->frames, s->nr, i, s->weight);
	}
	return g->oom ? -1 : 0;
}

static int node_cmp(const struct gtree *t, uint32_t a, uint32_t b)
{
	const struct gnode *x = &t->n[a], *y = &t->n[b];
	int c;

	if (x->w != y->w)
		return x->w < y->w ? 1 : -1;
	c = strcmp(x->sym, y->sym);
	return c ? c : strcmp(x->dso, y->dso);
}

/* Children of node, heaviest first (a small insertion sort: fan-out is low). */
static size_t sorted_children(const struct gtree *t, uint32_t node, uint32_t **buf,
			      size_t *cap)
{
	size_t n = 0;

	for (uint32_t c = t->n[node].child; c; c = t->n[c].next) {
		size_t i;

		if (n == *cap) {
			size_t nc = *cap ? *cap * 2 : 16;
			uint32_t *b = realloc(*buf, nc * sizeof(*b));

			if (!b)
				return n;	/* prints fewer branches; never crashes */
			*buf = b;
			*cap = nc;
		}
		for (i = n; i > 0 && node_cmp(t, (*buf)[i - 1], c) > 0; i--)
			(*buf)[i] = (*buf)[i - 1];
		(*buf)[i] = c;
		n++;
	}
	return n;
}

#define GRAPH_INDENT	"            "
#define GRAPH_MAX_DEPTH	128	/* prefix buffer bound */

static void print_node(FILE *out, const struct gtree *t, uint32_t node,
		       double total, const struct cli_graph_opts *o,
		       char *prefix, size_t plen)
{
	uint32_t *kids = NULL;
	size_t cap = 0, n = sorted_children(t, node, &kids, &cap), shown = 0;
	double other = 0;

	for (size_t i = 0; i < n; i++)
		if (100.0 * t->n[kids[i]].w / total >= o->limit)
			shown++;
		else
			other += t->n[kids[i]].w;
	for (size_t i = 0, k = 0; i < n; i++) {
		const struct gnode *c = &t->n[kids[i]];
		int last;

		if (100.0 * c->w / total < o->limit)
			continue;
		last = ++k == shown && other <= 0;
		fprintf(out, GRAPH_INDENT "%s%s%6.2f%%  [%c] %s%s\n", prefix,
			last ? "`--" : "|--", 100.0 * c->w / total,
			c->kernel ? 'k' : '.', c->sym, c->deeper ? "  [...]" : "");
		if (c->child && plen + 4 < GRAPH_MAX_DEPTH * 3 + 1) {
			memcpy(prefix + plen, last ? "   " : "|  ", 4);
			print_node(out, t, kids[i], total, o, prefix, plen + 3);
			prefix[plen] = '\0';
		}
	}
	if (other > 0)
		fprintf(out, GRAPH_INDENT "%s`--%6.2f%%  (other, below %.2f%% each)\n",
			prefix, 100.0 * other / total, o->limit);
	free(kids);
}

void cli_print_graph(FILE *out, struct topview *tv,
		     const struct topview_row *const *rows, size_t nr,
		     const struct cli_graph_opts *o)
{
	struct graph g = {
		.o = o, .sym_rows = topview_keys_has(topview_keys(tv), TOPVIEW_KEY_SYM),
	};
	double total = topview_total(tv);
	char prefix[GRAPH_MAX_DEPTH * 3 + 1];

	g.t = calloc(nr ? nr : 1, sizeof(*g.t));
	if (!g.t || nr > UINT32_MAX - 1 || np_idx_reserve(&g.idx, (uint32_t)nr))
		goto nomem;
	for (size_t i = 0; i < nr; i++) {
		struct gtree *t = &g.t[i];

		t->row = rows[i];
		t->cap = 16;
		t->n = calloc(t->cap, sizeof(*t->n));
		if (!t->n)
			goto nomem;
		t->nr = 1;
		t->n[0] = (struct gnode){ .sym = rows[i]->sym, .dso = rows[i]->dso,
					  .kernel = rows[i]->kernel };
		g.nr = i + 1;
		if (np_idx_insert(&g.idx, row_hash(rows[i]), (uint32_t)i))
			goto nomem;
	}
	if (topview_foreach_row_stack(tv, add_stack, &g))
		fprintf(out, "# call graph incomplete: out of memory\n");
	for (size_t i = 0; i < nr; i++) {
		const struct gtree *t = &g.t[i];
		char line[1024];

		cli_format_row(line, sizeof(line), topview_keys(tv), t->row, total, 0);
		fprintf(out, "%s\n", line);
		if (total > 0 && t->n[0].w > 0) {
			if (g.sym_rows)
				fprintf(out, GRAPH_INDENT "%6.2f%%  [%c] %s%s\n",
					100.0 * t->n[0].w / total,
					t->row->kernel ? 'k' : '.', t->row->sym,
					t->n[0].deeper ? "  [...]" : "");
			prefix[0] = '\0';
			print_node(out, t, 0, total, o, prefix, 0);
		}
		fputc('\n', out);
	}
	goto out;
nomem:
	fprintf(out, "# call graph: out of memory\n");
out:
	for (size_t i = 0; g.t && i < g.nr; i++)
		free(g.t[i].n);
	free(g.t);
	np_idx_free(&g.idx);
}
