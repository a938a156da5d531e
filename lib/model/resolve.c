// SPDX-License-Identifier: GPL-2.0
/* The one stack-resolution path (resolve.h). */
#include "resolve.h"

/*
 * How many user frames, innermost first, keep their own frame: the
 * outermost unmapped run folds into one, since kept apart every such
 * word would make a new stack.  Looked at from the outside in, so only
 * the run and one frame more are symbolized.
 */
static unsigned int user_frames_kept(struct np_stacktab *st,
				     const struct np_ev_sample *s,
				     np_frame_fn frame, void *arg)
{
	unsigned int n = s->nr_uframes;

	while (n > 1 &&
	       np_stacktab_frame_unmapped(st, frame(arg, s->uframes[n - 1], 0)))
		n--;
	return n;
}

uint32_t np_resolve_user(struct np_stacktab *st, const struct np_ev_sample *s,
			 np_frame_fn frame, void *arg)
{
	unsigned int nu = user_frames_kept(st, s, frame, arg);
	uint32_t node = NP_STACK_EMPTY;

	if (nu < s->nr_uframes)
		node = np_stacktab_child(st, node, np_stacktab_unmapped_run(st));
	for (unsigned int i = nu; i-- && node != NP_ID_NONE;)
		node = np_stacktab_child(st, node, frame(arg, s->uframes[i], 0));
	return node;
}

uint32_t np_resolve_kernel(struct np_stacktab *st, uint32_t node,
			   const struct np_ev_sample *s, np_frame_fn frame,
			   void *arg)
{
	for (unsigned int i = s->nr_kframes; i-- && node != NP_ID_NONE;)
		node = np_stacktab_child(st, node, frame(arg, s->kframes[i], 1));
	if (!s->nr_kframes && !s->nr_uframes && s->ip && node != NP_ID_NONE)
		node = np_stacktab_child(st, node,
					 frame(arg, s->ip,
					       !(s->flags & NMIPROF_RF_USER_MODE)));
	return node;
}
