// SPDX-License-Identifier: GPL-2.0
/*
 * lib/util/np_crc32c: the known check value, and the CPU's instruction
 * against the software version at every length and alignment, whole and
 * continued.
 */
#include <stdint.h>
#include <string.h>
#include "check.h"
#include "np_crc32c.h"

static void test_check_value(void)
{
	/* CRC-32C's catalogued check value (RFC 3720, B.4) */
	CHECK(np_crc32c(0, "123456789", 9) == 0xe3069283u, "%#x",
	      np_crc32c(0, "123456789", 9));
	CHECK(np_crc32c_soft(0, "123456789", 9) == 0xe3069283u);
	CHECK(np_crc32c(0, "", 0) == 0);
}

static void test_same_as_soft(void)
{
	static unsigned char buf[4096 + 8];
	uint32_t x = 1, bad = 0;

	for (size_t i = 0; i < sizeof(buf); i++) {
		x = x * 1103515245u + 12345u;
		buf[i] = (unsigned char)(x >> 16);
	}
	for (size_t off = 0; off < 8; off++)
		for (size_t len = 0; len <= 300; len++) {
			const unsigned char *p = buf + off;
			uint32_t c = np_crc32c(0, p, len);

			bad += c != np_crc32c_soft(0, p, len);
			/* continued from a running value */
			bad += np_crc32c(c, p + len, 4000 - len) !=
			       np_crc32c_soft(0, p, 4000);
		}
	CHECK(bad == 0, "%u mismatches", bad);
}

static const struct np_test_case cases[] = {
	NP_CASE(test_check_value),
	NP_CASE(test_same_as_soft),
	{ 0 }
};

int main(int argc, char **argv)
{
	return np_test_main(argc, argv, cases);
}
