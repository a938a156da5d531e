/* SPDX-License-Identifier: GPL-2.0 */
/* Arrays that grow by doubling. */
#ifndef NP_GROW_H
#define NP_GROW_H

#include <stddef.h>
#include <stdint.h>

/*
 * Make *arr (*cap elements of elem bytes) hold at least need elements,
 * doubling from 16 up to max, which it never exceeds.  0 or -ENOMEM.
 */
int np_grow_to(void **arr, size_t *cap, size_t need, size_t elem, size_t max);

/* Tables indexed by 32-bit ids keep 32-bit capacities. */
static inline int np_grow(void **arr, uint32_t *cap, uint64_t need, size_t elem)
{
	size_t c = *cap;
	int ret;

	if (need <= *cap)
		return 0;
	ret = np_grow_to(arr, &c, need, elem, (size_t)1 << 31);
	*cap = (uint32_t)c;
	return ret;
}

#define NP_GROW(arr, cap, need) \
	np_grow_to((void **)&(arr), &(cap), (need), sizeof(*(arr)), SIZE_MAX / 2)

#endif /* NP_GROW_H */
