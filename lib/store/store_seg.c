// SPDX-License-Identifier: GPL-2.0
/*
 * Segment codec, version 3 (and reading 1-2): one aggregated slice <->
 * one self-contained, checksummed, zstd-compressed segment.
 *
 * Payload columns (docs/store-format.md): a column holds one field of
 * every row, so zstd sees long runs of similar small varints.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <zstd.h>
#include "store_seg.h"
#include "np_crc32c.h"
#include "store_codec.h"

/* ---- encoder ------------------------------------------------------ */

int np_seg_rec_cmp(const void *a, const void *b)
{
	const struct np_agg_entry *x = a, *y = b;

	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	if (x->comm != y->comm)
		return x->comm < y->comm ? -1 : 1;
	if (x->cpu != y->cpu)
		return x->cpu < y->cpu ? -1 : 1;
	if (x->stack != y->stack)
		return x->stack < y->stack ? -1 : 1;
	return 0;
}

/* Global -> local id maps of one segment; 0 means "not in segment". */
struct seg_maps {
	uint32_t *node, *frame, *str;
	uint32_t nr_nodes, nr_frames, nr_strs;	/* local counts */
};

static uint32_t map_str(struct seg_maps *m, uint32_t g)
{
	if (!m->str[g])
		m->str[g] = ++m->nr_strs;
	return m->str[g] - 1;
}

/* qsort has no context argument; encoding is not reentrant-critical,
 * but keep it per thread anyway. */
static __thread const struct np_stacktab *sort_st;

static int str_cmp(uint32_t x, uint32_t y)
{
	if (x == y)
		return 0;
	if (x == NP_ID_NONE || y == NP_ID_NONE)
		return x == NP_ID_NONE ? -1 : 1;
	return strcmp(np_stacktab_str_get(sort_st, x),
		      np_stacktab_str_get(sort_st, y));
}

/*
 * Frames by (dso, name, offset), compared as strings: the order depends
 * only on the segment's content, not on the order the live table saw
 * the frames, so names are interned in sorted order (adjacent strings
 * share prefixes; the name column is small deltas) and the offsets of
 * unnamed frames, and of frames in one function, are small deltas.
 */
static int frame_cmp(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	const struct np_sym *fx = np_stacktab_frame_get(sort_st, x);
	uint64_t ox = fx->offset;
	int kx = fx->kernel;
	const struct np_sym *fy = np_stacktab_frame_get(sort_st, y);
	uint32_t dx, dy, nx, ny;
	int c;

	np_stacktab_frame_strs(sort_st, x, &dx, &nx);
	np_stacktab_frame_strs(sort_st, y, &dy, &ny);
	c = str_cmp(dx, dy);
	if (!c && kx != fy->kernel)
		c = kx < fy->kernel ? -1 : 1;
	if (!c)
		c = str_cmp(nx, ny);
	if (!c && ox != fy->offset)
		c = ox < fy->offset ? -1 : 1;
	return c ? c : (x < y ? -1 : x > y);
}

/*
 * What frame i's offset is stored relative to (version 3): the previous
 * row's offset if both rows are in one DSO and one function (or both
 * unnamed there), else 0.  Rows are in frame_cmp order, so that is a
 * small step within a function or between unnamed addresses of a DSO,
 * and the plain (small) offset into a function otherwise.
 */
static uint64_t off_base(const struct np_stacktab *st, const uint32_t *lframe_g,
			 uint32_t i)
{
	uint32_t d0, n0, d1, n1;

	if (!i)
		return 0;
	np_stacktab_frame_strs(st, lframe_g[i - 1], &d0, &n0);
	np_stacktab_frame_strs(st, lframe_g[i], &d1, &n1);
	if (d0 != d1 || n0 != n1)
		return 0;
	return np_stacktab_frame_get(st, lframe_g[i - 1])->offset;
}

