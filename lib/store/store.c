// SPDX-License-Identifier: GPL-2.0
/*
 * The continuous store: <dir>/profile/seg-<start>.nps, one segment per
 * slice; <dir>/profile/dict-<epoch>.npd, the stack dictionary of an epoch
 * of segments (store_dict.c); <dir>/profile/index, a cache of segment
 * headers; <dir>/lockups/; <dir>/lock, held by the one writer.
 *
 * The directory listing is the truth: the index only saves opening every
 * segment.  Readers and the writer reconcile it with readdir() (a segment
 * missing from the index is read from its header; an entry without a
 * file is dropped), so a lost, stale or corrupt index costs time, never
 * data.  Temp files are dot-files that no reader ever matches.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/file.h>
#include <sys/stat.h>
#include "lockstore.h"
#include "np_crc32c.h"
#include "store_seg.h"
#include "np_clock.h"

#define IDX_MAGIC	"NMIPIDX\n"
#define IDX_VERSION	2	/* 1 had no epoch: such an index is rebuilt */
#define SEG_NAME_LEN	24	/* "seg-" 16 hex ".nps" */
#define DICT_NAME_LEN	25	/* "dict-" 16 hex ".npd" */

/*
 * An epoch (one stack dictionary) ends after this many segments, once its
 * dictionary file or the writer's mirror of it grows past these sizes,
 * and whenever the writer (re)opens the store.  Longer epochs store the
 * stacks fewer times; shorter ones bound what one
 * damaged chunk can take with it and how long retention keeps a
 * dictionary for its last segment.  60 one-minute slices: an hour.
 */
#define EPOCH_MAX_SEGS	60
#define EPOCH_MAX_BYTES	(16ULL << 20)
/*
 * The writer's mirror of the dictionary is a second stack table beside
 * the aggregator's, so it is kept small: an epoch holds at most
 * EPOCH_MAX_NODES trie nodes (~6 MiB of mirror), and ends right after a
 * write that took the mirror past EPOCH_MAX_MEM.  A slice that alone
 * uses more nodes is written as a self-contained version-3 segment
 * without any mirror: a dictionary would not be shared enough to pay
 * for it, and the writer's peak memory stays that of one slice.
 */
#define EPOCH_MAX_NODES	(1U << 20)
#define EPOCH_MAX_MEM	(8ULL << 20)

struct idx_hdr {
	char magic[8];
	uint32_t version;
	uint32_t hdr_crc;	/* crc32c of the 12 bytes before it */
};

/* One index record per segment, appended after each write. */
struct idx_rec {
	uint64_t start_ns, end_ns, samples, size;
	uint64_t epoch;		/* version-4 segments: dictionary; else 0 */
	char name[SEG_NAME_LEN];	/* segment file name, no NUL */
	uint32_t reserved;
	uint32_t crc;		/* crc32c of the 68 bytes before it */
};

_Static_assert(sizeof(struct idx_hdr) == 16, "index header layout");
_Static_assert(sizeof(struct idx_rec) == 72, "index record layout");

struct seg_ent {
	char name[28];
	uint64_t start_ns, end_ns, samples, size;
	uint64_t epoch;		/* 0: self-contained (or unreadable) */
	int bad;		/* header unreadable: only prunable */
};

struct dict_ent {
	uint64_t epoch, size;
};

struct seg_list {
	struct seg_ent *v;
	size_t n, cap;
	int stale;		/* index must be rewritten */
};

struct np_store {
	struct np_store_opts o;
	char *dir;
	char pdir[4096];	/* <dir>/profile */
	int lock_fd;
	struct seg_list segs;	/* oldest first */
	struct dict_ent *dicts;	/* every dictionary file, any order */
	size_t nr_dicts, cap_dicts;
	struct np_epoch ep;	/* the epoch being written (fd -1: none) */
	uint64_t ep_last_start;	/* its newest segment's start */
};

void np_store_opts_init(struct np_store_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->dir = NP_STORE_DEFAULT_DIR;
	o->max_bytes = NP_STORE_DEFAULT_MAX_BYTES;
	o->max_age_ns = NP_STORE_DEFAULT_MAX_AGE_NS;
	o->level = NP_STORE_DEFAULT_LEVEL;
}

