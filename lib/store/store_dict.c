// SPDX-License-Identifier: GPL-2.0
/*
 * Stack dictionaries (segment version 4, docs/store-format.md).
 *
 * A self-contained segment re-stores every string, frame and stack node
 * its records use, and at steady state that repetition is most of the
 * bytes: the same programs run minute after minute.  So the directory
 * store keeps them once per epoch, in profile/dict-<epoch>.npd, an
 * append-only file of checksummed chunks; each chunk holds only the rows
 * that the slice being written added.  A version-4 segment holds just
 * the counts, keyed by dictionary ids, and names the epoch, the length
 * of the dictionary prefix it needs and that prefix's CRC.
 *
 * Damage is contained: a chunk is only ever read as part of a prefix
 * that some segment asked for and whose CRC it carries, so a damaged
 * chunk costs the segments that need it (those written after it in the
 * epoch), is reported once per segment, and never reaches an earlier
 * segment.  An epoch is bounded (store.c rolls it over) to bound that
 * loss and the writer's mirror of the tables.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <zstd.h>
#include "store_codec.h"
#include "np_crc32c.h"
#include "store_seg.h"
#include "np_grow.h"

/* A dictionary file bigger than this is not read (the writer rolls the
 * epoch over long before). */
#define NP_DICT_MAX_FILE	(512ULL << 20)

/* ---- writer --------------------------------------------------------- */

static int rec_cmp(const void *a, const void *b)
{
	const struct np_agg_entry *x = a, *y = b;

	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	if (x->comm != y->comm)
		return x->comm < y->comm ? -1 : 1;
	if (x->stack != y->stack)
		return x->stack < y->stack ? -1 : 1;
	if (x->cpu != y->cpu)
		return x->cpu < y->cpu ? -1 : 1;
	return 0;
}

/* String id of st in the epoch's table, interned if new. */
static uint32_t dict_str(struct np_stacktab *tab, const struct np_stacktab *st,
			 uint32_t id)
{
	const char *s = np_stacktab_str_get(st, id);

	return np_stacktab_str(tab, s, strlen(s));
}

/*
 * Object d of st is dd in the epoch: if its build-id is not the one the
 * dictionary has, intern it and note the pair for the chunk.  Once per
 * object and chunk (the first frame of d sets it).
 */
static int dict_object(struct np_epoch *ep, const struct np_stacktab *st,
		       uint32_t d, uint32_t dd)
{
	uint32_t b = np_stacktab_build_id(st, d), db, have;

	if (b == NP_ID_NONE)
		return 0;
	have = np_stacktab_build_id(ep->tab, dd);
	if (have != NP_ID_NONE && !strcmp(np_stacktab_str_get(ep->tab, have),
					  np_stacktab_str_get(st, b)))
		return 0;
	db = dict_str(ep->tab, st, b);
	if (db == NP_ID_NONE ||
	    np_grow((void **)&ep->objs, &ep->cap_objs, 2ULL * ep->nr_objs + 2,
		    sizeof(*ep->objs)))
		return -ENOMEM;
	np_stacktab_set_build_id(ep->tab, dd, db);
	ep->objs[2 * ep->nr_objs] = dd;
	ep->objs[2 * ep->nr_objs + 1] = db;
	ep->nr_objs++;
	return 0;
}

/*
 * The rows ep->tab gained since the last committed chunk, columns as in
 * a version-3 segment: strings (lengths, bytes); frames (dso << 1 |
 * kernel, name as 0 or 1 + zigzag delta from the previous named row,
 * offset as zigzag delta within one dso and name); nodes (parent: 0 for
 * the previous node, else 1 + zigzag delta from the last parent given;
 * frame).  Frames and nodes were interned in content order and preorder
 * (np_epoch_encode), so those deltas are small.
 */