/*
 * Number the marked nodes (m->node[n] != 0) 1.. in depth-first preorder,
 * siblings in creation order; *lnode maps local id - 1 to global id.
 * Works in three arrays of the marked count, not of the whole table, and
 * without child lists: a parent's id is below its children's, so one
 * pass from the top down sums subtree sizes and one pass up hands each
 * child the next free preorder number under its parent.
 */
static int dfs_order(const struct np_stacktab *st, struct seg_maps *m,
		     uint32_t gn, uint32_t **lnode)
{
	uint32_t nn = 0, k, root = 1;	/* root's next free number */
	uint32_t *order, *cur, *pre;
	int ret = -1;

	for (uint32_t n = 1; n < gn; n++)
		nn += !!m->node[n];
	order = malloc((nn + 1) * sizeof(*order));
	cur = malloc((nn + 1) * sizeof(*cur));
	pre = malloc((nn + 1) * sizeof(*pre));
	if (!order || !cur || !pre)
		goto out;
	k = 0;
	for (uint32_t n = 1; n < gn; n++)
		if (m->node[n]) {
			order[k] = n;
			cur[k] = 1;		/* subtree size, for now */
			m->node[n] = ++k;	/* position + 1, for now */
		}
	for (k = nn; k--;) {
		uint32_t p, f;

		np_stacktab_node(st, order[k], &p, &f);
		if (p != NP_STACK_EMPTY)
			cur[m->node[p] - 1] += cur[k];
	}
	/* Ascending positions: a parent is numbered before its children,
	 * and siblings in creation order.  cur[k] turns from k's subtree
	 * size into the next number free for k's children. */
	for (k = 0; k < nn; k++) {
		uint32_t p, f, *c;

		np_stacktab_node(st, order[k], &p, &f);
		c = p == NP_STACK_EMPTY ? &root : &cur[m->node[p] - 1];
		pre[k] = *c;
		*c += cur[k];
		cur[k] = pre[k] + 1;
	}
	for (k = 0; k < nn; k++) {
		m->node[order[k]] = pre[k];
		cur[pre[k] - 1] = order[k];
	}
	m->nr_nodes = nn;
	*lnode = cur;
	cur = NULL;
	ret = 0;
out:
	free(order);
	free(cur);
	free(pre);
	return ret;
}

void np_seg_sort_frames(const struct np_stacktab *st, uint32_t *ids, uint32_t n)
{
	sort_st = st;
	qsort(ids, n, sizeof(*ids), frame_cmp);
}

int np_seg_preorder(const struct np_stacktab *st, uint32_t *mark,
		    uint32_t **order, uint32_t *nr)
{
	struct seg_maps m = { .node = mark };

	if (dfs_order(st, &m, np_stacktab_nr_nodes(st), order))
		return -ENOMEM;
	*nr = m.nr_nodes;
	return 0;
}

static void free_maps(struct seg_maps *m, struct np_agg_entry **sorted,
		      uint32_t **lframe_g, uint32_t **lstr_g, uint32_t **lnode,
		      uint32_t **depth)
{
	free(m->node);
	free(m->frame);
	free(m->str);
	m->node = m->frame = m->str = NULL;
	free(*sorted);
	free(*lframe_g);
	free(*lstr_g);
	free(*lnode);
	free(*depth);
	*sorted = NULL;
	*lframe_g = *lstr_g = *lnode = *depth = NULL;
}

/* The dso string of frame f (frames sorted by content: by dso first). */
static uint32_t frame_dso(const struct np_stacktab *st, uint32_t f)
{
	uint32_t d, nm;

	np_stacktab_frame_strs(st, f, &d, &nm);
	return d;
}