static int seg_name(const char *name, uint64_t *start)
{
	int end = 0;

	if (strlen(name) != SEG_NAME_LEN ||
	    sscanf(name, "seg-%16" SCNx64 ".nps%n", start, &end) != 1 ||
	    end != SEG_NAME_LEN)
		return -1;
	return 0;
}

static int dict_name(const char *name, uint64_t *epoch)
{
	int end = 0;

	if (strlen(name) != DICT_NAME_LEN ||
	    sscanf(name, "dict-%16" SCNx64 ".npd%n", epoch, &end) != 1 ||
	    end != DICT_NAME_LEN)
		return -1;
	return 0;
}

static int ent_cmp(const void *a, const void *b)
{
	const struct seg_ent *x = a, *y = b;

	return strcmp(x->name, y->name);	/* hex names sort by start */
}

static int list_add(struct seg_list *l, const struct seg_ent *e)
{
	if (l->n == l->cap) {
		size_t nc = l->cap ? l->cap * 2 : 64;
		struct seg_ent *n = realloc(l->v, nc * sizeof(*n));

		if (!n)
			return -ENOMEM;
		l->v = n;
		l->cap = nc;
	}
	l->v[l->n++] = *e;
	return 0;
}

/* Index records, sorted by name; damaged records are simply not there. */
static void load_index(const char *pdir, struct seg_list *idx)
{
	char path[4200];
	struct idx_hdr h;
	size_t len, off;
	void *buf;

	idx->stale = 0;
	snprintf(path, sizeof(path), "%s/index", pdir);
	if (np_read_file(path, 64 << 20, &buf, &len)) {
		idx->stale = 1;
		return;
	}
	memcpy(&h, buf, len < sizeof(h) ? len : sizeof(h));
	if (len < sizeof(h) || memcmp(h.magic, IDX_MAGIC, 8) ||
	    h.version != IDX_VERSION ||
	    np_crc32c(0, &h, offsetof(struct idx_hdr, hdr_crc)) != h.hdr_crc) {
		idx->stale = 1;
		free(buf);
		return;
	}
	for (off = sizeof(h); off + sizeof(struct idx_rec) <= len;
	     off += sizeof(struct idx_rec)) {
		struct idx_rec r;
		struct seg_ent e = { 0 };
		uint64_t start;

		memcpy(&r, (char *)buf + off, sizeof(r));
		memcpy(e.name, r.name, SEG_NAME_LEN);
		if (np_crc32c(0, &r, offsetof(struct idx_rec, crc)) != r.crc ||
		    seg_name(e.name, &start)) {
			idx->stale = 1;
			continue;
		}
		e.start_ns = r.start_ns;
		e.end_ns = r.end_ns;
		e.samples = r.samples;
		e.size = r.size;
		e.epoch = r.epoch;
		if (list_add(idx, &e))
			break;
	}
	if (off != len)
		idx->stale = 1;	/* torn append */
	free(buf);
	if (idx->n)
		qsort(idx->v, idx->n, sizeof(*idx->v), ent_cmp);
}

static int read_seg_header(const char *pdir, const char *name,
			   struct np_seg_info *in, char *why, size_t whylen)
{
	char path[4200], buf[NP_SEG_HDR_MAX];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "%s/%s", pdir, name);
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0) {
		snprintf(why, whylen, "%s", strerror(errno));
		return -errno;
	}
	n = pread(fd, buf, sizeof(buf), 0);
	close(fd);
	return np_seg_header(buf, n < 0 ? 0 : n, in, why, whylen);
}

/*
 * The store's segments, oldest first: the directory listing reconciled
 * with the index.  Segments whose header is unreadable are reported once
 * and kept with bad = 1 (their name still gives their age) so retention
 * can remove them.
 */
