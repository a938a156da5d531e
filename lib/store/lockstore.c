// SPDX-License-Identifier: GPL-2.0
/* Lockup reports: one checksummed, zstd-compressed file per lockup. */
#include <dirent.h>
#include <fcntl.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>
#include "lockstore.h"
#include "np_buf.h"
#include "np_crc32c.h"
#include "store_seg.h"
#include "np_clock.h"

#define LCK_MAGIC	"NMIPLCK\n"
#define LCK_VERSION	1
#define LCK_MAX_RAW	(1U << 20)	/* 127 frames never come close */

struct lck_hdr {
	char magic[8];
	uint16_t version;
	uint16_t hdr_size;
	uint32_t flags;
	uint32_t raw_size, comp_size;
	uint32_t payload_crc;	/* crc32c of the compressed payload */
	uint32_t hdr_crc;	/* crc32c of the 28 bytes before it */
};

_Static_assert(sizeof(struct lck_hdr) == 32, "lockup header layout");

#define WPUT(b, v) np_put_bytes(b, &(v), sizeof(v))

static void put_str(struct np_buf *b, const char *s)
{
	uint16_t len = s ? (uint16_t)strnlen(s, 4096) : 0xffff;

	WPUT(b, len);
	if (s)
		np_put_bytes(b, s, len);
}

int np_lockstore_write(const char *dir, const struct np_ev_lockup *l,
		       const struct np_sym *syms, uint64_t wall_ns,
		       char *id, size_t idlen, char *err, size_t errlen)
{
	char ldir[4096], name[NP_LOCKUP_ID_LEN + 8], comm[NMIPROF_COMM_LEN] = { 0 };
	uint32_t nr = l->nr_kframes, u32;
	struct np_buf b = { 0 };
	struct lck_hdr *h;
	uint8_t *file = NULL;
	size_t bound, clen;
	int ret = -ENOMEM;

	if (!wall_ns)
		wall_ns = np_real_ns();
	snprintf(ldir, sizeof(ldir), "%s/lockups", dir);
	if (mkdir(ldir, 0750) && errno != EEXIST) {
		snprintf(err, errlen, "%s: %s", ldir, strerror(errno));
		return -errno;
	}
	memcpy(comm, l->comm, sizeof(comm));
	WPUT(&b, wall_ns);
	WPUT(&b, l->time_ns);
	WPUT(&b, l->stuck_ns);
	WPUT(&b, l->cpu);
	WPUT(&b, l->pid);
	WPUT(&b, l->tid);
	WPUT(&b, l->flags);
	np_put_bytes(&b, comm, sizeof(comm));
	WPUT(&b, l->regs);
	WPUT(&b, nr);
	for (uint32_t i = 0; i < nr; i++) {
		const struct np_sym *s = syms ? &syms[i] : NULL;
		uint64_t off = s ? s->offset : l->kframes[i];
		uint8_t k = 1;

		WPUT(&b, l->kframes[i]);
		WPUT(&b, off);
		WPUT(&b, k);
		put_str(&b, s && s->dso ? s->dso : "[kernel.kallsyms]");
		put_str(&b, s ? s->name : NULL);
	}
	if (b.oom)
		goto out;
	bound = ZSTD_compressBound(b.len);
	file = malloc(sizeof(*h) + bound);
	if (!file)
		goto out;
	clen = ZSTD_compress(file + sizeof(*h), bound, b.p, b.len, 3);
	if (ZSTD_isError(clen)) {
		ret = -EIO;
		goto out;
	}
	h = (struct lck_hdr *)file;
	memset(h, 0, sizeof(*h));
	memcpy(h->magic, LCK_MAGIC, 8);
	h->version = LCK_VERSION;
	h->hdr_size = sizeof(*h);
	h->raw_size = b.len;
	h->comp_size = clen;
	h->payload_crc = np_crc32c(0, file + sizeof(*h), clen);
	h->hdr_crc = np_crc32c(0, h, offsetof(struct lck_hdr, hdr_crc));
	/* The name sorts by time; cpu keeps simultaneous lockups apart. */
	u32 = l->cpu;
	snprintf(name, sizeof(name), "lockup-%016" PRIx64 "-cpu%u.npl",
		 wall_ns, u32);
	ret = np_write_atomic(ldir, name, file, sizeof(*h) + clen);
	if (!ret && id)
		snprintf(id, idlen, "%.*s", (int)(strlen(name) - 4), name);
out:
	if (ret)
		snprintf(err, errlen, "storing lockup: %s", strerror(-ret));
	free(b.p);
	free(file);
	return ret;
}

