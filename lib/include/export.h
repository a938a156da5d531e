/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Profile exporters: the stacks of a topview written as
 *   folded  "comm;outer;...;inner count" lines (flamegraph.pl input)
 *   pprof   a profile.proto message (uncompressed; pprof accepts it)
 *   svg     a self-contained interactive flame graph
 * Every exporter walks topview_foreach_stack(), so the view's filters
 * (pid, comm, cpu, kernel/user frames) apply to exports too.  Output is
 * deterministic for a given input: equal inputs give equal bytes.
 */
#ifndef NP_EXPORT_H
#define NP_EXPORT_H

#include <stdint.h>
#include <stdio.h>
#include "topview.h"

enum np_export_format {
	NP_EXPORT_FOLDED = 0,
	NP_EXPORT_PPROF,
	NP_EXPORT_SVG,
};

struct np_export_opts {
	const char *title;	/* svg title; NULL: "nmiprof flame graph" */
	uint32_t freq_hz;	/* pprof period = 1e9 / freq_hz ns; 0: unknown */
	uint64_t period_ns;	/* the profile's own period, if freq_hz is 0 */
	uint64_t time_ns;	/* pprof time_nanos (wall clock), 0: unset */
	uint64_t duration_ns;	/* pprof duration_nanos, 0: unset */
	int no_comm;		/* folded/svg: do not put comm as the root frame */
};

void np_export_opts_init(struct np_export_opts *o);
/* "folded", "pprof", "svg"; -1 if unknown. */
int np_export_parse_format(const char *name);

/* Each returns 0, or -errno with a one-line reason in err. */
int np_export_folded(struct topview *tv, const struct np_export_opts *o,
		     FILE *out, char *err, size_t errlen);
int np_export_pprof(struct topview *tv, const struct np_export_opts *o,
		    FILE *out, char *err, size_t errlen);
int np_export_svg(struct topview *tv, const struct np_export_opts *o,
		  FILE *out, char *err, size_t errlen);
int np_export(struct topview *tv, enum np_export_format fmt,
	      const struct np_export_opts *o, FILE *out,
	      char *err, size_t errlen);

#endif /* NP_EXPORT_H */