static int scan_segments(const char *pdir, struct seg_list *out,
			 np_warn_fn warn, void *warn_arg)
{
	struct seg_list idx = { 0 };
	struct dirent *de;
	size_t used = 0;
	DIR *d;

	memset(out, 0, sizeof(*out));
	d = opendir(pdir);
	if (!d)
		return -errno;
	load_index(pdir, &idx);
	while ((de = readdir(d))) {
		struct seg_ent key = { 0 }, *hit;
		struct stat sb;
		uint64_t start;

		if (seg_name(de->d_name, &start) ||
		    fstatat(dirfd(d), de->d_name, &sb, AT_SYMLINK_NOFOLLOW) ||
		    !S_ISREG(sb.st_mode))
			continue;
		memcpy(key.name, de->d_name, SEG_NAME_LEN + 1);
		hit = idx.n ? bsearch(&key, idx.v, idx.n, sizeof(key), ent_cmp)
			    : NULL;
		if (hit && hit->size == (uint64_t)sb.st_size) {
			used++;
		} else {
			struct np_seg_info in;
			char why[160];

			out->stale = 1;
			hit = &key;
			key.start_ns = start;
			key.end_ns = start;
			key.size = sb.st_size;
			if (read_seg_header(pdir, key.name, &in, why, sizeof(why))) {
				np_store_warnf(warn, warn_arg, "%s/%s: %s, skipped",
					       pdir, key.name, why);
				key.bad = 1;
			} else {
				key.start_ns = in.start_ns;
				key.end_ns = in.end_ns;
				key.samples = in.samples;
				key.epoch = in.epoch;
			}
		}
		if (list_add(out, hit)) {
			closedir(d);
			free(idx.v);
			free(out->v);
			return -ENOMEM;
		}
	}
	closedir(d);
	if (idx.stale || used != idx.n)
		out->stale = 1;
	free(idx.v);
	if (out->n)
		qsort(out->v, out->n, sizeof(*out->v), ent_cmp);
	return 0;
}

static void idx_fill(struct idx_rec *r, const struct seg_ent *e)
{
	memset(r, 0, sizeof(*r));
	r->start_ns = e->start_ns;
	r->end_ns = e->end_ns;
	r->samples = e->samples;
	r->size = e->size;
	r->epoch = e->epoch;
	memcpy(r->name, e->name, sizeof(r->name));
	r->crc = np_crc32c(0, r, offsetof(struct idx_rec, crc));
}

static int write_index(struct np_store *s)
{
	size_t len = sizeof(struct idx_hdr) + s->segs.n * sizeof(struct idx_rec);
	struct idx_hdr *h;
	char *buf = calloc(1, len);
	int ret;

	if (!buf)
		return -ENOMEM;
	h = (struct idx_hdr *)buf;
	memcpy(h->magic, IDX_MAGIC, 8);
	h->version = IDX_VERSION;
	h->hdr_crc = np_crc32c(0, h, offsetof(struct idx_hdr, hdr_crc));
	for (size_t i = 0; i < s->segs.n; i++)
		idx_fill((struct idx_rec *)(buf + sizeof(*h)) + i,
			 &s->segs.v[i]);
	ret = np_write_atomic(s->pdir, "index", buf, len);
	free(buf);
	if (!ret)
		s->segs.stale = 0;
	return ret;
}

/* Appending needs no fsync: the index is a cache that readers check
 * against the directory. */
static void append_index(struct np_store *s, const struct seg_ent *e)
{
	char path[4200];
	struct idx_rec r;
	int fd;

	if (s->segs.stale) {
		write_index(s);
		return;
	}
	snprintf(path, sizeof(path), "%s/index", s->pdir);
	fd = open(path, O_WRONLY | O_APPEND | O_CLOEXEC);
	idx_fill(&r, e);
	if (fd < 0 || np_write_all(fd, &r, sizeof(r)))
		s->segs.stale = 1;
	if (fd >= 0)
		close(fd);
}

static void remove_temps(const char *d)
{
	DIR *dir = opendir(d);
	struct dirent *de;

	if (!dir)
		return;
	while ((de = readdir(dir)))
		if (!strncmp(de->d_name, ".tmp-", 5))
			unlinkat(dirfd(dir), de->d_name, 0);
	closedir(dir);
}

static int mkdir_p(const char *path)
{
	char tmp[4096];

	if (snprintf(tmp, sizeof(tmp), "%s", path) >= (int)sizeof(tmp))
		return -ENAMETOOLONG;
	for (char *p = tmp + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(tmp, 0755) && errno != EEXIST)
			return -errno;
		*p = '/';
	}
	if (mkdir(tmp, 0750) && errno != EEXIST)
		return -errno;
	return 0;
}

