// SPDX-License-Identifier: GPL-2.0
/* String -> id map of the exporters (see export_strmap.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "export_strmap.h"
#include "np_grow.h"

int64_t np_strmap_get(struct np_strmap *m, const char *key, int *is_new)
{
	uint32_t h = (uint32_t)np_hash_str(key);
	uint32_t pos = np_idx_first(&m->idx, h), id;

	*is_new = 0;
	while ((id = np_idx_next(&m->idx, h, &pos)) != UINT32_MAX)
		if (!strcmp(m->keys[id], key))
			return id;
	if (m->nr >= UINT32_MAX - 1 ||
	    NP_GROW(m->keys, m->cap, m->nr + 1) ||
	    NP_GROW(m->val, m->cap_val, m->nr + 1))
		return -ENOMEM;
	m->keys[m->nr] = strdup(key);
	if (!m->keys[m->nr])
		return -ENOMEM;
	if (np_idx_insert(&m->idx, h, (uint32_t)m->nr)) {
		free(m->keys[m->nr]);
		return -ENOMEM;
	}
	m->val[m->nr] = 0;
	*is_new = 1;
	return (int64_t)m->nr++;
}

void np_strmap_free(struct np_strmap *m)
{
	for (size_t i = 0; m->keys && i < m->nr; i++)
		free(m->keys[i]);
	free(m->keys);
	free(m->val);
	np_idx_free(&m->idx);
	memset(m, 0, sizeof(*m));
}