struct rbuf {
	const uint8_t *p, *end;
	int bad;
};

static void rget(struct rbuf *r, void *out, size_t len)
{
	if ((size_t)(r->end - r->p) < len) {
		r->bad = 1;
		memset(out, 0, len);
		return;
	}
	memcpy(out, r->p, len);
	r->p += len;
}

#define RGET(r, v) rget(r, &(v), sizeof(v))

/* Parse a lockup file; strings are copied into the record's own block. */
static int lck_parse(const uint8_t *buf, size_t len, struct np_lockup_rec **out,
		     char *why, size_t whylen)
{
	struct np_lockup_rec *rec = NULL;
	struct lck_hdr h;
	struct rbuf r;
	uint8_t *raw;
	size_t n;

	if (len < sizeof(h)) {
		snprintf(why, whylen, "truncated lockup record");
		return -EBADMSG;
	}
	memcpy(&h, buf, sizeof(h));
	if (memcmp(h.magic, LCK_MAGIC, 8) ||
	    np_crc32c(0, &h, offsetof(struct lck_hdr, hdr_crc)) != h.hdr_crc ||
	    h.version != LCK_VERSION || h.hdr_size != sizeof(h) ||
	    h.raw_size > LCK_MAX_RAW || h.comp_size > LCK_MAX_RAW) {
		snprintf(why, whylen, "bad lockup record header");
		return -EBADMSG;
	}
	if (len - sizeof(h) < h.comp_size ||
	    np_crc32c(0, buf + sizeof(h), h.comp_size) != h.payload_crc) {
		snprintf(why, whylen, "lockup record truncated or checksum mismatch");
		return -EBADMSG;
	}
	raw = malloc(h.raw_size ? h.raw_size : 1);
	if (!raw)
		return -ENOMEM;
	n = ZSTD_decompress(raw, h.raw_size, buf + sizeof(h), h.comp_size);
	if (ZSTD_isError(n) || n != h.raw_size) {
		free(raw);
		snprintf(why, whylen, "lockup record does not decompress");
		return -EBADMSG;
	}
	r.p = raw;
	r.end = raw + n;
	r.bad = 0;
	rec = calloc(1, sizeof(*rec));
	if (!rec) {
		free(raw);
		return -ENOMEM;
	}
	RGET(&r, rec->wall_ns);
	RGET(&r, rec->time_ns);
	RGET(&r, rec->stuck_ns);
	RGET(&r, rec->cpu);
	RGET(&r, rec->pid);
	RGET(&r, rec->tid);
	RGET(&r, rec->flags);
	rget(&r, rec->comm, NMIPROF_COMM_LEN);
	RGET(&r, rec->regs);
	RGET(&r, rec->nr_frames);
	/* each frame takes at least 21 bytes: bound before allocating */
	if (r.bad || rec->nr_frames > (size_t)(r.end - r.p) / 21) {
		r.bad = 1;
		goto done;
	}
	rec->addrs = calloc(rec->nr_frames + 1, sizeof(*rec->addrs));
	rec->frames = calloc(rec->nr_frames + 1, sizeof(*rec->frames));
	if (!rec->addrs || !rec->frames) {
		np_lockup_rec_free(rec);
		free(raw);
		return -ENOMEM;
	}
	for (uint32_t i = 0; i < rec->nr_frames && !r.bad; i++) {
		struct np_sym *s = &rec->frames[i];
		uint8_t k;

		RGET(&r, rec->addrs[i]);
		RGET(&r, s->offset);
		RGET(&r, k);
		s->kernel = k;
		for (int f = 0; f < 2 && !r.bad; f++) {
			uint16_t sl;
			char *str = NULL;

			RGET(&r, sl);
			if (sl != 0xffff) {
				if ((size_t)(r.end - r.p) < sl) {
					r.bad = 1;
					break;
				}
				str = strndup((const char *)r.p, sl);
				if (!str) {
					r.bad = 1;
					break;
				}
				r.p += sl;
			}
			if (f == 0)
				s->dso = str ? str : strdup("[unknown]");
			else
				s->name = str;
		}
	}
done:
	free(raw);
	if (r.bad || r.p != r.end) {
		np_lockup_rec_free(rec);
		snprintf(why, whylen, "malformed lockup record");
		return -EBADMSG;
	}
	*out = rec;
	return 0;
}

void np_lockup_rec_free(struct np_lockup_rec *r)
{
	if (!r)
		return;
	for (uint32_t i = 0; r->frames && i < r->nr_frames; i++) {
		free((char *)r->frames[i].dso);
		free((char *)r->frames[i].name);
	}
	free(r->frames);
	free(r->addrs);
	free(r);
}