int np_seg_encode(const struct np_agg *a, uint64_t start_ns, uint64_t end_ns,
		  int level, void **out, size_t *outlen)
{
	const struct np_stacktab *st = np_agg_stacktab(a);
	uint32_t gn = np_stacktab_nr_nodes(st), gf = np_stacktab_nr_frames(st);
	uint32_t gs = np_stacktab_nr_strs(st), nr_ents;
	uint32_t *lframe_g = NULL, *lstr_g = NULL, *lnode = NULL, *depth = NULL;
	const struct np_agg_entry *ents = np_agg_entries(a, &nr_ents);
	struct np_agg_entry *sorted = NULL;
	struct seg_maps m = { 0 };
	struct np_seg_prefix pre = {
		.version = NP_SEG_VERSION,
		.hdr_size = sizeof(struct np_seg_hdr),
		.start_ns = start_ns,
		.end_ns = end_ns,
		.samples = np_agg_samples(a),
		.lost = np_agg_lost_count(a),
		.nr_records = nr_ents,
	};
	struct np_buf b = { 0 };
	uint8_t *seg = NULL;
	int ret = -ENOMEM;

	m.node = calloc(gn, sizeof(*m.node));
	m.frame = calloc(gf ? gf : 1, sizeof(*m.frame));
	m.str = calloc(gs ? gs : 1, sizeof(*m.str));
	sorted = malloc((nr_ents ? nr_ents : 1) * sizeof(*sorted));
	if (!m.node || !m.frame || !m.str || !sorted)
		goto out;
	if (nr_ents)	/* an empty profile's entries are NULL */
		memcpy(sorted, ents, nr_ents * sizeof(*sorted));
	qsort(sorted, nr_ents, sizeof(*sorted), np_seg_rec_cmp);

	/* Mark every node on the path of a recorded stack. */
	for (uint32_t i = 0; i < nr_ents; i++) {
		uint32_t n = sorted[i].stack, p, f;

		while (n != NP_STACK_EMPTY && !m.node[n]) {
			m.node[n] = 1;
			np_stacktab_node(st, n, &p, &f);
			n = p;
		}
	}
	/* Local node ids in depth-first preorder: a parent precedes its
	 * children and a call chain gets consecutive ids, so the parent
	 * column is mostly 1s.  Frames are sorted by content (frame_cmp),
	 * so the name and offset columns are small deltas. */
	lframe_g = malloc((gf ? gf : 1) * sizeof(*lframe_g));
	lstr_g = malloc((gs ? gs : 1) * sizeof(*lstr_g));
	if (!lframe_g || !lstr_g)
		goto out;
	for (uint32_t n = 1; n < gn; n++) {
		uint32_t p, f;

		if (!m.node[n])
			continue;
		np_stacktab_node(st, n, &p, &f);
		if (!m.frame[f]) {
			lframe_g[m.nr_frames++] = f;
			m.frame[f] = 1;
		}
	}
	sort_st = st;
	qsort(lframe_g, m.nr_frames, sizeof(*lframe_g), frame_cmp);
	for (uint32_t i = 0; i < m.nr_frames; i++)
		m.frame[lframe_g[i]] = i + 1;
	if (dfs_order(st, &m, gn, &lnode))
		goto out;
	/* Strings: frames' dso and names, then comms. */
	for (uint32_t i = 0; i < m.nr_frames; i++) {
		uint32_t d, nm;

		np_stacktab_frame_strs(st, lframe_g[i], &d, &nm);
		if (!m.str[d])
			lstr_g[m.nr_strs] = d;
		map_str(&m, d);
		if (nm != NP_ID_NONE) {
			if (!m.str[nm])
				lstr_g[m.nr_strs] = nm;
			map_str(&m, nm);
		}
	}
	/* Objects' build-ids, once per dso: (dso, build-id) pairs after
	 * the records; the dso ids are those of the frames above. */
	for (uint32_t i = 0, nd = m.nr_strs; i < nd; i++) {
		uint32_t bid = np_stacktab_build_id(st, lstr_g[i]);

		if (bid == NP_ID_NONE || m.str[bid])
			continue;
		lstr_g[m.nr_strs] = bid;
		map_str(&m, bid);
	}
	for (uint32_t i = 0; i < nr_ents; i++) {
		if (!m.str[sorted[i].comm])
			lstr_g[m.nr_strs] = sorted[i].comm;
		map_str(&m, sorted[i].comm);
	}

	/* strings: lengths column, then bytes */
	for (uint32_t i = 0; i < m.nr_strs; i++)
		np_put_var(&b, strlen(np_stacktab_str_get(st, lstr_g[i])));
	for (uint32_t i = 0; i < m.nr_strs; i++) {
		const char *s = np_stacktab_str_get(st, lstr_g[i]);

		np_put_bytes(&b, s, strlen(s));
	}
	/* frames: dso<<1|kernel, name+1 (0: none), offset */
	for (uint32_t i = 0; i < m.nr_frames; i++) {
		uint32_t d, nm;

		np_stacktab_frame_strs(st, lframe_g[i], &d, &nm);
		np_put_var(&b, (uint64_t)(m.str[d] - 1) << 1 |
			   np_stacktab_frame_get(st, lframe_g[i])->kernel);
	}
	for (uint32_t i = 0, prev = 0; i < m.nr_frames; i++) {
		uint32_t d, nm;

		np_stacktab_frame_strs(st, lframe_g[i], &d, &nm);
		if (nm == NP_ID_NONE) {
			np_put_var(&b, 0);
			continue;
		}
		/* names are interned in frame order: deltas are mostly +1 */
		np_put_var(&b, np_zigzag((int64_t)(m.str[nm] - 1) - prev) + 1);
		prev = m.str[nm] - 1;
	}
	for (uint32_t i = 0; i < m.nr_frames; i++) {
		uint64_t off = np_stacktab_frame_get(st, lframe_g[i])->offset;

		np_put_var(&b, np_zigzag((int64_t)(off - off_base(st, lframe_g, i))));
	}
	/* nodes: how many levels up from the previous node's depth the
	 * parent is (preorder: 0 = child of the previous node), then frame */
	depth = malloc((m.nr_nodes + 1) * sizeof(*depth));
	if (!depth)
		goto out;
	depth[0] = 0;
	for (uint32_t i = 0; i < m.nr_nodes; i++) {
		uint32_t p, f;

		np_stacktab_node(st, lnode[i], &p, &f);
		depth[i + 1] = depth[p == NP_STACK_EMPTY ? 0 : m.node[p]] + 1;
		np_put_var(&b, depth[i] + 1 - depth[i + 1]);
	}
	for (uint32_t i = 0; i < m.nr_nodes; i++) {
		uint32_t p, f;

		np_stacktab_node(st, lnode[i], &p, &f);
		np_put_var(&b, m.frame[f] - 1);
	}
	/* records, sorted, in the segment's ids */
	for (uint32_t i = 0; i < nr_ents; i++) {
		sorted[i].comm = m.str[sorted[i].comm] - 1;
		sorted[i].stack = sorted[i].stack == NP_STACK_EMPTY ? 0 :
				  m.node[sorted[i].stack];
	}
	pre.flags = np_seg_put_records(&b, sorted, nr_ents);
	{
		uint32_t nobj = 0;

		for (uint32_t i = 0; i < m.nr_frames; i++) {
			uint32_t d, nm;

			np_stacktab_frame_strs(st, lframe_g[i], &d, &nm);
			if (np_stacktab_build_id(st, d) != NP_ID_NONE &&
			    (!i || d != frame_dso(st, lframe_g[i - 1])))
				nobj++;
		}
		if (nobj) {
			pre.flags |= NP_SEG_F_OBJECTS;
			np_put_var(&b, nobj);
			for (int col = 0; col < 2; col++)
				for (uint32_t i = 0; i < m.nr_frames; i++) {
					uint32_t d, nm, bid;

					np_stacktab_frame_strs(st, lframe_g[i], &d, &nm);
					bid = np_stacktab_build_id(st, d);
					if (bid == NP_ID_NONE ||
					    (i && d == frame_dso(st, lframe_g[i - 1])))
						continue;
					np_put_var(&b, m.str[col ? bid : d] - 1);
				}
		}
	}
	if (b.oom)
		goto out;
	pre.nr_strings = m.nr_strs;
	pre.nr_frames = m.nr_frames;
	pre.nr_nodes = m.nr_nodes;
	/* Only the payload is needed from here: give the maps and orders
	 * back before zstd and the output buffer add to the peak. */
	free_maps(&m, &sorted, &lframe_g, &lstr_g, &lnode, &depth);

	seg = np_seg_pack(&b, &pre, level, outlen);
	if (!seg)
		goto out;
	np_seg_seal(seg, np_agg_period_ns(a));
	*out = seg;
	seg = NULL;
	ret = 0;
out:
	free(seg);
	free(b.p);
	free_maps(&m, &sorted, &lframe_g, &lstr_g, &lnode, &depth);
	return ret;
}