static int encode_chunk(struct np_epoch *ep, int level, void **out,
			size_t *outlen)
{
	const struct np_stacktab *t = ep->tab;
	uint32_t ns = np_stacktab_nr_strs(t), nf = np_stacktab_nr_frames(t);
	uint32_t nn = np_stacktab_nr_nodes(t) - 1;	/* without the root */
	struct np_dict_hdr *h;
	struct np_buf b = { 0 };
	uint32_t prev = 0;
	uint8_t *chunk;
	size_t clen;

	*out = NULL;
	*outlen = 0;
	if (ns == ep->nstr && nf == ep->nfr && nn == ep->nnode && !ep->nr_objs)
		return 0;
	for (uint32_t i = ep->nstr; i < ns; i++)
		np_put_var(&b, strlen(np_stacktab_str_get(t, i)));
	for (uint32_t i = ep->nstr; i < ns; i++) {
		const char *s = np_stacktab_str_get(t, i);

		np_put_bytes(&b, s, strlen(s));
	}
	for (uint32_t i = ep->nfr; i < nf; i++) {
		uint32_t d, nm;

		np_stacktab_frame_strs(t, i, &d, &nm);
		np_put_var(&b, (uint64_t)d << 1 | np_stacktab_frame_get(t, i)->kernel);
	}
	for (uint32_t i = ep->nfr; i < nf; i++) {
		uint32_t d, nm;

		np_stacktab_frame_strs(t, i, &d, &nm);
		if (nm == NP_ID_NONE) {
			np_put_var(&b, 0);
			continue;
		}
		np_put_var(&b, np_zigzag((int64_t)nm - prev) + 1);
		prev = nm;
	}
	for (uint32_t i = ep->nfr; i < nf; i++) {
		uint64_t off = np_stacktab_frame_get(t, i)->offset, base = 0;
		uint32_t d0, n0, d1, n1;

		np_stacktab_frame_strs(t, i, &d1, &n1);
		if (i > ep->nfr) {
			np_stacktab_frame_strs(t, i - 1, &d0, &n0);
			if (d0 == d1 && n0 == n1)
				base = np_stacktab_frame_get(t, i - 1)->offset;
		}
		np_put_var(&b, np_zigzag((int64_t)(off - base)));
	}
	for (uint32_t i = ep->nnode + 1, pprev = 0; i <= nn; i++) {
		uint32_t p, f;

		/* 0: child of the previous node (a new call chain); else the
		 * parent, an older node, as a delta from the last such */
		np_stacktab_node(t, i, &p, &f);
		if (p == i - 1) {
			np_put_var(&b, 0);
			continue;
		}
		np_put_var(&b, np_zigzag((int64_t)p - pprev) + 1);
		pprev = p;
	}
	for (uint32_t i = ep->nnode + 1; i <= nn; i++) {
		uint32_t p, f;

		np_stacktab_node(t, i, &p, &f);
		np_put_var(&b, f);
	}
	/* objects whose build-id is new or changed: dsos, then build-ids */
	if (ep->nr_objs) {
		np_put_var(&b, ep->nr_objs);
		for (int col = 0; col < 2; col++)
			for (uint32_t i = 0; i < ep->nr_objs; i++)
				np_put_var(&b, ep->objs[2 * i + col]);
	}
	if (b.oom || b.len > NP_SEG_MAX_PAYLOAD) {
		free(b.p);
		return b.oom ? -ENOMEM : -EFBIG;
	}
	chunk = np_seg_compress(sizeof(*h), &b, level, &clen);
	if (!chunk) {
		free(b.p);
		return -ENOMEM;
	}
	h = (struct np_dict_hdr *)chunk;
	memset(h, 0, sizeof(*h));
	memcpy(h->magic, NP_DICT_MAGIC, 8);
	h->version = NP_DICT_VERSION;
	h->hdr_size = sizeof(*h);
	h->flags = ep->nr_objs ? NP_DICT_F_OBJECTS : 0;
	h->epoch = ep->id;
	h->offset = ep->len;
	h->base_strings = ep->nstr;
	h->base_frames = ep->nfr;
	h->base_nodes = ep->nnode;
	h->nr_strings = ns - ep->nstr;
	h->nr_frames = nf - ep->nfr;
	h->nr_nodes = nn - ep->nnode;
	h->raw_size = (uint32_t)b.len;
	h->comp_size = (uint32_t)clen;
	h->payload_crc = np_crc32c(0, chunk + sizeof(*h), clen);
	h->hdr_crc = np_crc32c(0, h, offsetof(struct np_dict_hdr, hdr_crc));
	free(b.p);
	*out = chunk;
	*outlen = sizeof(*h) + clen;
	return 0;
}

/*
 * Records sorted by (pid, comm, stack, cpu) with dictionary ids, as
 * columns: pid delta, comm, cpu + 1 (0: not recorded), stack as a
 * zigzag delta from the previous row, count.  Stack before cpu: a
 * process's stack seen on several CPUs repeats (delta 0), which codes
 * tighter than restarting the stack deltas per CPU.
 */
static int encode_segment(const struct np_epoch *ep, const struct np_agg *a,
			  const struct np_agg_entry *recs, uint32_t nr,
			  uint64_t start_ns, uint64_t end_ns, int level,
			  uint64_t dict_len, uint32_t dict_crc,
			  void **out, size_t *outlen)
{
	struct np_seg_prefix p = {
		.version = NP_SEG_VERSION_DICT,
		.hdr_size = sizeof(struct np_seg_hdr4),
		.start_ns = start_ns,
		.end_ns = end_ns,
		.samples = np_agg_samples(a),
		.lost = np_agg_lost_count(a),
		.nr_strings = np_stacktab_nr_strs(ep->tab),
		.nr_frames = np_stacktab_nr_frames(ep->tab),
		.nr_nodes = np_stacktab_nr_nodes(ep->tab) - 1,
		.nr_records = nr,
	};
	struct np_buf b = { 0 };
	struct np_seg_hdr4 *h;
	uint8_t *seg;

	p.flags = np_seg_put_records(&b, recs, nr);
	if (b.oom || b.len > NP_SEG_MAX_PAYLOAD) {
		free(b.p);
		return b.oom ? -ENOMEM : -EFBIG;
	}
	seg = np_seg_pack(&b, &p, level, outlen);
	free(b.p);
	if (!seg)
		return -ENOMEM;
	h = (struct np_seg_hdr4 *)seg;
	h->dict_crc = dict_crc;
	h->epoch = ep->id;
	h->dict_len = dict_len;
	np_seg_seal(seg, np_agg_period_ns(a));
	*out = seg;
	return 0;
}

