// SPDX-License-Identifier: GPL-2.0
/* The exporters' options and the format dispatcher (export.h). */
#include <errno.h>
#include <string.h>
#include "export.h"

void np_export_opts_init(struct np_export_opts *o)
{
	memset(o, 0, sizeof(*o));
}

int np_export_parse_format(const char *name)
{
	if (!strcmp(name, "folded") || !strcmp(name, "collapsed"))
		return NP_EXPORT_FOLDED;
	if (!strcmp(name, "pprof"))
		return NP_EXPORT_PPROF;
	if (!strcmp(name, "svg"))
		return NP_EXPORT_SVG;
	return -1;
}

int np_export(struct topview *tv, enum np_export_format fmt,
	      const struct np_export_opts *o, FILE *out, char *err, size_t errlen)
{
	switch (fmt) {
	case NP_EXPORT_FOLDED:
		return np_export_folded(tv, o, out, err, errlen);
	case NP_EXPORT_PPROF:
		return np_export_pprof(tv, o, out, err, errlen);
	case NP_EXPORT_SVG:
		return np_export_svg(tv, o, out, err, errlen);
	}
	snprintf(err, errlen, "unknown export format");
	return -EINVAL;
}
