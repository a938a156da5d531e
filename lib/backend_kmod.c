// SPDX-License-Identifier: GPL-2.0
/* placeholder, filled below */
#include <stdio.h>
#include "np_backend_impl.h"
struct np_backend *np_backend_kmod_open(const struct np_backend_opts *o,
					char *err, size_t errlen)
{
	snprintf(err, errlen, "kmod backend not built");
	return NULL;
}
