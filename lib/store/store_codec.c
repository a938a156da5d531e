// SPDX-License-Identifier: GPL-2.0
/*
 * What every segment version shares (store_codec.h): the header prefix,
 * compression and checksums, and the record columns.  The v3 codec
 * (store_seg.c) and the v4 one (store_dict.c) differ only in where their
 * ids point.
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>
#include "agg.h"
#include "store_codec.h"
#include "store_seg.h"
#include "np_crc32c.h"

/*
 * The zstd level for a payload of len bytes: segments are written once a
 * minute, so time hardly matters and memory does; level 19 only while its
 * match state stays small.
 */
#define NP_SEG_SMALL	(1U << 20)

int np_seg_level(size_t len)
{
	return len <= NP_SEG_SMALL ? 19 : 9;
}

uint8_t *np_seg_compress(size_t hdr_size, const struct np_buf *b, int level,
			 size_t *clen)
{
	size_t bound = ZSTD_compressBound(b->len);
	uint8_t *out = malloc(hdr_size + bound);

	if (!out)
		return NULL;
	if (level <= 0)
		level = np_seg_level(b->len);
	*clen = ZSTD_compress(out + hdr_size, bound, b->p, b->len, level);
	if (ZSTD_isError(*clen)) {
		free(out);
		return NULL;
	}
	return out;
}

uint8_t *np_seg_pack(const struct np_buf *b, const struct np_seg_prefix *p,
		     int level, size_t *seglen)
{
	size_t clen;
	uint8_t *seg = np_seg_compress(p->hdr_size, b, level, &clen);
	struct np_seg_prefix *h = (struct np_seg_prefix *)seg;
	uint32_t crc;

	if (!seg)
		return NULL;
	memset(seg, 0, p->hdr_size);
	memcpy(h, p, NP_SEG_PAYLOAD_CRC_OFF);
	memcpy(h->magic, NP_SEG_MAGIC, sizeof(h->magic));
	h->raw_size = b->len;
	h->comp_size = clen;
	crc = np_crc32c(0, seg + p->hdr_size, clen);
	memcpy(seg + NP_SEG_PAYLOAD_CRC_OFF, &crc, sizeof(crc));
	*seglen = p->hdr_size + clen;
	return seg;
}

void np_seg_seal(uint8_t *seg, uint64_t period_ns)
{
	const struct np_seg_prefix *h = (const struct np_seg_prefix *)seg;
	uint32_t crc;

	memcpy(seg + NP_SEG_PERIOD_OFF(h->hdr_size), &period_ns, sizeof(period_ns));
	crc = np_crc32c(0, seg, h->hdr_size - sizeof(crc));

	memcpy(seg + h->hdr_size - sizeof(crc), &crc, sizeof(crc));
}

static const uint8_t *payload_of(const void *buf, const struct np_seg_info *in)
{
	return (const uint8_t *)buf + (in->size - in->comp_size);
}

int np_seg_payload_check(const void *buf, const struct np_seg_info *in,
			 char *err, size_t errlen)
{
	uint32_t crc;

	/* buf may sit at any offset of a standalone file: no casts */
	memcpy(&crc, (const uint8_t *)buf + NP_SEG_PAYLOAD_CRC_OFF, sizeof(crc));
	if (np_crc32c(0, payload_of(buf, in), in->comp_size) != crc) {
		snprintf(err, errlen, "segment payload checksum mismatch");
		return -EBADMSG;
	}
	return 0;
}

uint8_t *np_seg_payload(const void *buf, const struct np_seg_info *in,
			char *err, size_t errlen, int *ret)
{
	uint8_t *raw = malloc(in->raw_size ? in->raw_size : 1);
	size_t n;

	if (!raw) {
		snprintf(err, errlen, "out of memory");
		*ret = -ENOMEM;
		return NULL;
	}
	n = ZSTD_decompress(raw, in->raw_size, payload_of(buf, in),
			    in->comp_size);
	if (ZSTD_isError(n) || n != in->raw_size) {
		snprintf(err, errlen, "segment payload does not decompress");
		free(raw);
		*ret = -EBADMSG;
		return NULL;
	}
	*ret = 0;
	return raw;
}

