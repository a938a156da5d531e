// SPDX-License-Identifier: GPL-2.0
/* A daemon's stacks reply into a topview (see topview_ctl.h). */
#include <errno.h>
#include <stdlib.h>

#include "symbolizer.h"
#include "topview_ctl.h"

int topview_load_stacks(struct topview *tv, const struct np_ctl_stacks *t)
{
	static const struct np_frame other = {
		.dso = "[other]", .sym = "[other stacks]", .kernel = 0,
	};
	struct np_frame *fr = NULL;
	/* unnamed frames' names, made once per frame of the reply */
	char (*names)[NP_SYM_UNNAMED_MAX] = NULL;
	uint32_t cap = 0;
	int ret = 0;

	topview_zero(tv);
	if (t->nr_frames && !(names = calloc(t->nr_frames, sizeof(*names))))
		return -ENOMEM;
	for (uint32_t k = 0; k < t->nr_frames; k++)
		if (!t->f[k].sym)
			np_sym_unnamed(names[k], sizeof(names[k]), t->f[k].dso,
				       t->f[k].offset);
	for (uint32_t i = 0; i < t->nr && !ret; i++) {
		const struct np_ctl_stack *s = &t->s[i];
		struct topview_sample ts = {
			.cpu = (uint32_t)s->cpu, .pid = (uint32_t)s->pid,
			.comm = s->comm, .nr_frames = s->nr,
			.weight = (double)s->samples,
		};

		if (!s->nr)
			continue;	/* no frame at all: nothing to show */
		if (s->nr > cap) {
			struct np_frame *n = realloc(fr, s->nr * sizeof(*n));

			if (!n) {
				ret = -ENOMEM;
				break;
			}
			fr = n;
			cap = s->nr;
		}
		for (uint32_t k = 0; k < s->nr; k++) {
			const struct np_ctl_frame *f = &t->f[s->frames[k]];

			fr[k] = (struct np_frame){
				.dso = f->dso,
				/* named as in-process: object+0xoffset */
				.sym = f->sym ? f->sym : names[s->frames[k]],
				.kernel = f->kernel,
			};
		}
		ts.frames = fr;
		ret = topview_add(tv, &ts);
	}
	free(fr);
	free(names);
	if (!ret && t->other) {
		const struct topview_filter *f = topview_filter(tv);
		struct np_frame rest = other;
		struct topview_sample ts = {
			.comm = "[other]", .frames = &rest, .nr_frames = 1,
			.weight = (double)t->other,
		};

		/*
		 * Showing only kernel (user) frames, top counts the samples
		 * with a kernel (user) frame: so must the remainder, whose
		 * row must then pass that filter.
		 */
		if (t->other_kinds && f->kernel != f->user) {
			rest.kernel = f->kernel;
			ts.weight = (double)(f->kernel ? t->other_kernel : t->other_user);
		}
		if (ts.weight > 0)
			ret = topview_add(tv, &ts);
	}
	return ret;
}