uint32_t np_slice_nodes(const struct np_agg *a)
{
	const struct np_stacktab *st = np_agg_stacktab(a);
	uint32_t gn = np_stacktab_nr_nodes(st), nr, count = 0;
	const struct np_agg_entry *ents = np_agg_entries(a, &nr);
	uint8_t *seen = calloc((gn + 7) / 8, 1);

	if (!seen)
		return UINT32_MAX;
	for (uint32_t i = 0; i < nr; i++) {
		uint32_t n = ents[i].stack, p, f;

		while (n != NP_STACK_EMPTY && !(seen[n / 8] & 1u << (n % 8))) {
			seen[n / 8] |= 1u << (n % 8);
			count++;
			np_stacktab_node(st, n, &p, &f);
			n = p;
		}
	}
	free(seen);
	return count;
}

int np_epoch_encode(struct np_epoch *ep, const struct np_agg *a,
		    uint64_t start_ns, uint64_t end_ns, int level,
		    void **chunk, size_t *chunklen, void **seg, size_t *seglen)
{
	const struct np_stacktab *st = np_agg_stacktab(a);
	uint32_t gn = np_stacktab_nr_nodes(st), gf = np_stacktab_nr_frames(st);
	uint32_t nr, nf = 0, nn = 0;
	const struct np_agg_entry *ents = np_agg_entries(a, &nr);
	uint32_t *mark, *fmap, *fids, *dnode, *order = NULL;
	struct np_agg_entry *recs;
	int ret = -ENOMEM;

	*chunk = *seg = NULL;
	*chunklen = *seglen = 0;
	if (!ep->tab && !(ep->tab = np_stacktab_new()))
		return -ENOMEM;
	ep->nr_objs = 0;
	mark = calloc(gn, sizeof(*mark));
	dnode = malloc(gn * sizeof(*dnode));
	fmap = malloc((gf ? gf : 1) * sizeof(*fmap));
	fids = malloc((gf ? gf : 1) * sizeof(*fids));
	recs = malloc((nr ? nr : 1) * sizeof(*recs));
	if (!mark || !dnode || !fmap || !fids || !recs)
		goto out;

	/* The slice's nodes: every node on the path of a recorded stack. */
	for (uint32_t i = 0; i < nr; i++) {
		uint32_t n = ents[i].stack, p, f;

		while (n != NP_STACK_EMPTY && !mark[n]) {
			mark[n] = 1;
			np_stacktab_node(st, n, &p, &f);
			n = p;
		}
	}
	/* Their frames, interned in content order so that the new ones
	 * (and their strings) get ids in that order: the chunk's name and
	 * offset columns then delta-code as well as a v3 segment's. */
	memset(fmap, 0xff, (gf ? gf : 1) * sizeof(*fmap));
	for (uint32_t n = 1; n < gn; n++) {
		uint32_t p, f;

		if (!mark[n])
			continue;
		np_stacktab_node(st, n, &p, &f);
		if (fmap[f] == NP_ID_NONE) {
			fmap[f] = 0;
			fids[nf++] = f;
		}
	}
	np_seg_sort_frames(st, fids, nf);
	for (uint32_t i = 0; i < nf; i++) {
		const struct np_sym *sym = np_stacktab_frame_get(st, fids[i]);
		uint32_t d, nm, dd, dn = NP_ID_NONE;

		np_stacktab_frame_strs(st, fids[i], &d, &nm);
		dd = dict_str(ep->tab, st, d);
		if (nm != NP_ID_NONE)
			dn = dict_str(ep->tab, st, nm);
		if (dd == NP_ID_NONE || (nm != NP_ID_NONE && dn == NP_ID_NONE))
			goto out;
		fmap[fids[i]] = np_stacktab_frame_ids(ep->tab, dd, dn,
						      sym->offset, sym->kernel);
		if (fmap[fids[i]] == NP_ID_NONE || dict_object(ep, st, d, dd))
			goto out;
	}
	/* Nodes in preorder: a new call chain gets consecutive ids, so the
	 * chunk's parent column is mostly 1s. */
	if (np_seg_preorder(st, mark, &order, &nn))
		goto out;
	dnode[NP_STACK_EMPTY] = NP_STACK_EMPTY;
	for (uint32_t k = 0; k < nn; k++) {
		uint32_t g = order[k], p, f;

		np_stacktab_node(st, g, &p, &f);
		dnode[g] = np_stacktab_child(ep->tab, dnode[p], fmap[f]);
		if (dnode[g] == NP_ID_NONE)
			goto out;
	}
	for (uint32_t i = 0; i < nr; i++) {
		recs[i] = ents[i];
		recs[i].comm = dict_str(ep->tab, st, ents[i].comm);
		recs[i].stack = dnode[ents[i].stack];
		if (recs[i].comm == NP_ID_NONE)
			goto out;
	}
	free(mark);
	free(dnode);
	free(fmap);
	free(fids);
	free(order);
	mark = dnode = fmap = fids = order = NULL;
	qsort(recs, nr, sizeof(*recs), rec_cmp);

	ret = encode_chunk(ep, level, chunk, chunklen);
	if (!ret)
		ret = encode_segment(ep, a, recs, nr, start_ns, end_ns, level,
				     ep->len + *chunklen,
				     np_crc32c(ep->crc, *chunk, *chunklen),
				     seg, seglen);
	if (ret) {
		free(*chunk);
		*chunk = NULL;
		*chunklen = 0;
	}
out:
	free(mark);
	free(dnode);
	free(fmap);
	free(fids);
	free(order);
	free(recs);
	return ret;
}

