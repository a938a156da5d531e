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
/* Column widths, and the narrowest each is cut to on a narrow terminal. */
#define COMM_WIDTH	15
#define COMM_MIN	6
#define ID_WIDTH	8	/* pid, tid */
#define ID_MIN		5
#define DSO_WIDTH	20
#define DSO_MIN		8
#define SYM_WIDTH	36	/* when a column follows the symbol */
#define SYM_MIN		20
#define SEP		2	/* between columns */
#define SYM_TAG		4	/* "[.] " */

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

struct layout {
	size_t w[TOPVIEW_KEY_NR];	/* each key's column, by key */
};

/* The columns' widths for a line of width columns (0: no limit). */
static void layout(struct layout *l, const struct topview_keys *k, size_t width)
{
	static const struct {
		enum topview_key key;
		size_t min;
	} shrink[] = {	/* cut in this order, each to its minimum */
		{ TOPVIEW_KEY_COMM, COMM_MIN }, { TOPVIEW_KEY_PID, ID_MIN },
		{ TOPVIEW_KEY_TID, ID_MIN }, { TOPVIEW_KEY_DSO, DSO_MIN },
		{ TOPVIEW_KEY_SYM, SYM_MIN },
	};
	size_t used = strlen(COL_WEIGHTS), want;
	enum topview_key last;

	memset(l, 0, sizeof(*l));
	if (!k->nr)
		return;
	last = k->key[k->nr - 1];
	for (unsigned i = 0; i < k->nr && k->key[i] < TOPVIEW_KEY_NR; i++) {
		size_t *w = &l->w[k->key[i]];

		switch (k->key[i]) {
		case TOPVIEW_KEY_COMM: *w = COMM_WIDTH; break;
		case TOPVIEW_KEY_PID:
		case TOPVIEW_KEY_TID: *w = ID_WIDTH; break;
		case TOPVIEW_KEY_CPU: *w = 3; break;
		case TOPVIEW_KEY_DSO: *w = DSO_WIDTH; break;
		case TOPVIEW_KEY_SYM: *w = SYM_WIDTH; break;
		default: *w = 0; break;
		}
		used += SEP + (k->key[i] == TOPVIEW_KEY_SYM ? SYM_TAG : 0);
		if (i + 1 == k->nr)	/* the last column takes what is left */
			*w = k->key[i] == TOPVIEW_KEY_SYM ? SYM_MIN :
			     k->key[i] == TOPVIEW_KEY_DSO ? DSO_MIN : *w;
		used += *w;
	}
	if (!width)
		return;
	for (size_t i = 0; i < sizeof(shrink) / sizeof(shrink[0]) && used > width; i++) {
		size_t *w = &l->w[shrink[i].key];

		if (!topview_keys_has(k, shrink[i].key) ||
		    last == shrink[i].key || *w <= shrink[i].min)
			continue;
		want = used - width < *w - shrink[i].min ? used - width : *w - shrink[i].min;
		*w -= want;
		used -= want;
	}
	/* the last name column gets the rest of the line, cut to fit */
	if (last == TOPVIEW_KEY_SYM || last == TOPVIEW_KEY_DSO ||
	    last == TOPVIEW_KEY_COMM) {
		used -= l->w[last];
		l->w[last] = width > used ? width - used : 1;
	}
}

static void format(char *buf, size_t len, size_t n, const struct topview_keys *k,
		   const struct topview_row *r, size_t width)
{
	struct layout l;
	char f[256];

	layout(&l, k, width);
	for (unsigned i = 0; i < k->nr; i++) {
		int last = i + 1 == k->nr;
		/* an unlimited last column: the name whole, unpadded */
		size_t w = last && !width ? 0 : l.w[k->key[i]];

		switch (k->key[i]) {
		case TOPVIEW_KEY_COMM:
			cli_fit(f, sizeof(f), r ? r->comm : "Command", w);
			put(buf, len, &n, "  %s", f);
			break;
		case TOPVIEW_KEY_PID:
		case TOPVIEW_KEY_TID:
			if (r)
				put(buf, len, &n, "  %*u", (int)w,
				    k->key[i] == TOPVIEW_KEY_PID ? r->pid : r->tid);
			else
				put(buf, len, &n, "  %*s", (int)w,
				    k->key[i] == TOPVIEW_KEY_PID ? "Pid" : "Tid");
			break;
		case TOPVIEW_KEY_CPU:
			if (r)
				put(buf, len, &n, "  %3u", r->cpu);
			else
				put(buf, len, &n, "  CPU");
			break;
		case TOPVIEW_KEY_DSO:
			cli_fit(f, sizeof(f), r ? cli_basename(r->dso) : "Shared Object", w);
			put(buf, len, &n, "  %s", f);
			break;
		case TOPVIEW_KEY_SYM:
			if (r) {
				cli_fit(f, sizeof(f), r->sym, w);
				put(buf, len, &n, "  [%c] %s", r->kernel ? 'k' : '.', f);
			} else {
				cli_fit(f, sizeof(f), "Symbol", w);
				put(buf, len, &n, "  %s%s", last ? "" : "    ", f);
			}
			break;
		default:
			break;
		}
	}
	/* trailing padding of a cut last column is noise */
	while (n > 0 && n < len && buf[n - 1] == ' ')
		buf[--n] = 0;
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