static int dict_add(struct np_store *s, uint64_t epoch, uint64_t size)
{
	if (s->nr_dicts == s->cap_dicts) {
		size_t nc = s->cap_dicts ? s->cap_dicts * 2 : 16;
		struct dict_ent *n = realloc(s->dicts, nc * sizeof(*n));

		if (!n)
			return -ENOMEM;
		s->dicts = n;
		s->cap_dicts = nc;
	}
	s->dicts[s->nr_dicts].epoch = epoch;
	s->dicts[s->nr_dicts++].size = size;
	return 0;
}

static struct dict_ent *dict_find(struct np_store *s, uint64_t epoch)
{
	for (size_t i = 0; i < s->nr_dicts; i++)
		if (s->dicts[i].epoch == epoch)
			return &s->dicts[i];
	return NULL;
}

/* The dictionary files of the store (their names and sizes). */
static int scan_dicts(struct np_store *s)
{
	DIR *d = opendir(s->pdir);
	struct dirent *de;
	int ret = 0;

	if (!d)
		return -errno;
	s->nr_dicts = 0;
	while (!ret && (de = readdir(d))) {
		struct stat sb;
		uint64_t epoch;

		if (dict_name(de->d_name, &epoch) ||
		    fstatat(dirfd(d), de->d_name, &sb, AT_SYMLINK_NOFOLLOW) ||
		    !S_ISREG(sb.st_mode))
			continue;
		ret = dict_add(s, epoch, sb.st_size);
	}
	closedir(d);
	return ret;
}

struct np_store *np_store_open(const struct np_store_opts *o,
			       char *err, size_t errlen)
{
	struct np_store *s = calloc(1, sizeof(*s));
	char path[4200];
	int ret;

	if (!s) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	if (o)
		s->o = *o;
	else
		np_store_opts_init(&s->o);
	if (!s->o.dir)
		s->o.dir = NP_STORE_DEFAULT_DIR;
	if (!s->o.level)
		s->o.level = NP_STORE_DEFAULT_LEVEL;
	s->lock_fd = -1;
	s->ep.fd = -1;
	s->dir = strdup(s->o.dir);
	s->o.dir = s->dir;
	if (!s->dir ||
	    snprintf(s->pdir, sizeof(s->pdir), "%s/profile", s->dir) >=
	    (int)sizeof(s->pdir)) {
		snprintf(err, errlen, "%s: bad store directory", s->o.dir);
		goto fail;
	}
	snprintf(path, sizeof(path), "%s/lockups", s->dir);
	if ((ret = mkdir_p(s->dir)) || (ret = mkdir_p(s->pdir)) ||
	    (ret = mkdir_p(path))) {
		snprintf(err, errlen, "%s: %s", s->dir, strerror(-ret));
		goto fail;
	}
	snprintf(path, sizeof(path), "%s/lock", s->dir);
	s->lock_fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0640);
	if (s->lock_fd < 0) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		goto fail;
	}
	/* Two writers would interleave retention and index appends. */
	if (flock(s->lock_fd, LOCK_EX | LOCK_NB)) {
		snprintf(err, errlen, "%s is in use by another writer", s->dir);
		goto fail;
	}
	remove_temps(s->pdir);
	snprintf(path, sizeof(path), "%s/lockups", s->dir);
	remove_temps(path);
	ret = scan_segments(s->pdir, &s->segs, s->o.warn, s->o.warn_arg);
	if (!ret)
		ret = scan_dicts(s);
	if (ret) {
		snprintf(err, errlen, "%s: %s", s->pdir, strerror(-ret));
		goto fail;
	}
	if (s->segs.stale)
		write_index(s);
	return s;
fail:
	np_store_close(s);
	return NULL;
}

void np_store_close(struct np_store *s)
{
	if (!s)
		return;
	np_epoch_reset(&s->ep);
	if (s->lock_fd >= 0)
		close(s->lock_fd);	/* releases the flock */
	free(s->segs.v);
	free(s->dicts);
	free(s->dir);
	free(s);
}