void np_epoch_commit(struct np_epoch *ep, const void *chunk, size_t chunklen)
{
	struct np_dict_hdr h;

	if (!chunk)
		return;
	memcpy(&h, chunk, sizeof(h));
	ep->len += chunklen;
	ep->crc = np_crc32c(ep->crc, chunk, chunklen);
	ep->nstr = h.base_strings + h.nr_strings;
	ep->nfr = h.base_frames + h.nr_frames;
	ep->nnode = h.base_nodes + h.nr_nodes;
}

void np_epoch_reset(struct np_epoch *ep)
{
	if (ep->fd >= 0)
		close(ep->fd);
	np_stacktab_free(ep->tab);
	free(ep->objs);
	memset(ep, 0, sizeof(*ep));
	ep->fd = -1;
}

/* ---- reader --------------------------------------------------------- */

struct rd_str {
	uint64_t off;		/* into chars */
	uint32_t len;
};

struct rd_frame {
	uint32_t dso, name;	/* string ids; name NP_ID_NONE: none */
	uint64_t offset;
	uint8_t kernel;
};

struct rd_node {
	uint32_t parent, frame;
};

/* After each good chunk: the prefix's length, CRC and table sizes. */
struct rd_mark {
	uint64_t end;
	uint32_t crc, ns, nf, nn;
};

struct np_dict_rd {
	char pdir[4096];
	uint64_t epoch;
	int loaded;
	uint8_t *file;
	size_t flen;
	uint64_t good;		/* bytes of verified, decoded chunks */
	uint32_t crc;		/* crc32c of those */
	char why[200];		/* set: the chunk at `good` is unusable */
	/* tables (strings point into chars, by offset) */
	char *chars;
	size_t clen, ccap;
	struct rd_str *str;
	uint32_t ns, cap_s;
	struct rd_frame *fr;
	uint32_t nf, cap_f;
	struct rd_node *nd;	/* [0] is the root */
	uint32_t nn, cap_n;	/* without the root */
	struct rd_mark *mk;
	uint32_t nmk, cap_mk;
	uint32_t *sbid;		/* by string: an object's build-id string */
	uint32_t cap_sbid;	/* (NP_ID_NONE: none), as last decoded */
	uint64_t bid_gen;	/* counts the chunks that changed one */
	uint64_t mapped_bid_gen;	/* bid_gen the maps' agg has */
	/* dictionary id -> id in the reader's np_agg, NP_ID_NONE: not yet */
	const struct np_agg *agg;
	uint64_t agg_gen;		/* agg's np_stacktab_gen() */
	uint32_t *mstr, *mfr, *mnode;
	uint32_t mns, mnf, mnn;	/* entries the maps cover */
	uint32_t *path;		/* scratch for map_node */
};

struct np_dict_rd *np_dict_rd_new(const char *pdir)
{
	struct np_dict_rd *rd = calloc(1, sizeof(*rd));

	if (rd)
		snprintf(rd->pdir, sizeof(rd->pdir), "%s", pdir);
	return rd;
}

static void rd_unload(struct np_dict_rd *rd)
{
	char pdir[4096];

	memcpy(pdir, rd->pdir, sizeof(pdir));
	free(rd->file);
	free(rd->chars);
	free(rd->str);
	free(rd->fr);
	free(rd->nd);
	free(rd->mk);
	free(rd->sbid);
	free(rd->mstr);
	free(rd->mfr);
	free(rd->mnode);
	free(rd->path);
	memset(rd, 0, sizeof(*rd));
	memcpy(rd->pdir, pdir, sizeof(pdir));
}

void np_dict_rd_free(struct np_dict_rd *rd)
{
	if (!rd)
		return;
	rd_unload(rd);
	free(rd);
}

