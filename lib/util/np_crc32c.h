/* SPDX-License-Identifier: GPL-2.0 */
/*
 * CRC-32C (Castagnoli), the checksum of the on-disk store.  Debian has no
 * small library for it (zlib's crc32 is the IEEE polynomial), so this is
 * SSE4.2's crc32 instruction, or where the CPU lacks it the slicing-by-8
 * software version (~4 instructions a byte: the unwind cache checks a
 * table of libc's, 180 KiB, each time a recorder starts).
 */
#ifndef NP_CRC32C_H
#define NP_CRC32C_H

#include <stddef.h>
#include <stdint.h>

/* crc starts at 0; pass the previous result to continue a running CRC. */
uint32_t np_crc32c(uint32_t crc, const void *buf, size_t len);
/* The software version, whatever the CPU (the tests compare the two). */
uint32_t np_crc32c_soft(uint32_t crc, const void *buf, size_t len);

#endif /* NP_CRC32C_H */
