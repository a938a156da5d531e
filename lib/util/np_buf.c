// SPDX-License-Identifier: GPL-2.0
#include "np_buf.h"

int np_buf_grow(struct np_buf *b, size_t more)
{
	size_t nc = b->cap ? b->cap : 256;
	uint8_t *n;

	if (more > SIZE_MAX / 2 - b->len)
		goto oom;
	while (nc - b->len < more)
		nc *= 2;
	n = realloc(b->p, nc);
	if (!n)
		goto oom;
	b->p = n;
	b->cap = nc;
	return 0;
oom:
	b->oom = 1;
	return -1;
}
