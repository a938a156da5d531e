// SPDX-License-Identifier: GPL-2.0
/* String -> id map of the exporters (see export_strmap.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "export_strmap.h"

uint32_t np_strmap_hash(const char *s)
{
	uint32_t h = 2166136261u;

	while (*s)
		h = (h ^ (unsigned char)*s++) * 16777619u;
	return h;
}

static int np_strmap_grow(struct np_strmap *m)
{
	size_t cap = m->mask ? ((size_t)m->mask + 1) * 2 : 256;
	uint32_t *slot = calloc(cap, sizeof(*slot));

	if (!slot)
		return -ENOMEM;
	for (size_t i = 0; i < m->nr; i++) {
		uint32_t p = np_strmap_hash(m->keys[i]) & (cap - 1);

		while (slot[p])
			p = (p + 1) & (cap - 1);
		slot[p] = (uint32_t)i + 1;
	}
	free(m->slot);
	m->slot = slot;
	m->mask = (uint32_t)cap - 1;
	return 0;
}

int64_t np_strmap_get(struct np_strmap *m, const char *key, int *is_new)
{
	uint32_t p;

	*is_new = 0;
	if ((m->nr + 1) * 2 > (size_t)m->mask + 1 && np_strmap_grow(m))
		return -ENOMEM;
	p = np_strmap_hash(key) & m->mask;
	while (m->slot[p]) {
		if (!strcmp(m->keys[m->slot[p] - 1], key))
			return m->slot[p] - 1;
		p = (p + 1) & m->mask;
	}
	if (m->nr == m->cap) {
		size_t cap = m->cap ? m->cap * 2 : 256;
		char **k = realloc(m->keys, cap * sizeof(*k));
		uint64_t *v;

		if (!k)
			return -ENOMEM;
		m->keys = k;
		v = realloc(m->val, cap * sizeof(*v));
		if (!v)
			return -ENOMEM;
		m->val = v;
		m->cap = cap;
	}
	m->keys[m->nr] = strdup(key);
	if (!m->keys[m->nr])
		return -ENOMEM;
	m->val[m->nr] = 0;
	m->slot[p] = (uint32_t)m->nr + 1;
	*is_new = 1;
	return (int64_t)m->nr++;
}

void np_strmap_free(struct np_strmap *m)
{
	for (size_t i = 0; m->keys && i < m->nr; i++)
		free(m->keys[i]);
	free(m->keys);
	free(m->val);
	free(m->slot);
	memset(m, 0, sizeof(*m));
}
