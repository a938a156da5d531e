/* SPDX-License-Identifier: GPL-2.0 */
#ifndef NP_HEX_H
#define NP_HEX_H

/* The value of hex digit c, or -1. */
static inline int np_hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

#endif /* NP_HEX_H */