const char *np_store_dir(const struct np_store *s)
{
	return s->dir;
}

static uint64_t lockups_bytes(const struct np_store *s)
{
	struct np_lockfile *v;
	uint64_t sum = 0;
	size_t n;

	if (np_lockstore_scan(s->dir, &v, &n))
		return 0;
	for (size_t i = 0; i < n; i++)
		sum += v[i].size;
	free(v);
	return sum;
}

size_t np_store_mem(const struct np_store *s)
{
	return s->ep.tab ? np_stacktab_mem(s->ep.tab) : 0;
}

uint64_t np_store_bytes(const struct np_store *s)
{
	uint64_t sum = lockups_bytes(s);

	for (size_t i = 0; i < s->segs.n; i++)
		sum += s->segs.v[i].size;
	for (size_t i = 0; i < s->nr_dicts; i++)
		sum += s->dicts[i].size;
	return sum;
}

static int epoch_used(const struct np_store *s, uint64_t epoch)
{
	if (s->ep.fd >= 0 && s->ep.id == epoch)
		return 1;	/* being written: its next segment needs it */
	for (size_t i = 0; i < s->segs.n; i++)
		if (s->segs.v[i].epoch == epoch)
			return 1;
	return 0;
}

/* Delete dictionaries no segment needs any more (their last segment
 * went, or a crash left one without segments).  Returns bytes freed. */
static uint64_t drop_unused_dicts(struct np_store *s)
{
	uint64_t freed = 0;

	for (size_t i = 0; i < s->nr_dicts;) {
		char path[4200];

		if (epoch_used(s, s->dicts[i].epoch)) {
			i++;
			continue;
		}
		snprintf(path, sizeof(path), "%s/dict-%016" PRIx64 ".npd",
			 s->pdir, s->dicts[i].epoch);
		if (unlink(path) && errno != ENOENT)
			np_store_warnf(s->o.warn, s->o.warn_arg, "%s: %s", path,
				       strerror(errno));
		freed += s->dicts[i].size;
		s->dicts[i] = s->dicts[--s->nr_dicts];
	}
	return freed;
}

/* Bytes freed: the segment's, and its dictionary's if it was the last
 * segment of its epoch. */
static uint64_t drop_oldest_seg(struct np_store *s)
{
	uint64_t freed = s->segs.v[0].size, epoch = s->segs.v[0].epoch;
	char path[4200];

	snprintf(path, sizeof(path), "%s/%s", s->pdir, s->segs.v[0].name);
	if (unlink(path) && errno != ENOENT)
		np_store_warnf(s->o.warn, s->o.warn_arg, "%s: %s", path,
			       strerror(errno));
	memmove(s->segs.v, s->segs.v + 1, (s->segs.n - 1) * sizeof(*s->segs.v));
	s->segs.n--;
	s->segs.stale = 1;
	if (epoch && !epoch_used(s, epoch))
		freed += drop_unused_dicts(s);
	return freed;
}

int np_store_prune(struct np_store *s, uint64_t now_ns)
{
	uint64_t max = s->o.max_bytes, age = s->o.max_age_ns, total;
	struct np_lockfile *lv = NULL;
	size_t ln = 0, li = 0;
	int ret;

	if (!now_ns)
		now_ns = np_real_ns();
	ret = np_lockstore_scan(s->dir, &lv, &ln);
	if (ret)
		return ret;
	drop_unused_dicts(s);
	total = 0;
	for (size_t i = 0; i < ln; i++)
		total += lv[i].size;
	for (size_t i = 0; i < s->segs.n; i++)
		total += s->segs.v[i].size;
	for (size_t i = 0; i < s->nr_dicts; i++)
		total += s->dicts[i].size;

	/* Profiles go first: by age, then oldest first while over size,
	 * always keeping the newest segment.  A dictionary goes with the
	 * last segment that needs it, and counts toward the size. */
	while (s->segs.n && age && now_ns > age &&
	       s->segs.v[0].end_ns < now_ns - age)
		total -= drop_oldest_seg(s);
	while (s->segs.n > 1 && max && total > max)
		total -= drop_oldest_seg(s);
	/* A lockup goes only once no older profile remains, and then only
	 * by age or if lockups alone overflow the budget. */
	for (; li < ln; li++) {
		int older_profiles = s->segs.n &&
				     s->segs.v[0].start_ns <= lv[li].wall_ns;
		int too_old = age && now_ns > age && lv[li].wall_ns < now_ns - age;
		int too_big = max && total > max && s->segs.n <= 1;

		if (older_profiles && !too_big)
			break;
		if (!too_old && !too_big)
			break;
		np_lockstore_remove(s->dir, lv[li].name);
		total -= lv[li].size;
	}
	free(lv);
	if (s->segs.stale)
		return write_index(s);
	return 0;
}

