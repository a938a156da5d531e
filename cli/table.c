// SPDX-License-Identifier: GPL-2.0
/*
 * The hot-spot table as text for `report` and `top --stdio`: rows
 * (row.c), with -g/-G call graphs (callgraph.c) or --chains
 * (callchains.c) under them.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static int row_shown(const struct topview_row *r, double total,
		     const struct cli_table_opts *o)
{
	return !(o->percent_limit > 0 && total > 0 &&
		 100.0 * r->self / total < o->percent_limit);
}

/*
 * --chains: only rows with self samples have chains to show; -g/-G: every
 * row shown gets its tree.
 */
static void print_with_graph(FILE *out, struct topview *tv,
			     const struct cli_table_opts *o, size_t max)
{
	size_t n = topview_nr_rows(tv), k = 0;
	const struct topview_row **rows = calloc(n ? n : 1, sizeof(*rows));

	if (!rows) {
		fprintf(out, "# out of memory\n");
		return;
	}
	for (size_t i = 0; i < n && (!o->max_rows || k < o->max_rows); i++) {
		const struct topview_row *r = topview_row(tv, i);

		if ((r->self > 0 || !o->chains) && row_shown(r, topview_total(tv), o))
			rows[k++] = r;
	}
	if (o->chains)
		cli_print_chains(out, tv, rows, k, max);
	else
		cli_print_graph(out, tv, rows, k, &o->graph);
	free(rows);
}

void cli_print_table(FILE *out, struct topview *tv,
		     const struct cli_table_opts *o)
{
	size_t n = topview_nr_rows(tv), max = o->graph_max ? o->graph_max : 5;
	double total = topview_total(tv);
	char line[1024];

	cli_format_header(line, sizeof(line), topview_keys(tv), 0);
	fprintf(out, "%s\n", line);
	if (o->chains || o->callgraph) {
		print_with_graph(out, tv, o, max);
		return;
	}
	for (size_t i = 0; i < n; i++) {
		const struct topview_row *r = topview_row(tv, i);

		if (o->max_rows && i >= o->max_rows)
			break;
		if (!row_shown(r, total, o))
			continue;
		cli_format_row(line, sizeof(line), topview_keys(tv), r, total, 0);
		fprintf(out, "%s\n", line);
	}
}
