/* SPDX-License-Identifier: GPL-2.0 */
/*
 * CRC-32C (Castagnoli), the checksum of the on-disk store.  Debian has no
 * small library for it (zlib's crc32 is the IEEE polynomial), so this is
 * the plain slicing-by-8 software version: ~1-2 GB/s, far more than the
 * store ever writes.
 */
#ifndef NP_CRC32C_H
#define NP_CRC32C_H

#include <stddef.h>
#include <stdint.h>

/* crc starts at 0; pass the previous result to continue a running CRC. */
uint32_t np_crc32c(uint32_t crc, const void *buf, size_t len);

#endif /* NP_CRC32C_H */