uint32_t np_seg_put_records(struct np_buf *b, const struct np_agg_entry *recs,
			    uint32_t nr)
{
	uint32_t flags = 0;

	for (uint32_t i = 0, prev = 0; i < nr; prev = recs[i++].pid)
		np_put_var(b, recs[i].pid - prev);
	for (uint32_t i = 0; i < nr; i++)
		np_put_var(b, recs[i].comm);
	for (uint32_t i = 0; i < nr; i++) {
		np_put_var(b, recs[i].cpu == NP_CPU_ANY ? 0 :
			      (uint64_t)recs[i].cpu + 1);
		if (recs[i].cpu != NP_CPU_ANY)
			flags |= NP_SEG_F_BY_CPU;
	}
	for (uint32_t i = 0, prev = 0; i < nr; prev = recs[i++].stack)
		np_put_var(b, np_zigzag((int64_t)recs[i].stack - prev));
	for (uint32_t i = 0; i < nr; i++)
		np_put_var(b, recs[i].count);
	return flags;
}

int np_seg_get_objects(struct np_rd *r, uint32_t nr_strings, uint32_t **objs,
		       uint32_t *nr)
{
	uint64_t n = np_get_var(r);

	*objs = NULL;
	*nr = 0;
	/* two ids a row, a byte each at least */
	if (r->bad || n > (uint64_t)(r->end - r->p) / 2) {
		r->bad = 1;
		return 0;
	}
	*objs = malloc((2 * n + 1) * sizeof(**objs));
	if (!*objs)
		return -ENOMEM;
	for (uint64_t i = 0; i < 2 * n && !r->bad; i++)
		(*objs)[i] = np_get_id(r, nr_strings);
	*nr = (uint32_t)n;
	return 0;
}

int np_seg_recs_alloc(struct np_seg_recs *rc, uint32_t nr)
{
	memset(rc, 0, sizeof(*rc));
	rc->pid = malloc((nr + 1ULL) * sizeof(*rc->pid));
	rc->comm = malloc((nr + 1ULL) * sizeof(*rc->comm));
	rc->cpu = malloc((nr + 1ULL) * sizeof(*rc->cpu));
	rc->stack = malloc((nr + 1ULL) * sizeof(*rc->stack));
	rc->count = malloc((nr + 1ULL) * sizeof(*rc->count));
	if (!rc->pid || !rc->comm || !rc->cpu || !rc->stack || !rc->count) {
		np_seg_recs_free(rc);
		return -ENOMEM;
	}
	rc->nr = nr;
	return 0;
}

void np_seg_recs_free(struct np_seg_recs *rc)
{
	free(rc->pid);
	free(rc->comm);
	free(rc->cpu);
	free(rc->stack);
	free(rc->count);
	memset(rc, 0, sizeof(*rc));
}

void np_seg_get_records(struct np_rd *r, struct np_seg_recs *rc,
			uint32_t nr_strs, uint32_t nr_nodes)
{
	uint32_t prev = 0;
	int64_t sprev = 0;

	for (uint32_t i = 0; i < rc->nr && !r->bad; i++) {
		uint64_t d = np_get_var(r);

		if (d > UINT32_MAX - prev)
			r->bad = 1;
		rc->pid[i] = prev += (uint32_t)d;
	}
	for (uint32_t i = 0; i < rc->nr && !r->bad; i++)
		rc->comm[i] = np_get_id(r, nr_strs);
	for (uint32_t i = 0; i < rc->nr && !r->bad; i++) {
		uint64_t c = np_get_var(r);

		if (c > UINT32_MAX)
			r->bad = 1;
		rc->cpu[i] = c ? (uint32_t)c - 1 : NP_CPU_ANY;
	}
	for (uint32_t i = 0; i < rc->nr && !r->bad; i++) {
		int64_t s = sprev + np_unzigzag(np_get_var(r));

		if (s < 0 || s > nr_nodes)
			r->bad = 1;
		rc->stack[i] = (uint32_t)s;
		sprev = s;
	}
	for (uint32_t i = 0; i < rc->nr && !r->bad; i++)
		rc->count[i] = np_get_var(r);
}
