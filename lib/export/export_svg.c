// SPDX-License-Identifier: GPL-2.0
/*
 * SVG flame graph: the folded stacks laid out as a flame graph (root at
 * the bottom, x = share of samples, sorted by name so equal inputs give
 * equal bytes), in one self-contained file.  The embedded script gives
 * click-to-zoom, Ctrl-F / "Search" with a regular expression (matched
 * share shown), Escape / "Reset Zoom", and per-frame details on hover.
 *
 * Each frame is <g class="f" data-x data-w data-d> with its position as
 * fractions of the root, so the script rescales without re-reading the
 * profile.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "export_folded.h"
#include "export_strmap.h"

#define SVG_WIDTH	1200
#define SVG_PAD		10
#define SVG_FRAME_H	16
#define SVG_TOP		60	/* title, search and reset controls */
#define SVG_BOTTOM	34	/* details line */
#define SVG_MIN_PX	0.1	/* thinner frames are not drawn */
#define SVG_FONT	12
#define SVG_CHAR_W	(SVG_FONT * 0.59)

struct node {
	char *name;
	uint64_t count;
	uint32_t first_child, next_sibling, last_child;	/* 0: none */
};

struct tree {
	struct node *n;
	size_t nr, cap;
	unsigned max_depth;
};

static int64_t node_new(struct tree *t, const char *name, size_t len)
{
	if (t->nr == t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 1024;
		struct node *n = realloc(t->n, cap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		t->n = n;
		t->cap = cap;
	}
	memset(&t->n[t->nr], 0, sizeof(t->n[0]));
	t->n[t->nr].name = strndup(name, len);
	if (!t->n[t->nr].name)
		return -ENOMEM;
	return (int64_t)t->nr++;
}

/* The child of parent named name[0..len), created if new. */
static int64_t child(struct tree *t, uint32_t parent, const char *name, size_t len)
{
	struct node *p = &t->n[parent];
	int64_t id;

	/* Sorted input: the match is nearly always the last child. */
	if (p->last_child) {
		struct node *c = &t->n[p->last_child];

		if (!strncmp(c->name, name, len) && !c->name[len])
			return p->last_child;
	}
	for (uint32_t c = p->first_child; c; c = t->n[c].next_sibling)
		if (!strncmp(t->n[c].name, name, len) && !t->n[c].name[len])
			return c;
	id = node_new(t, name, len);
	if (id < 0)
		return id;
	p = &t->n[parent];		/* node_new may have moved it */
	if (p->last_child)
		t->n[p->last_child].next_sibling = (uint32_t)id;
	else
		p->first_child = (uint32_t)id;
	p->last_child = (uint32_t)id;
	return id;
}

static int build(struct tree *t, const struct np_folded *f)
{
	if (node_new(t, "all", 3) < 0)
		return -ENOMEM;
	for (size_t i = 0; i < f->nr; i++) {
		const char *s = f->lines[i].stack;
		uint32_t cur = 0;
		unsigned depth = 0;

		t->n[0].count += f->lines[i].count;
		while (*s) {
			const char *e = strchr(s, ';');
			size_t len = e ? (size_t)(e - s) : strlen(s);
			int64_t c = child(t, cur, s, len);

			if (c < 0)
				return -ENOMEM;
			cur = (uint32_t)c;
			t->n[cur].count += f->lines[i].count;
			depth++;
			s += len + (e ? 1 : 0);
		}
		if (depth > t->max_depth)
			t->max_depth = depth;
	}
	return 0;
}

static void xml_escape(FILE *out, const char *s)
{
	for (; *s; s++) {
		switch (*s) {
		case '<': fputs("&lt;", out); break;
		case '>': fputs("&gt;", out); break;
		case '&': fputs("&amp;", out); break;
		case '"': fputs("&quot;", out); break;
		case '\'': fputs("&apos;", out); break;
		default:
			fputc(*s, out);
		}
	}
}

/*
 * 32-bit FNV-1a of a name: the colour seed.  Not np_hash_str(): the
 * colours of a frame are part of the output and must not change.
 */
static uint32_t color_seed(const char *s)
{
	uint32_t h = 2166136261u;

	while (*s)
		h = (h ^ (unsigned char)*s++) * 16777619u;
	return h;
}

/* flamegraph.pl-like palettes: warm for user code, aqua for the kernel. */
static void color(const char *name, unsigned depth, char *buf, size_t len)
{
	uint32_t h = color_seed(name);
	unsigned v1 = h & 0xff, v2 = (h >> 8) & 0xff, v3 = (h >> 16) & 0xff;
	size_t n = strlen(name);

	if (depth <= 1)
		snprintf(buf, len, "rgb(%u,%u,%u)", 180 + v1 % 40, 180 + v1 % 40,
			 190 + v1 % 40);
	else if (n > 4 && !strcmp(name + n - 4, "_[k]"))
		snprintf(buf, len, "rgb(%u,%u,%u)", 50 + v1 * 60 / 255,
			 165 + v2 * 50 / 255, 165 + v3 * 50 / 255);
	else
		snprintf(buf, len, "rgb(%u,%u,%u)", 205 + v1 * 50 / 255,
			 v2 * 230 / 255, v3 * 55 / 255);
}

static void emit(FILE *out, const struct tree *t, uint32_t id, double x,
		 unsigned depth, double total)
{
	const struct node *nd = &t->n[id];
	double w = (double)nd->count / total;
	double px = w * (SVG_WIDTH - 2 * SVG_PAD);
	double y = SVG_TOP + (double)(t->max_depth - depth) * SVG_FRAME_H;
	char fill[32];
	size_t chars;

	if (px < SVG_MIN_PX)
		return;
	color(nd->name, depth, fill, sizeof(fill));
	fprintf(out, "<g class=\"f\" data-x=\"%.8f\" data-w=\"%.8f\" data-d=\"%u\">"
		"<title>", x, w, depth);
	xml_escape(out, nd->name);
	fprintf(out, " (%llu samples, %.2f%%)</title>",
		(unsigned long long)nd->count, 100.0 * w);
	fprintf(out, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%d\" "
		"fill=\"%s\" rx=\"2\"/>", SVG_PAD + x * (SVG_WIDTH - 2 * SVG_PAD),
		y, px, SVG_FRAME_H - 1, fill);
	fprintf(out, "<text x=\"%.1f\" y=\"%.1f\">",
		SVG_PAD + x * (SVG_WIDTH - 2 * SVG_PAD) + 3, y + 11.5);
	chars = px > 6 ? (size_t)((px - 6) / SVG_CHAR_W) : 0;
	if (chars >= 3) {
		size_t n = strlen(nd->name);

		if (n <= chars) {
			xml_escape(out, nd->name);
		} else {
			char *cut = strndup(nd->name, chars - 2);

			if (cut)
				xml_escape(out, cut);
			free(cut);
			fputs("..", out);
		}
	}
	fputs("</text></g>\n", out);

	/* children sit left to right in name order (the tree is built sorted) */
	for (uint32_t c = nd->first_child; c; c = t->n[c].next_sibling) {
		emit(out, t, c, x, depth + 1, total);
		x += (double)t->n[c].count / total;
	}
}

/* The interactive part: zoom, search, reset, details. */
static const char svg_script[] =
"<script type=\"text/ecmascript\"><![CDATA[\n"
"'use strict';\n"
"var W, PAD, CW, frames, details, matchedText, zoomed = null, term = null;\n"
"function init(evt) {\n"
"  var svg = document.documentElement;\n"
"  W = +svg.getAttribute('data-width'); PAD = +svg.getAttribute('data-pad');\n"
"  CW = +svg.getAttribute('data-charw');\n"
"  frames = Array.prototype.slice.call(document.querySelectorAll('g.f'));\n"
"  details = document.getElementById('details');\n"
"  matchedText = document.getElementById('matched');\n"
"  frames.forEach(function (g) {\n"
"    g.fx = +g.getAttribute('data-x'); g.fw = +g.getAttribute('data-w');\n"
"    g.fd = +g.getAttribute('data-d');\n"
"    g.label = g.querySelector('title').textContent;\n"
"    g.name = g.label.replace(/ \\([0-9]+ samples, [0-9.]+%\\)$/, '');\n"
"    g.addEventListener('click', function () { zoom(g); });\n"
"    g.addEventListener('mouseover', function () { details.textContent = g.label; });\n"
"    g.addEventListener('mouseout', function () { details.textContent = ' '; });\n"
"  });\n"
"  document.getElementById('reset').addEventListener('click', reset);\n"
"  document.getElementById('search').addEventListener('click', function () {\n"
"    if (term) clearSearch(); else askSearch();\n"
"  });\n"
"  window.addEventListener('keydown', function (e) {\n"
"    if ((e.ctrlKey || e.metaKey) && e.key === 'f') { e.preventDefault(); askSearch(); }\n"
"    else if (e.key === 'Escape') { reset(); clearSearch(); }\n"
"  });\n"
"}\n"
"function place(g, x, w) {\n"
"  var r = g.querySelector('rect'), t = g.querySelector('text');\n"
"  var px = w * (W - 2 * PAD);\n"
"  r.setAttribute('x', PAD + x * (W - 2 * PAD)); r.setAttribute('width', px);\n"
"  t.setAttribute('x', PAD + x * (W - 2 * PAD) + 3);\n"
"  var n = Math.floor((px - 6) / CW);\n"
"  t.textContent = n < 3 ? '' : (g.name.length <= n ? g.name : g.name.slice(0, n - 2) + '..');\n"
"  g.style.display = px < 0.1 ? 'none' : '';\n"
"}\n"
"function zoom(z) {\n"
"  zoomed = z;\n"
"  var eps = 1e-9;\n"
"  frames.forEach(function (g) {\n"
"    var inside = g.fx >= z.fx - eps && g.fx + g.fw <= z.fx + z.fw + eps;\n"
"    if (g.fd >= z.fd && inside) {\n"
"      place(g, (g.fx - z.fx) / z.fw, g.fw / z.fw);\n"
"      g.style.opacity = '';\n"
"    } else if (g.fd < z.fd && g.fx <= z.fx + eps && g.fx + g.fw >= z.fx + z.fw - eps) {\n"
"      place(g, 0, 1); g.style.opacity = '0.6';\n"
"    } else {\n"
"      g.style.display = 'none';\n"
"    }\n"
"  });\n"
"  document.getElementById('reset').style.opacity = 1;\n"
"}\n"
"function reset() {\n"
"  zoomed = null;\n"
"  frames.forEach(function (g) { place(g, g.fx, g.fw); g.style.opacity = ''; });\n"
"  document.getElementById('reset').style.opacity = 0;\n"
"}\n"
"function askSearch() {\n"
"  var s = prompt('Search (regular expression):', term || '');\n"
"  if (s) search(s);\n"
"}\n"
"function search(s) {\n"
"  var re;\n"
"  try { re = new RegExp(s); } catch (e) { matchedText.textContent = 'bad regex'; return; }\n"
"  term = s;\n"
"  var spans = [];\n"
"  frames.forEach(function (g) {\n"
"    var r = g.querySelector('rect');\n"
"    if (!r.orig) r.orig = r.getAttribute('fill');\n"
"    if (re.test(g.name)) { r.setAttribute('fill', 'rgb(230,0,230)'); spans.push([g.fx, g.fx + g.fw]); }\n"
"    else r.setAttribute('fill', r.orig);\n"
"  });\n"
"  /* A matched frame's matched descendants must not count twice. */\n"
"  spans.sort(function (a, b) { return a[0] - b[0] || b[1] - a[1]; });\n"
"  var sum = 0, end = -1;\n"
"  spans.forEach(function (sp) {\n"
"    if (sp[0] >= end) { sum += sp[1] - sp[0]; end = sp[1]; }\n"
"    else if (sp[1] > end) { sum += sp[1] - end; end = sp[1]; }\n"
"  });\n"
"  matchedText.textContent = 'Matched: ' + (100 * sum).toFixed(2) + '%';\n"
"  document.getElementById('search').textContent = 'Clear search';\n"
"}\n"
"function clearSearch() {\n"
"  term = null;\n"
"  frames.forEach(function (g) {\n"
"    var r = g.querySelector('rect');\n"
"    if (r.orig) r.setAttribute('fill', r.orig);\n"
"  });\n"
"  matchedText.textContent = ' ';\n"
"  document.getElementById('search').textContent = 'Search';\n"
"}\n"
"]]></script>\n";

int np_export_svg(struct topview *tv, const struct np_export_opts *o,
		  FILE *out, char *err, size_t errlen)
{
	const char *title = o->title ? o->title : "nmiprof flame graph";
	struct tree t = { 0 };
	struct np_folded f;
	int ret = np_folded_collect(tv, o, &f);
	unsigned height;

	if (!ret)
		ret = build(&t, &f);
	if (ret) {
		snprintf(err, errlen, "out of memory building the flame graph");
		goto out;
	}
	height = SVG_TOP + (t.max_depth + 1) * SVG_FRAME_H + SVG_BOTTOM;
	fprintf(out, "<?xml version=\"1.0\" standalone=\"no\"?>\n"
		"<svg version=\"1.1\" xmlns=\"http://www.w3.org/2000/svg\" "
		"width=\"%d\" height=\"%u\" viewBox=\"0 0 %d %u\" "
		"data-width=\"%d\" data-pad=\"%d\" data-charw=\"%.2f\" "
		"onload=\"init(evt)\">\n", SVG_WIDTH, height, SVG_WIDTH, height,
		SVG_WIDTH, SVG_PAD, SVG_CHAR_W);
	fprintf(out, "<style type=\"text/css\">\n"
		"text { font-family: monospace; font-size: %dpx; fill: #000; }\n"
		"g.f:hover rect { stroke: #000; stroke-width: 0.5; cursor: pointer; }\n"
		"g.f text { pointer-events: none; }\n"
		".ctl { cursor: pointer; fill: #333; }\n"
		"</style>\n", SVG_FONT);
	fputs(svg_script, out);
	fprintf(out, "<rect width=\"100%%\" height=\"100%%\" fill=\"#f8f8f8\"/>\n"
		"<text x=\"%d\" y=\"24\" text-anchor=\"middle\" "
		"style=\"font-size:17px\">", SVG_WIDTH / 2);
	xml_escape(out, title);
	fprintf(out, "</text>\n"
		"<text id=\"reset\" class=\"ctl\" x=\"%d\" y=\"24\" "
		"style=\"opacity:0\">Reset Zoom</text>\n"
		"<text id=\"search\" class=\"ctl\" x=\"%d\" y=\"24\" "
		"text-anchor=\"end\">Search</text>\n"
		"<text id=\"matched\" x=\"%d\" y=\"%u\" text-anchor=\"end\"> </text>\n"
		"<text id=\"details\" x=\"%d\" y=\"%u\"> </text>\n",
		SVG_PAD, SVG_WIDTH - SVG_PAD, SVG_WIDTH - SVG_PAD, height - 12,
		SVG_PAD, height - 12);
	if (t.nr && t.n[0].count)
		emit(out, &t, 0, 0.0, 0, (double)t.n[0].count);
	fputs("</svg>\n", out);
	if (fflush(out) || ferror(out)) {
		snprintf(err, errlen, "write error: %s", strerror(errno));
		ret = -EIO;
	}
out:
	for (size_t i = 0; i < t.nr; i++)
		free(t.n[i].name);
	free(t.n);
	np_folded_free(&f);
	return ret;
}