/* ---- decoder ------------------------------------------------------ */

int np_seg_header(const void *buf, size_t len, struct np_seg_info *info,
		  char *err, size_t errlen)
{
	struct np_seg_hdr4 h = { 0 };	/* v1-3 fill the first 96 bytes */
	size_t hs = sizeof(struct np_seg_hdr);
	uint32_t crc;

	if (len < hs) {
		snprintf(err, errlen, "truncated segment header (%zu bytes)", len);
		return -EAGAIN;
	}
	memcpy(&h, buf, hs);
	if (memcmp(h.magic, NP_SEG_MAGIC, sizeof(h.magic))) {
		snprintf(err, errlen, "not a segment (bad magic)");
		return -EBADMSG;
	}
	/* The header CRC sits in the last 4 bytes of the header, whose size
	 * the version gives; nothing else is trusted before it matches. */
	if (h.version == NP_SEG_VERSION_DICT && h.hdr_size == sizeof(h)) {
		hs = sizeof(h);
		if (len < hs) {
			snprintf(err, errlen, "truncated segment header (%zu bytes)",
				 len);
			return -EAGAIN;
		}
		memcpy(&h, buf, hs);
		crc = h.hdr_crc;
	} else {
		memcpy(&crc, (const uint8_t *)buf +
		       offsetof(struct np_seg_hdr, hdr_crc), sizeof(crc));
	}
	if (np_crc32c(0, &h, hs - 4) != crc) {
		snprintf(err, errlen, "segment header checksum mismatch");
		return -EBADMSG;
	}
	if (h.version < NP_SEG_VERSION_MIN || h.version > NP_SEG_VERSION_DICT ||
	    h.hdr_size != hs) {
		snprintf(err, errlen, "unsupported segment version %u", h.version);
		return -EBADMSG;
	}
	if (h.raw_size > NP_SEG_MAX_PAYLOAD || h.comp_size > NP_SEG_MAX_PAYLOAD) {
		snprintf(err, errlen, "segment claims an oversized payload");
		return -EBADMSG;
	}
	memset(info, 0, sizeof(*info));
	info->start_ns = h.start_ns;
	info->end_ns = h.end_ns;
	info->samples = h.samples;
	info->lost = h.lost;
	info->nr_strings = h.nr_strings;
	info->nr_frames = h.nr_frames;
	info->nr_nodes = h.nr_nodes;
	info->nr_records = h.nr_records;
	info->flags = h.flags;
	info->version = h.version;
	info->raw_size = h.raw_size;
	info->comp_size = h.comp_size;
	info->size = hs + h.comp_size;
	memcpy(&info->period_ns, (const uint8_t *)buf + NP_SEG_PERIOD_OFF(hs),
	       sizeof(info->period_ns));
	if (h.version == NP_SEG_VERSION_DICT) {
		info->epoch = h.epoch;
		info->dict_len = h.dict_len;
		info->dict_crc = h.dict_crc;
	}
	return 0;
}

