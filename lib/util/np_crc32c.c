// SPDX-License-Identifier: GPL-2.0
/* CRC-32C, reflected polynomial 0x82f63b78, slicing-by-8. */
#include <pthread.h>
#include <string.h>
#include "np_crc32c.h"

static uint32_t crc_tab[8][256];
static pthread_once_t crc_once = PTHREAD_ONCE_INIT;

static void crc_init(void)
{
	for (uint32_t i = 0; i < 256; i++) {
		uint32_t c = i;

		for (int k = 0; k < 8; k++)
			c = (c >> 1) ^ (0x82f63b78U & -(c & 1));
		crc_tab[0][i] = c;
	}
	for (uint32_t i = 0; i < 256; i++)
		for (int t = 1; t < 8; t++)
			crc_tab[t][i] = (crc_tab[t - 1][i] >> 8) ^
					crc_tab[0][crc_tab[t - 1][i] & 0xff];
}

uint32_t np_crc32c(uint32_t crc, const void *buf, size_t len)
{
	const unsigned char *p = buf;

	pthread_once(&crc_once, crc_init);
	crc = ~crc;
	while (len && ((uintptr_t)p & 7)) {
		crc = (crc >> 8) ^ crc_tab[0][(crc ^ *p++) & 0xff];
		len--;
	}
	while (len >= 8) {
		uint64_t w;

		memcpy(&w, p, 8);	/* little-endian host (x86_64 only) */
		w ^= crc;
		crc = crc_tab[7][w & 0xff] ^ crc_tab[6][(w >> 8) & 0xff] ^
		      crc_tab[5][(w >> 16) & 0xff] ^ crc_tab[4][(w >> 24) & 0xff] ^
		      crc_tab[3][(w >> 32) & 0xff] ^ crc_tab[2][(w >> 40) & 0xff] ^
		      crc_tab[1][(w >> 48) & 0xff] ^ crc_tab[0][w >> 56];
		p += 8;
		len -= 8;
	}
	while (len--)
		crc = (crc >> 8) ^ crc_tab[0][(crc ^ *p++) & 0xff];
	return ~crc;
}