static int rd_load(struct np_dict_rd *rd, uint64_t epoch)
{
	char path[4200];
	void *buf;
	size_t len;
	int ret;

	if (rd->loaded && rd->epoch == epoch)
		return 0;
	rd_unload(rd);
	rd->nd = malloc(sizeof(*rd->nd));
	rd->mk = malloc(sizeof(*rd->mk));
	if (!rd->nd || !rd->mk) {
		rd_unload(rd);
		return -ENOMEM;
	}
	rd->cap_n = rd->cap_mk = 1;
	rd->nd[0].parent = rd->nd[0].frame = 0;
	/* the empty prefix: what a segment without stacks may name */
	memset(&rd->mk[0], 0, sizeof(rd->mk[0]));
	rd->nmk = 1;
	snprintf(path, sizeof(path), "%s/dict-%016llx.npd", rd->pdir,
		 (unsigned long long)epoch);
	ret = np_read_file(path, NP_DICT_MAX_FILE, &buf, &len);
	/* Not loaded: the next segment tries again, not "damaged" for good. */
	if (np_store_err_transient(ret)) {
		rd_unload(rd);
		return ret;
	}
	rd->epoch = epoch;
	rd->loaded = 1;
	if (ret) {
		snprintf(rd->why, sizeof(rd->why), "dict-%016llx.npd: %s",
			 (unsigned long long)epoch, strerror(-ret));
		return 0;
	}
	rd->file = buf;
	rd->flen = len;
	return 0;
}

/* One map grown from *have to want entries, the new ones unmapped. */
static int map_fit(uint32_t **m, uint32_t *have, uint32_t want)
{
	uint32_t *n;

	if (want <= *have)
		return 0;
	n = realloc(*m, (size_t)want * sizeof(*n));
	if (!n)
		return -ENOMEM;
	memset(n + *have, 0xff, (size_t)(want - *have) * sizeof(*n));
	*m = n;
	*have = want;
	return 0;
}

/*
 * The dictionary of the epoch being written grows: a reader kept open
 * across slices (the fleet exporter's) reads on from the end of what it
 * holds when a segment needs more (the file is only appended to, and
 * the segment's prefix CRC still vouches for the whole prefix).  Only
 * the new bytes: reading the whole file again each slice copied it and
 * faulted in a fresh buffer (mmapped past 256 KiB in nmiprofd).
 */
static int rd_refresh(struct np_dict_rd *rd)
{
	char path[4200];
	struct stat sb;
	size_t got;
	uint8_t *b;
	int fd, ret = 0;

	snprintf(path, sizeof(path), "%s/dict-%016llx.npd", rd->pdir,
		 (unsigned long long)rd->epoch);
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0) {
		ret = -errno;
		return np_store_err_transient(ret) ? ret : 0;
	}
	if (fstat(fd, &sb) || !S_ISREG(sb.st_mode) ||
	    (uint64_t)sb.st_size > NP_DICT_MAX_FILE ||
	    (uint64_t)sb.st_size <= rd->flen)
		goto out;	/* no longer: the checks after say so */
	b = realloc(rd->file, (size_t)sb.st_size);
	if (!b) {
		ret = -ENOMEM;
		goto out;
	}
	rd->file = b;
	for (got = rd->flen; got < (size_t)sb.st_size;) {
		ssize_t n = pread(fd, b + got, (size_t)sb.st_size - got,
				  (off_t)got);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && np_store_err_transient(-errno)) {
			ret = -errno;
			break;
		}
		if (n <= 0)
			break;	/* shrank under us: use what is there */
		got += (size_t)n;
	}
	rd->flen = got;	/* what was read is good to use even on an error */
out:
	close(fd);
	return ret;
}

