// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <stdlib.h>
#include "np_grow.h"

int np_grow_to(void **arr, size_t *cap, size_t need, size_t elem, size_t max)
{
	size_t nc = *cap ? *cap : 16;
	void *n;

	if (need <= *cap)
		return 0;
	if (need > max)
		return -ENOMEM;
	while (nc < need)
		nc = nc > max / 2 ? max : nc * 2;
	if (nc > SIZE_MAX / elem)
		return -ENOMEM;
	n = realloc(*arr, nc * elem);
	if (!n)
		return -ENOMEM;
	*arr = n;
	*cap = nc;
	return 0;
}
