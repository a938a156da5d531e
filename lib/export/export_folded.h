/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Folded stacks, collected: shared by the folded writer and the svg
 * flame graph, which lays out the same merged, sorted lines.
 */
#ifndef NP_EXPORT_FOLDED_H
#define NP_EXPORT_FOLDED_H

#include <stddef.h>
#include "export.h"

struct np_folded_line {
	char *stack;		/* "comm;outer;...;inner" */
	uint64_t count;
};

struct np_folded {
	struct np_folded_line *lines;	/* sorted by stack, no duplicates */
	size_t nr;
	uint64_t total;
};

/* 0 or -ENOMEM. */
int np_folded_collect(struct topview *tv, const struct np_export_opts *o,
		      struct np_folded *out);
void np_folded_free(struct np_folded *f);
/* Frame text as it appears in a folded line: ';' and control bytes
 * replaced, so the line stays parseable; kernel frames get "_[k]". */
size_t np_folded_frame(char *buf, size_t len, const struct np_frame *f);

#endif /* NP_EXPORT_FOLDED_H */