/* Decode the chunk at rd->good; on damage set rd->why.  -ENOMEM only. */
static int rd_chunk(struct np_dict_rd *rd)
{
	uint64_t off = rd->good, total;
	const char *reason = NULL;
	struct np_dict_hdr h;
	uint8_t *raw = NULL;
	struct np_rd r;
	size_t n;
	uint32_t ns, nf, nn, *objs = NULL, nobj = 0;

	if (rd->flen - off < sizeof(h)) {
		reason = "truncated";
		goto bad;
	}
	memcpy(&h, rd->file + off, sizeof(h));
	if (memcmp(h.magic, NP_DICT_MAGIC, 8)) {
		reason = "bad magic";
		goto bad;
	}
	if (np_crc32c(0, &h, offsetof(struct np_dict_hdr, hdr_crc)) != h.hdr_crc) {
		reason = "header checksum mismatch";
		goto bad;
	}
	if (h.version != NP_DICT_VERSION || h.hdr_size != sizeof(h)) {
		reason = "unsupported chunk version";
		goto bad;
	}
	/* A chunk must continue exactly where the tables stand: a chunk of
	 * another file or position cannot pass for this one. */
	if (h.epoch != rd->epoch || h.offset != off || h.base_strings != rd->ns ||
	    h.base_frames != rd->nf || h.base_nodes != rd->nn) {
		reason = "chunk out of place";
		goto bad;
	}
	if (h.raw_size > NP_SEG_MAX_PAYLOAD ||
	    h.comp_size > rd->flen - off - sizeof(h)) {
		reason = h.raw_size > NP_SEG_MAX_PAYLOAD ? "oversized" : "truncated";
		goto bad;
	}
	if (np_crc32c(0, rd->file + off + sizeof(h), h.comp_size) != h.payload_crc) {
		reason = "payload checksum mismatch";
		goto bad;
	}
	/* Every row takes at least a byte per column: bound the counts by
	 * raw_size before allocating for them. */
	if ((uint64_t)h.nr_strings + h.nr_frames * 3ULL + h.nr_nodes * 2ULL >
	    h.raw_size) {
		reason = "table counts exceed payload";
		goto bad;
	}
	ns = rd->ns + h.nr_strings;
	nf = rd->nf + h.nr_frames;
	nn = rd->nn + h.nr_nodes;
	if (np_grow((void **)&rd->str, &rd->cap_s, ns, sizeof(*rd->str)) ||
	    np_grow((void **)&rd->fr, &rd->cap_f, nf, sizeof(*rd->fr)) ||
	    np_grow((void **)&rd->nd, &rd->cap_n, (uint64_t)nn + 1, sizeof(*rd->nd)) ||
	    np_grow((void **)&rd->mk, &rd->cap_mk, rd->nmk + 1ULL, sizeof(*rd->mk)))
		return -ENOMEM;
	raw = malloc(h.raw_size ? h.raw_size : 1);
	if (!raw)
		return -ENOMEM;
	n = ZSTD_decompress(raw, h.raw_size, rd->file + off + sizeof(h),
			    h.comp_size);
	if (ZSTD_isError(n) || n != h.raw_size) {
		reason = "payload does not decompress";
		goto bad;
	}
	r.p = raw;
	r.end = raw + n;
	r.bad = 0;
	/* strings: lengths, then bytes (appended to chars) */
	total = 0;
	for (uint32_t i = rd->ns; i < ns && !r.bad; i++) {
		uint64_t l = np_get_var(&r);

		if (l > h.raw_size)
			r.bad = 1;
		rd->str[i].len = (uint32_t)l;
		total += l;
	}
	if (!r.bad && total > (uint64_t)(r.end - r.p))
		r.bad = 1;
	if (!r.bad && rd->clen + total + 1 > rd->ccap) {
		size_t nc = rd->ccap ? rd->ccap : 65536;
		char *c;

		while (nc < rd->clen + total + 1)
			nc *= 2;
		c = realloc(rd->chars, nc);
		if (!c) {
			free(raw);
			return -ENOMEM;
		}
		rd->chars = c;
		rd->ccap = nc;
	}
	for (uint32_t i = rd->ns; i < ns && !r.bad; i++) {
		if (memchr(r.p, '\0', rd->str[i].len)) {
			r.bad = 1;
			break;
		}
		rd->str[i].off = rd->clen;
		memcpy(rd->chars + rd->clen, r.p, rd->str[i].len);
		rd->clen += rd->str[i].len;
		r.p += rd->str[i].len;
	}
	/* frames */
	for (uint32_t i = rd->nf; i < nf && !r.bad; i++) {
		uint64_t v = np_get_var(&r);

		if ((v >> 1) >= ns)
			r.bad = 1;
		rd->fr[i].dso = (uint32_t)(v >> 1);
		rd->fr[i].kernel = v & 1;
	}
	{
		uint64_t prev = 0;	/* wraps: one range check */

		for (uint32_t i = rd->nf; i < nf && !r.bad; i++) {
			uint64_t v = np_get_var(&r);

			rd->fr[i].name = NP_ID_NONE;
			if (!v)
				continue;
			prev += (uint64_t)np_unzigzag(v - 1);
			if (prev >= ns)
				r.bad = 1;
			rd->fr[i].name = (uint32_t)prev;
		}
	}
	for (uint32_t i = rd->nf; i < nf && !r.bad; i++) {
		uint64_t base = 0;

		if (i > rd->nf && rd->fr[i - 1].dso == rd->fr[i].dso &&
		    rd->fr[i - 1].name == rd->fr[i].name)
			base = rd->fr[i - 1].offset;
		rd->fr[i].offset = base + (uint64_t)np_unzigzag(np_get_var(&r));
	}
	/* nodes: parent (0: the previous node, else 1 + zigzag delta from
	 * the last parent given; always an earlier node), frame */
	{
		uint64_t pprev = 0;	/* wraps: one range check */

		for (uint32_t i = rd->nn + 1; i <= nn && !r.bad; i++) {
			uint64_t v = np_get_var(&r);

			if (!v) {
				rd->nd[i].parent = i - 1;
				continue;
			}
			pprev += (uint64_t)np_unzigzag(v - 1);
			if (pprev >= i)
				r.bad = 1;
			rd->nd[i].parent = (uint32_t)pprev;
		}
	}
	for (uint32_t i = rd->nn + 1; i <= nn && !r.bad; i++)
		rd->nd[i].frame = np_get_id(&r, nf);
	if (!r.bad && (h.flags & NP_DICT_F_OBJECTS)) {
		if (np_seg_get_objects(&r, ns, &objs, &nobj) ||
		    map_fit(&rd->sbid, &rd->cap_sbid, ns)) {
			free(objs);
			free(raw);
			return -ENOMEM;
		}
	}
	if (r.bad || r.p != r.end) {
		free(objs);
		reason = "malformed payload";
		goto bad;
	}
	for (uint32_t i = 0; i < nobj; i++)
		rd->sbid[objs[i]] = objs[nobj + i];
	if (nobj)
		rd->bid_gen++;
	free(objs);
	free(raw);
	rd->ns = ns;
	rd->nf = nf;
	rd->nn = nn;
	rd->crc = np_crc32c(rd->crc, rd->file + off, sizeof(h) + h.comp_size);
	rd->good = off + sizeof(h) + h.comp_size;
	rd->mk[rd->nmk++] = (struct rd_mark){ rd->good, rd->crc, ns, nf, nn };
	return 0;
bad:
	free(raw);
	snprintf(rd->why, sizeof(rd->why), "dict-%016llx.npd is damaged at "
		 "offset %llu (%s)", (unsigned long long)rd->epoch,
		 (unsigned long long)off, reason);
	return 0;
}