/* Start a new epoch for a segment starting at start_ns: its id (the
 * dictionary's name) is that time, stepped past names in use. */
static int epoch_open(struct np_store *s, uint64_t start_ns)
{
	uint64_t id = start_ns ? start_ns : 1;

	np_epoch_reset(&s->ep);
	for (;;) {
		char path[4200];
		int fd;

		while (dict_find(s, id))
			id++;
		snprintf(path, sizeof(path), "%s/dict-%016" PRIx64 ".npd",
			 s->pdir, id);
		fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_APPEND |
			  O_CLOEXEC, 0640);
		if (fd < 0 && errno == EEXIST) {
			id++;
			continue;
		}
		if (fd < 0)
			return -errno;
		if (dict_add(s, id, 0)) {
			close(fd);
			unlink(path);
			return -ENOMEM;
		}
		s->ep.fd = fd;
		s->ep.id = id;
		return 0;
	}
}

static int epoch_full(const struct np_store *s, uint64_t start_ns)
{
	return s->ep.fd < 0 || s->ep.segs >= EPOCH_MAX_SEGS ||
	       s->ep.len >= EPOCH_MAX_BYTES ||
	       start_ns < s->ep_last_start;	/* clock stepped back */
}

/*
 * Encode a's slice in the current epoch and append the dictionary rows
 * it added (fdatasync'ed: the segment that needs them becomes visible
 * only later).  Any failure here abandons the epoch, whose file keeps
 * what earlier segments need; the next write starts a new one.
 */
static int encode_in_epoch(struct np_store *s, const struct np_agg *a,
			   uint64_t start_ns, uint64_t end_ns, void **seg,
			   size_t *len, uint64_t *epoch, char *err, size_t errlen)
{
	uint32_t nodes = np_slice_nodes(a);
	size_t clen;
	void *chunk;
	int ret;

	if (nodes > EPOCH_MAX_NODES) {
		ret = np_seg_encode(a, start_ns, end_ns, s->o.level, seg, len);
		if (ret)
			snprintf(err, errlen, "encoding segment: %s",
				 strerror(-ret));
		*epoch = 0;
		return ret;
	}
	if (epoch_full(s, start_ns) ||
	    (s->ep.tab && np_stacktab_nr_nodes(s->ep.tab) + (uint64_t)nodes >
			   EPOCH_MAX_NODES)) {
		ret = epoch_open(s, start_ns);
		if (ret) {
			snprintf(err, errlen, "%s: new dictionary: %s", s->pdir,
				 strerror(-ret));
			return ret;
		}
	}
	ret = np_epoch_encode(&s->ep, a, start_ns, end_ns, s->o.level, &chunk,
			      &clen, seg, len);
	if (ret) {
		snprintf(err, errlen, "encoding segment: %s", strerror(-ret));
		np_epoch_reset(&s->ep);
		return ret;
	}
	if (chunk) {
		ret = np_write_all(s->ep.fd, chunk, clen);
		if (!ret && fdatasync(s->ep.fd))
			ret = -errno;
		if (ret) {
			snprintf(err, errlen, "%s/dict-%016" PRIx64 ".npd: %s",
				 s->pdir, s->ep.id, strerror(-ret));
			np_epoch_reset(&s->ep);
			free(chunk);
			free(*seg);
			*seg = NULL;
			return ret;
		}
		np_epoch_commit(&s->ep, chunk, clen);
		dict_find(s, s->ep.id)->size = s->ep.len;
		free(chunk);
	}
	*epoch = s->ep.id;
	return 0;
}

