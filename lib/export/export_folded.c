// SPDX-License-Identifier: GPL-2.0
/*
 * Folded stacks: one "comm;outer;...;inner count" line per distinct
 * stack, the input format of flamegraph.pl and of most flame graph
 * tools.  Kernel frames carry the "_[k]" suffix that stackcollapse-perf.pl
 * --kernel uses, so flamegraph.pl --color=java/mem can tell them apart.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "export_folded.h"
#include "export_strmap.h"

size_t np_folded_frame(char *buf, size_t len, const struct np_frame *f)
{
	const char *s = f->sym && *f->sym ? f->sym : "[unknown]";
	size_t n = 0;

	if (!len)
		return 0;
	for (; *s && n + 1 < len; s++) {
		unsigned char c = (unsigned char)*s;

		/* ';' separates frames and '\n' lines: never let them through. */
		buf[n++] = (c == ';' || c < 0x20 || c == 0x7f) ? '_' : (char)c;
	}
	if (f->kernel && n + 5 < len) {
		memcpy(buf + n, "_[k]", 4);
		n += 4;
	}
	buf[n] = 0;
	return n;
}

/* Lines are merged in a string map whose payload is the count. */
struct fold_map {
	struct np_strmap lines;
	char *buf;
	size_t buf_cap;
	const struct np_export_opts *o;
};

static int fold_one(const struct np_frame *frames, unsigned nr, uint32_t pid,
		    const char *comm, double w, void *arg)
{
	struct fold_map *m = arg;
	uint64_t count = (uint64_t)llround(w);
	size_t need = 32 + strlen(comm), n = 0;
	int64_t id;
	int is_new;

	if (!count)
		return 0;
	for (unsigned i = 0; i < nr; i++)
		need += strlen(frames[i].sym ? frames[i].sym : "[unknown]") + 6;
	if (need > m->buf_cap) {
		char *b = realloc(m->buf, need);

		if (!b)
			return -ENOMEM;
		m->buf = b;
		m->buf_cap = need;
	}
	if (!m->o->no_comm) {
		struct np_frame c = { NULL, *comm ? comm : "[unknown]", 0, NULL };

		n += np_folded_frame(m->buf + n, need - n, &c);
	}
	/* frames[] is innermost first; folded lines go outermost first. */
	for (unsigned i = nr; i-- > 0;) {
		if (n)
			m->buf[n++] = ';';
		n += np_folded_frame(m->buf + n, need - n, &frames[i]);
	}
	m->buf[n] = 0;
	id = np_strmap_get(&m->lines, m->buf, &is_new);
	if (id < 0)
		return -ENOMEM;
	m->lines.val[id] += count;
	return 0;
}

static int line_cmp(const void *a, const void *b)
{
	return strcmp(((const struct np_folded_line *)a)->stack,
		      ((const struct np_folded_line *)b)->stack);
}

void np_folded_free(struct np_folded *f)
{
	for (size_t i = 0; i < f->nr; i++)
		free(f->lines[i].stack);
	free(f->lines);
	memset(f, 0, sizeof(*f));
}

int np_folded_collect(struct topview *tv, const struct np_export_opts *o,
		      struct np_folded *out)
{
	struct fold_map m = { .o = o };
	int ret = topview_foreach_stack(tv, fold_one, &m);

	free(m.buf);
	memset(out, 0, sizeof(*out));
	if (!ret && m.lines.nr &&
	    !(out->lines = calloc(m.lines.nr, sizeof(*out->lines))))
		ret = -ENOMEM;
	if (ret) {
		np_strmap_free(&m.lines);
		return ret < 0 ? ret : -ENOMEM;
	}
	/* The lines take the map's keys. */
	for (size_t i = 0; i < m.lines.nr; i++) {
		out->lines[i].stack = m.lines.keys[i];
		out->lines[i].count = m.lines.val[i];
	}
	out->nr = m.lines.nr;
	m.lines.nr = 0;
	np_strmap_free(&m.lines);
	if (out->nr)
		qsort(out->lines, out->nr, sizeof(*out->lines), line_cmp);
	for (size_t i = 0; i < out->nr; i++)
		out->total += out->lines[i].count;
	return 0;
}

int np_export_folded(struct topview *tv, const struct np_export_opts *o,
		     FILE *out, char *err, size_t errlen)
{
	struct np_folded f;
	int ret = np_folded_collect(tv, o, &f);

	if (ret) {
		snprintf(err, errlen, "out of memory folding stacks");
		return ret;
	}
	for (size_t i = 0; i < f.nr; i++)
		fprintf(out, "%s %llu\n", f.lines[i].stack,
			(unsigned long long)f.lines[i].count);
	np_folded_free(&f);
	if (fflush(out) || ferror(out)) {
		snprintf(err, errlen, "write error: %s", strerror(errno));
		return -EIO;
	}
	return 0;
}