/* Make the maps to a's ids cover the tables (fresh ones for a new a). */
static int rd_maps(struct np_dict_rd *rd, const struct np_agg *a)
{
	uint32_t *p;

	/* The maps hold ids of a's stack table: void for another a, and
	 * once np_agg_reset() has cleared the table (the fleet exporter). */
	if (rd->agg != a || rd->agg_gen != np_stacktab_gen(np_agg_stacktab(a))) {
		rd->mns = rd->mnf = rd->mnn = 0;
		rd->mapped_bid_gen = 0;
		rd->agg = a;
		rd->agg_gen = np_stacktab_gen(np_agg_stacktab(a));
	}
	if (map_fit(&rd->mstr, &rd->mns, rd->ns) ||
	    map_fit(&rd->mfr, &rd->mnf, rd->nf) ||
	    map_fit(&rd->mnode, &rd->mnn, rd->nn + 1))
		return -ENOMEM;
	p = realloc(rd->path, ((size_t)rd->nn + 1) * sizeof(*p));
	if (!p)
		return -ENOMEM;
	rd->path = p;
	return 0;
}

static uint32_t map_str(struct np_dict_rd *rd, struct np_stacktab *st,
			uint32_t i)
{
	if (rd->mstr[i] == NP_ID_NONE)
		rd->mstr[i] = np_stacktab_str(st, rd->chars + rd->str[i].off,
					      rd->str[i].len);
	return rd->mstr[i];
}

/* Dictionary object d's build-id, onto the reader's dso (mapped). */
static void map_build_id(struct np_dict_rd *rd, struct np_stacktab *st,
			 uint32_t d)
{
	uint32_t b;

	if (d >= rd->cap_sbid || rd->sbid[d] == NP_ID_NONE ||
	    rd->mstr[d] == NP_ID_NONE)
		return;
	b = map_str(rd, st, rd->sbid[d]);
	if (b != NP_ID_NONE)
		np_stacktab_set_build_id(st, rd->mstr[d], b);
}

static uint32_t map_frame(struct np_dict_rd *rd, struct np_stacktab *st,
			  uint32_t i)
{
	const struct rd_frame *f = &rd->fr[i];
	uint32_t d, nm = NP_ID_NONE;

	if (rd->mfr[i] != NP_ID_NONE)
		return rd->mfr[i];
	d = map_str(rd, st, f->dso);
	if (f->name != NP_ID_NONE)
		nm = map_str(rd, st, f->name);
	if (d == NP_ID_NONE || (f->name != NP_ID_NONE && nm == NP_ID_NONE))
		return NP_ID_NONE;
	rd->mfr[i] = np_stacktab_frame_ids(st, d, nm, f->offset, f->kernel);
	map_build_id(rd, st, f->dso);
	return rd->mfr[i];
}

/* The reader's node for dictionary node i: its unmapped ancestors are
 * interned from the outermost down. */
static uint32_t map_node(struct np_dict_rd *rd, struct np_stacktab *st,
			 uint32_t i)
{
	uint32_t depth = 0;

	if (!i)
		return NP_STACK_EMPTY;
	for (uint32_t n = i; n && rd->mnode[n] == NP_ID_NONE;
	     n = rd->nd[n].parent)
		rd->path[depth++] = n;
	while (depth--) {
		uint32_t n = rd->path[depth], p = rd->nd[n].parent;
		uint32_t f = map_frame(rd, st, rd->nd[n].frame);

		if (f == NP_ID_NONE)
			return NP_ID_NONE;
		rd->mnode[n] = np_stacktab_child(st, p ? rd->mnode[p] :
						 NP_STACK_EMPTY, f);
		if (rd->mnode[n] == NP_ID_NONE)
			return NP_ID_NONE;
	}
	return rd->mnode[i];
}

