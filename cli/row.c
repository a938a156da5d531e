// SPDX-License-Identifier: GPL-2.0
/*
 * One hot-spot row as text: one format for `report`, `top --stdio`, the
 * rows of the full-screen `top` and those above call graphs and chains,
 * so scripts parsing one can parse the others.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"

#define COL_HDR "Overhead      Self  Children  Command              Pid  Shared Object         Symbol"

const char *cli_basename(const char *path)
{
	const char *s;

	if (!path || path[0] == '[')	/* "[kernel.kallsyms]" stays whole */
		return path ? path : "";
	s = strrchr(path, '/');
	return s && s[1] ? s + 1 : path;
}

void cli_format_header(char *buf, size_t len, size_t width)
{
	snprintf(buf, len, "%s", COL_HDR);
	if (width && width < len)
		buf[width] = 0;
}

void cli_format_row(char *buf, size_t len, const struct topview_row *r,
		    double total, size_t width)
{
	double pct = total > 0 ? 100.0 * r->self / total : 0;

	snprintf(buf, len, "%7.2f%%  %8.0f  %8.0f  %-15.15s %8u  %-20.20s  [%c] %s",
		 pct, round(r->self), round(r->children), r->comm, r->pid,
		 cli_basename(r->dso), r->kernel ? 'k' : '.', r->sym);
	if (width && width < len)
		buf[width] = 0;
}