int np_store_write(struct np_store *s, const struct np_agg *a,
		   uint64_t start_ns, uint64_t end_ns, char *err, size_t errlen)
{
	struct seg_ent e = { 0 };
	uint64_t key = start_ns;
	size_t len;
	void *seg;
	int ret;

	ret = encode_in_epoch(s, a, start_ns, end_ns, &seg, &len, &e.epoch,
			      err, errlen);
	if (ret)
		return ret;
	/* The name is the start time; a clock stepped back could repeat
	 * one, so step past names in use (a name never gets overwritten). */
	for (;;) {
		struct seg_ent *hit;

		snprintf(e.name, sizeof(e.name), "seg-%016" PRIx64 ".nps", key);
		hit = s->segs.n ? bsearch(&e, s->segs.v, s->segs.n, sizeof(e),
					  ent_cmp) : NULL;
		if (!hit)
			break;
		key++;
	}
	ret = np_write_atomic(s->pdir, e.name, seg, len);
	free(seg);
	/* The encoder's temporaries (tens of MB with 10^5 stacks) would
	 * otherwise stay in glibc's heap between slices: once a minute,
	 * give them back. */
	malloc_trim(0);
	if (ret) {
		snprintf(err, errlen, "%s/%s: %s", s->pdir, e.name,
			 strerror(-ret));
		return ret;
	}
	e.start_ns = start_ns;
	e.end_ns = end_ns;
	e.samples = np_agg_samples(a);
	e.size = len;
	if (e.epoch) {
		s->ep.segs++;
		s->ep_last_start = start_ns;
	}
	if (s->ep.tab && np_stacktab_mem(s->ep.tab) >= EPOCH_MAX_MEM) {
		np_epoch_reset(&s->ep);
		malloc_trim(0);
	}
	ret = list_add(&s->segs, &e);
	if (ret)
		return ret;
	/* Kept sorted: a stepped-back clock may insert in the middle. */
	if (s->segs.n > 1 && ent_cmp(&s->segs.v[s->segs.n - 2], &e) > 0) {
		qsort(s->segs.v, s->segs.n, sizeof(e), ent_cmp);
		s->segs.stale = 1;
	}
	append_index(s, &e);
	/* The segment is in: a retention failure must not make the caller
	 * write the slice again. */
	ret = np_store_prune(s, 0);
	if (ret)
		np_store_warnf(s->o.warn, s->o.warn_arg, "%s: retention: %s",
			       s->pdir, strerror(-ret));
	return 0;
}

uint64_t np_store_make_room(struct np_store *s)
{
	uint64_t freed;

	if (s->segs.n <= 1)
		return 0;
	freed = drop_oldest_seg(s);
	/* On failure the index stays stale: the next prune rewrites it. */
	write_index(s);
	return freed;
}

/* ---- readers ------------------------------------------------------ */

int np_store_list(const char *dir, np_seg_fn fn, void *arg, np_warn_fn warn,
		  void *warn_arg, char *err, size_t errlen)
{
	struct seg_list l;
	char pdir[4200];
	int ret;

	snprintf(pdir, sizeof(pdir), "%s/profile", dir);
	ret = scan_segments(pdir, &l, warn, warn_arg);
	if (ret) {
		snprintf(err, errlen, "%s: %s", pdir, strerror(-ret));
		return ret;
	}
	for (size_t i = 0; i < l.n && !ret; i++) {
		struct np_seg_info in = { 0 };

		if (l.v[i].bad)
			continue;
		in.start_ns = l.v[i].start_ns;
		in.end_ns = l.v[i].end_ns;
		in.samples = l.v[i].samples;
		in.size = l.v[i].size;
		ret = fn(l.v[i].name, &in, arg);
	}
	free(l.v);
	return ret;
}

/*
 * Bytes of a store's stack dictionaries: segments of format v4 need them,
 * so they count toward the disk use a reader reports.
 */