/* Bring rd to the prefix a segment needs; the mark at its end, or NULL
 * with err set and *fail -errno (transient: try again) or 0 (damage). */
static const struct rd_mark *rd_need(struct np_dict_rd *rd,
				     const struct np_seg_info *in, int *fail,
				     char *err, size_t errlen)
{
	uint32_t lo = 0, hi;

	*fail = rd_load(rd, in->epoch);
	if (*fail) {
		snprintf(err, errlen, "its stack dictionary: %s", strerror(-*fail));
		return NULL;
	}
	if (rd->file && !rd->why[0] && rd->flen < in->dict_len) {
		*fail = rd_refresh(rd);
		if (*fail) {
			snprintf(err, errlen, "its stack dictionary: %s",
				 strerror(-*fail));
			return NULL;
		}
	}
	while (rd->good < in->dict_len && !rd->why[0] && rd->file) {
		if (rd_chunk(rd)) {
			*fail = -ENOMEM;
			snprintf(err, errlen, "out of memory");
			return NULL;
		}
	}
	if (rd->good < in->dict_len) {
		snprintf(err, errlen, "its stack dictionary %s",
			 rd->why[0] ? rd->why : "is too short");
		return NULL;
	}
	hi = rd->nmk;
	while (lo < hi) {
		uint32_t mid = (lo + hi) / 2;

		if (rd->mk[mid].end < in->dict_len)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == rd->nmk || rd->mk[lo].end != in->dict_len ||
	    rd->mk[lo].crc != in->dict_crc || rd->mk[lo].ns != in->nr_strings ||
	    rd->mk[lo].nf != in->nr_frames || rd->mk[lo].nn != in->nr_nodes) {
		snprintf(err, errlen, "segment does not match its stack "
			 "dictionary dict-%016llx.npd",
			 (unsigned long long)in->epoch);
		return NULL;
	}
	return &rd->mk[lo];
}

int np_seg_decode_dict(struct np_dict_rd *rd, const void *buf, size_t len,
		       struct np_agg *a, int64_t pid, char *err, size_t errlen)
{
	struct np_stacktab *st = np_agg_stacktab(a);
	struct np_seg_recs rc = { 0 };
	const struct rd_mark *mk;
	struct np_seg_info in;
	uint8_t *raw = NULL;
	struct np_rd r;
	int ret, fail;

	ret = np_seg_header(buf, len, &in, err, errlen);
	if (ret)
		return ret;
	if (in.version != NP_SEG_VERSION_DICT)
		return np_seg_decode(buf, len, a, pid, err, errlen);
	if (len < in.size) {
		snprintf(err, errlen, "truncated segment (%zu of %llu bytes)",
			 len, (unsigned long long)in.size);
		return -EBADMSG;
	}
	ret = np_seg_payload_check(buf, &in, err, errlen);
	if (ret)
		return ret;
	if (in.nr_records * 5ULL > in.raw_size) {
		snprintf(err, errlen, "segment table counts exceed payload");
		return -EBADMSG;
	}
	mk = rd_need(rd, &in, &fail, err, errlen);
	if (!mk)
		return fail ? fail : -EBADMSG;
	if (rd_maps(rd, a) || np_seg_recs_alloc(&rc, in.nr_records))
		goto oom;
	raw = np_seg_payload(buf, &in, err, errlen, &ret);
	if (!raw)
		goto out;
	r = (struct np_rd){ .p = raw, .end = raw + in.raw_size };
	np_seg_get_records(&r, &rc, mk->ns, mk->nn);
	if (r.bad || r.p != r.end) {
		snprintf(err, errlen, "malformed segment payload");
		ret = -EBADMSG;
		goto out;
	}
	/* Only a fully validated segment is merged. */
	for (uint32_t i = 0; i < rc.nr; i++) {
		uint32_t c, s;

		if (pid >= 0 && rc.pid[i] != (uint64_t)pid)
			continue;
		c = map_str(rd, st, rc.comm[i]);
		s = map_node(rd, st, rc.stack[i]);
		if (c == NP_ID_NONE || s == NP_ID_NONE ||
		    np_agg_add(a, rc.pid[i], rc.cpu[i], c, s, rc.count[i]))
			goto oom;
	}
	/* A chunk changed an object's build-id: onto the dsos mapped before. */
	if (rd->mapped_bid_gen != rd->bid_gen) {
		for (uint32_t d = 0; d < rd->cap_sbid && d < rd->mns; d++)
			map_build_id(rd, st, d);
		rd->mapped_bid_gen = rd->bid_gen;
	}
	np_stacktab_sync_build_ids(st);
	np_agg_lost(a, in.lost);
	ret = 0;
	goto out;
oom:
	snprintf(err, errlen, "out of memory");
	ret = -ENOMEM;
out:
	free(raw);
	np_seg_recs_free(&rc);
	return ret;
}