int np_seg_decode(const void *buf, size_t len, struct np_agg *a, int64_t pid,
		  char *err, size_t errlen)
{
	struct np_stacktab *st = np_agg_stacktab(a);
	uint32_t *str = NULL, *slen = NULL, *frame = NULL, *node = NULL;
	uint32_t *objs = NULL, nobj = 0;
	struct np_seg_recs rc = { 0 };
	struct np_seg_info in;
	uint8_t *raw = NULL;
	struct np_rd r;
	int ret;

	ret = np_seg_header(buf, len, &in, err, errlen);
	if (ret)
		return ret;
	if (in.version == NP_SEG_VERSION_DICT) {
		snprintf(err, errlen, "segment needs the stack dictionary "
			 "dict-%016llx.npd of its store",
			 (unsigned long long)in.epoch);
		return -EBADMSG;
	}
	if (len < in.size) {
		snprintf(err, errlen, "truncated segment (%zu of %llu bytes)",
			 len, (unsigned long long)in.size);
		return -EBADMSG;
	}
	ret = np_seg_payload_check(buf, &in, err, errlen);
	if (ret)
		return ret;
	/* Every table entry takes at least one payload byte: bound the
	 * allocations below by raw_size before trusting the counts. */
	if ((uint64_t)in.nr_strings + in.nr_frames * 3ULL + in.nr_nodes * 2ULL +
	    in.nr_records * 5ULL > in.raw_size) {
		snprintf(err, errlen, "segment table counts exceed payload");
		return -EBADMSG;
	}
	str = malloc((in.nr_strings + 1) * sizeof(*str));
	slen = malloc((in.nr_strings + 1) * sizeof(*slen));
	frame = malloc((in.nr_frames + 1) * sizeof(*frame));
	node = malloc((in.nr_nodes + 1) * sizeof(*node));
	if (!str || !slen || !frame || !node ||
	    np_seg_recs_alloc(&rc, in.nr_records)) {
		snprintf(err, errlen, "out of memory");
		ret = -ENOMEM;
		goto out;
	}
	raw = np_seg_payload(buf, &in, err, errlen, &ret);
	if (!raw)
		goto out;
	ret = -EBADMSG;
	r = (struct np_rd){ .p = raw, .end = raw + in.raw_size };

	for (uint32_t i = 0; i < in.nr_strings && !r.bad; i++) {
		slen[i] = (uint32_t)np_get_var(&r);
		if (slen[i] > in.raw_size)
			r.bad = 1;
	}
	for (uint32_t i = 0; i < in.nr_strings && !r.bad; i++) {
		if ((size_t)(r.end - r.p) < slen[i] ||
		    memchr(r.p, '\0', slen[i])) {
			r.bad = 1;
			break;
		}
		str[i] = np_stacktab_str(st, (const char *)r.p, slen[i]);
		if (str[i] == NP_ID_NONE)
			goto oom;
		r.p += slen[i];
	}
	{
		/* Frame columns, read back to back into frame[] via temps. */
		uint32_t *dk = rc.pid, *nm = rc.comm;	/* reuse as scratch */
		uint32_t nf = in.nr_frames;

		if (nf > in.nr_records) {
			free(dk);
			free(nm);
			rc.pid = dk = malloc((nf + 1) * sizeof(*dk));
			rc.comm = nm = malloc((nf + 1) * sizeof(*nm));
			if (!dk || !nm)
				goto oom;
		}
		for (uint32_t i = 0; i < nf && !r.bad; i++) {
			uint64_t v = np_get_var(&r);

			if ((v >> 1) >= in.nr_strings)
				r.bad = 1;
			dk[i] = (uint32_t)v;
		}
		if (in.version >= 3) {
			uint64_t prev = 0;	/* wraps: one range check */

			for (uint32_t i = 0; i < nf && !r.bad; i++) {
				uint64_t v = np_get_var(&r);

				nm[i] = 0;
				if (!v)
					continue;
				prev += (uint64_t)np_unzigzag(v - 1);
				if (prev >= in.nr_strings)
					r.bad = 1;
				nm[i] = (uint32_t)prev + 1;
			}
		} else {
			for (uint32_t i = 0; i < nf && !r.bad; i++)
				nm[i] = np_get_id(&r, in.nr_strings + 1);
		}
		for (uint64_t i = 0, prev = 0; i < nf && !r.bad; i++) {
			uint64_t off;

			/* v3: relative to the previous row only within one
			 * DSO and function (off_base()) */
			if (in.version >= 3 && (!i || dk[i] >> 1 != dk[i - 1] >> 1 ||
						nm[i] != nm[i - 1]))
				prev = 0;
			off = in.version >= 2 ?
			      prev + (uint64_t)np_unzigzag(np_get_var(&r)) :
			      np_get_var(&r);

			prev = off;

			frame[i] = np_stacktab_frame_ids(st, str[dk[i] >> 1],
						nm[i] ? str[nm[i] - 1] : NP_ID_NONE,
						off, dk[i] & 1);
			if (frame[i] == NP_ID_NONE)
				goto oom;
		}
	}
	node[0] = NP_STACK_EMPTY;
	{
		uint32_t *par = rc.stack;		/* scratch */

		if (in.nr_nodes > in.nr_records) {
			free(rc.stack);
			rc.stack = par = malloc((in.nr_nodes + 1) * sizeof(*par));
			if (!par)
				goto oom;
		}
		if (in.version >= 2) {
			/* path[d]: the last node seen at depth d (0: root) */
			uint32_t *path = malloc((in.nr_nodes + 1) * sizeof(*path));
			uint32_t depth = 0;

			if (!path)
				goto oom;
			path[0] = 0;
			for (uint32_t i = 1; i <= in.nr_nodes && !r.bad; i++) {
				uint64_t up = np_get_var(&r);

				if (up > depth) {
					r.bad = 1;
					break;
				}
				depth = depth + 1 - (uint32_t)up;
				par[i - 1] = path[depth - 1];
				path[depth] = i;
			}
			free(path);
		} else {
			for (uint32_t i = 1; i <= in.nr_nodes && !r.bad; i++) {
				uint64_t d = np_get_var(&r);

				if (d < 1 || d > i)
					r.bad = 1;
				par[i - 1] = i - (uint32_t)d;
			}
		}
		for (uint32_t i = 1; i <= in.nr_nodes && !r.bad; i++) {
			uint32_t f = np_get_id(&r, in.nr_frames);

			if (r.bad)
				break;
			node[i] = np_stacktab_child(st, node[par[i - 1]], frame[f]);
			if (node[i] == NP_ID_NONE)
				goto oom;
		}
	}
	np_seg_get_records(&r, &rc, in.nr_strings, in.nr_nodes);
	if (!r.bad && (in.flags & NP_SEG_F_OBJECTS) &&
	    np_seg_get_objects(&r, in.nr_strings, &objs, &nobj))
		goto oom;
	if (r.bad || r.p != r.end) {
		snprintf(err, errlen, "malformed segment payload");
		ret = -EBADMSG;
		goto out;
	}
	/* Only a fully validated segment is merged. */
	for (uint32_t i = 0; i < nobj; i++)
		np_stacktab_set_build_id(st, str[objs[i]], str[objs[nobj + i]]);
	np_stacktab_sync_build_ids(st);
	for (uint32_t i = 0; i < rc.nr; i++) {
		if (pid >= 0 && rc.pid[i] != (uint64_t)pid)
			continue;
		if (np_agg_add(a, rc.pid[i], rc.cpu[i], str[rc.comm[i]],
			       node[rc.stack[i]], rc.count[i]))
			goto oom;
	}
	np_agg_lost(a, in.lost);
	ret = 0;
	goto out;
oom:
	snprintf(err, errlen, "out of memory");
	ret = -ENOMEM;
out:
	free(raw);
	free(str);
	free(slen);
	free(frame);
	free(node);
	free(objs);
	np_seg_recs_free(&rc);
	return ret;
}
