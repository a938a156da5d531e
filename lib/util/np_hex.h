/* SPDX-License-Identifier: GPL-2.0 */
#ifndef NP_HEX_H
#define NP_HEX_H

#include <stddef.h>

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

/* n bytes as 2n lower-case hex digits and a NUL into out. */
static inline char *np_hex_str(char *out, const unsigned char *b, size_t n)
{
	static const char digit[] = "0123456789abcdef";

	for (size_t i = 0; i < n; i++) {
		out[2 * i] = digit[b[i] >> 4];
		out[2 * i + 1] = digit[b[i] & 15];
	}
	out[2 * n] = 0;
	return out;
}

#endif /* NP_HEX_H */