static int lck_name(const char *name, uint64_t *wall_ns)
{
	unsigned int cpu;
	int end = 0;

	if (sscanf(name, "lockup-%16" SCNx64 "-cpu%u.npl%n", wall_ns, &cpu,
		   &end) != 2 || end <= 0 || name[end] ||
	    strlen(name) >= NP_LOCKUP_ID_LEN + 4)
		return -1;
	return 0;
}

static int lf_cmp(const void *a, const void *b)
{
	const struct np_lockfile *x = a, *y = b;

	if (x->wall_ns != y->wall_ns)
		return x->wall_ns < y->wall_ns ? -1 : 1;
	return strcmp(x->name, y->name);
}

int np_lockstore_scan(const char *dir, struct np_lockfile **out, size_t *nr)
{
	struct np_lockfile *v = NULL;
	size_t n = 0, cap = 0;
	char ldir[4096];
	struct dirent *de;
	DIR *d;

	*out = NULL;
	*nr = 0;
	snprintf(ldir, sizeof(ldir), "%s/lockups", dir);
	d = opendir(ldir);
	if (!d)
		return errno == ENOENT ? 0 : -errno;
	while ((de = readdir(d))) {
		struct np_lockfile lf = { 0 };
		struct stat sb;

		if (lck_name(de->d_name, &lf.wall_ns) ||
		    fstatat(dirfd(d), de->d_name, &sb, AT_SYMLINK_NOFOLLOW) ||
		    !S_ISREG(sb.st_mode))
			continue;
		memcpy(lf.name, de->d_name, strlen(de->d_name) + 1); /* checked */
		lf.size = sb.st_size;
		if (n == cap) {
			struct np_lockfile *nv;

			cap = cap ? cap * 2 : 16;
			nv = realloc(v, cap * sizeof(*v));
			if (!nv) {
				free(v);
				closedir(d);
				return -ENOMEM;
			}
			v = nv;
		}
		v[n++] = lf;
	}
	closedir(d);
	if (n)
		qsort(v, n, sizeof(*v), lf_cmp);
	*out = v;
	*nr = n;
	return 0;
}

int np_lockstore_remove(const char *dir, const char *name)
{
	char path[4096];

	snprintf(path, sizeof(path), "%s/lockups/%s", dir, name);
	return unlink(path) ? -errno : 0;
}

static int lck_load(const char *dir, const char *name,
		    struct np_lockup_rec **out, char *why, size_t whylen)
{
	char path[4096];
	size_t len;
	void *buf;
	int ret;

	snprintf(path, sizeof(path), "%s/lockups/%s", dir, name);
	ret = np_read_file(path, LCK_MAX_RAW + sizeof(struct lck_hdr), &buf, &len);
	if (ret) {
		snprintf(why, whylen, "%s", strerror(-ret));
		return ret;
	}
	ret = lck_parse(buf, len, out, why, whylen);
	free(buf);
	if (!ret)
		snprintf((*out)->id, sizeof((*out)->id), "%.*s",
			 (int)(strlen(name) - 4), name);
	return ret;
}

int np_lockstore_list(const char *dir, np_lockup_fn fn, void *arg,
		      np_warn_fn warn, void *warn_arg,
		      char *err, size_t errlen)
{
	struct np_lockfile *v;
	size_t n;
	int ret = np_lockstore_scan(dir, &v, &n);

	if (ret) {
		snprintf(err, errlen, "%s/lockups: %s", dir, strerror(-ret));
		return ret;
	}
	for (size_t i = 0; i < n && !ret; i++) {
		struct np_lockup_rec *rec;
		char why[128];

		if (lck_load(dir, v[i].name, &rec, why, sizeof(why))) {
			np_store_warnf(warn, warn_arg, "%s/lockups/%s: %s, skipped",
				       dir, v[i].name, why);
			continue;
		}
		ret = fn(rec, arg);
		np_lockup_rec_free(rec);
	}
	free(v);
	return ret;
}

int np_lockstore_read(const char *dir, const char *id,
		      struct np_lockup_rec **out, char *err, size_t errlen)
{
	char name[NP_LOCKUP_ID_LEN + 8], why[128];
	uint64_t wall;
	int ret;

	if (snprintf(name, sizeof(name), "%s.npl", id) >= (int)sizeof(name) ||
	    lck_name(name, &wall)) {
		snprintf(err, errlen, "%s: not a lockup id", id);
		return -EINVAL;
	}
	ret = lck_load(dir, name, out, why, sizeof(why));
	if (ret)
		snprintf(err, errlen, "lockup %s: %s", id, why);
	return ret;
}
