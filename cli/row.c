// SPDX-License-Identifier: GPL-2.0
/*
 * One hot-spot row as text: one format for `report`, `top --stdio`, the
 * rows of the full-screen `top` and those above call graphs and chains,
 * so scripts parsing one can parse the others.  After the weights, one
 * column per sort key, in the order of the keys, as perf report prints
 * them; a name cut to its column ends in CLI_CUT_MARK.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"

#define COL_WEIGHTS	"Overhead      Self  Children"
#define DSO_WIDTH	20
#define SYM_WIDTH	40	/* when a column follows the symbol */

const char *cli_basename(const char *path)
{
	const char *s;

	if (!path || path[0] == '[')	/* "[kernel.kallsyms]" stays whole */
		return path ? path : "";
	s = strrchr(path, '/');
	return s && s[1] ? s + 1 : path;
}

void cli_fit(char *buf, size_t len, const char *s, size_t width)
{
	size_t n = strlen(s), m = strlen(CLI_CUT_MARK);

	if (len <= width || width <= m) {
		snprintf(buf, len, "%s", s);
		return;
	}
	if (n <= width) {
		snprintf(buf, len, "%-*s", (int)width, s);
		return;
	}
	snprintf(buf, len, "%.*s%s", (int)(width - m), s, CLI_CUT_MARK);
}

/* Appends one column to buf at *n. */
static void __attribute__((format(printf, 4, 5)))
put(char *buf, size_t len, size_t *n, const char *fmt, ...)
{
	va_list ap;
	int w;

	if (*n >= len)
		return;
	va_start(ap, fmt);
	w = vsnprintf(buf + *n, len - *n, fmt, ap);
	va_end(ap);
	if (w > 0)
		*n += (size_t)w;
}

static void format(char *buf, size_t len, size_t n, const struct topview_keys *k,
		   const struct topview_row *r, size_t width)
{
	char f[256];

	for (unsigned i = 0; i < k->nr; i++) {
		int last = i + 1 == k->nr;

		switch (k->key[i]) {
		case TOPVIEW_KEY_COMM:
			put(buf, len, &n, last ? "  %.15s" : "  %-15.15s",
			    r ? r->comm : "Command");
			break;
		case TOPVIEW_KEY_PID:
		case TOPVIEW_KEY_TID:
			if (r)
				put(buf, len, &n, "  %8u",
				    k->key[i] == TOPVIEW_KEY_PID ? r->pid : r->tid);
			else
				put(buf, len, &n, "  %8s",
				    k->key[i] == TOPVIEW_KEY_PID ? "Pid" : "Tid");
			break;
		case TOPVIEW_KEY_CPU:
			if (r)
				put(buf, len, &n, "  %3u", r->cpu);
			else
				put(buf, len, &n, "  CPU");
			break;
		case TOPVIEW_KEY_DSO:
			cli_fit(f, sizeof(f), r ? cli_basename(r->dso) : "Shared Object",
				last ? 0 : DSO_WIDTH);
			put(buf, len, &n, "  %s", f);
			break;
		case TOPVIEW_KEY_SYM:
			cli_fit(f, sizeof(f), r ? r->sym : "Symbol",
				last ? 0 : SYM_WIDTH - 4);
			if (r)
				put(buf, len, &n, "  [%c] %s", r->kernel ? 'k' : '.', f);
			else
				put(buf, len, &n, "  %s%s", last ? "" : "    ", f);
			break;
		default:
			break;
		}
	}
	if (width && width < len)
		buf[width] = 0;
}

void cli_format_header(char *buf, size_t len, const struct topview_keys *k,
		       size_t width)
{
	format(buf, len, (size_t)snprintf(buf, len, "%s", COL_WEIGHTS), k, NULL,
	       width);
}

void cli_format_row(char *buf, size_t len, const struct topview_keys *k,
		    const struct topview_row *r, double total, size_t width)
{
	double pct = total > 0 ? 100.0 * r->self / total : 0;
	int n = snprintf(buf, len, "%7.2f%%  %8.0f  %8.0f", pct, round(r->self),
			 round(r->children));

	format(buf, len, n > 0 ? (size_t)n : 0, k, r, width);
}