int np_store_dict_bytes(const char *dir, uint64_t *bytes, uint64_t *files)
{
	char pdir[4200];
	struct dirent *d;
	struct stat st;
	uint64_t epoch;
	DIR *dp;

	*bytes = *files = 0;
	snprintf(pdir, sizeof(pdir), "%s/profile", dir);
	dp = opendir(pdir);
	if (!dp)
		return -errno;
	while ((d = readdir(dp))) {
		if (dict_name(d->d_name, &epoch))
			continue;
		if (fstatat(dirfd(dp), d->d_name, &st, 0) ||
		    !S_ISREG(st.st_mode))
			continue;
		*bytes += st.st_size;
		(*files)++;
	}
	closedir(dp);
	return 0;
}

int np_store_read(const char *dir, const struct np_read_opts *o,
		  struct np_agg *a, struct np_read_stats *st,
		  char *err, size_t errlen)
{
	struct np_read_stats local;
	struct np_read_opts def;
	struct np_dict_rd *rd;
	struct seg_list l;
	char pdir[4200];
	int ret;

	if (!o) {
		np_read_opts_init(&def);
		o = &def;
	}
	if (!st)
		st = &local;
	memset(st, 0, sizeof(*st));
	snprintf(pdir, sizeof(pdir), "%s/profile", dir);
	ret = scan_segments(pdir, &l, o->warn, o->warn_arg);
	if (ret) {
		snprintf(err, errlen, "%s: %s", pdir, strerror(-ret));
		return ret;
	}
	rd = np_dict_rd_new(pdir);
	if (!rd) {
		snprintf(err, errlen, "out of memory");
		free(l.v);
		return -ENOMEM;
	}
	for (size_t i = 0; i < l.n; i++) {
		const struct seg_ent *e = &l.v[i];
		char path[4300];

		if (e->bad) {
			st->skipped++;	/* reported by scan_segments */
			continue;
		}
		if ((o->since_ns && e->end_ns < o->since_ns) ||
		    (o->until_ns && e->start_ns > o->until_ns))
			continue;
		snprintf(path, sizeof(path), "%s/%s", pdir, e->name);
		if (np_seg_read_one(path, o, a, st, rd) == -ENOMEM) {
			snprintf(err, errlen, "out of memory");
			np_dict_rd_free(rd);
			free(l.v);
			return -ENOMEM;
		}
	}
	np_dict_rd_free(rd);
	free(l.v);
	return 0;
}

struct np_store_reader {
	char pdir[4200];
	struct np_dict_rd *rd;
	char *err;		/* the first warning of the current read */
	size_t errlen;
};

struct np_store_reader *np_store_reader_open(const char *dir)
{
	struct np_store_reader *r = calloc(1, sizeof(*r));

	if (!r)
		return NULL;
	snprintf(r->pdir, sizeof(r->pdir), "%s/profile", dir);
	r->rd = np_dict_rd_new(r->pdir);
	if (!r->rd) {
		free(r);
		return NULL;
	}
	return r;
}

static void reader_warn(void *arg, const char *msg)
{
	struct np_store_reader *r = arg;

	if (r->err && !r->err[0])
		snprintf(r->err, r->errlen, "%s", msg);
}

int np_store_reader_read(struct np_store_reader *r, const char *name,
			 struct np_agg *a, struct np_read_stats *st,
			 char *err, size_t errlen)
{
	struct np_read_opts o;
	char path[4300];
	uint64_t start;
	int ret;

	memset(st, 0, sizeof(*st));
	if (seg_name(name, &start)) {
		snprintf(err, errlen, "%s: not a segment name", name);
		return -EINVAL;
	}
	snprintf(path, sizeof(path), "%s/%s", r->pdir, name);
	if (access(path, F_OK) && errno == ENOENT)
		return -ENOENT;
	np_read_opts_init(&o);
	o.warn = reader_warn;
	o.warn_arg = r;
	err[0] = 0;
	r->err = err;
	r->errlen = errlen;
	ret = np_seg_read_one(path, &o, a, st, r->rd);
	r->err = NULL;
	if (ret == -ENOENT)
		return ret;
	if (!ret && st->segments != 1)
		ret = -EBADMSG;
	if (ret && !err[0])
		snprintf(err, errlen, "%s: %s", path, strerror(-ret));
	return ret;
}

void np_store_reader_close(struct np_store_reader *r)
{
	if (!r)
		return;
	np_dict_rd_free(r->rd);
	free(r);
}
