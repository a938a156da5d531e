// SPDX-License-Identifier: GPL-2.0
/*
 * nmiprofd control protocol, message layer: one line parsed into words
 * and key=value fields, and lines built with percent-escaped values
 * (the wire format is documented in np_ctl.h).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "np_ctl.h"
#include "np_ctl_impl.h"
#include "np_hex.h"

/* ---- Message layer ------------------------------------------------- */

/* Decode %XX in place; -1 on a malformed escape. */
static int np_ctl_unescape(char *s)
{
	char *out = s;

	for (; *s; s++) {
		if (*s != '%') {
			*out++ = *s;
			continue;
		}
		int hi = np_hexval(s[1]);
		int lo = hi < 0 ? -1 : np_hexval(s[2]);

		if (hi < 0 || lo < 0)
			return -1;
		*out++ = (char)(hi << 4 | lo);
		s += 2;
	}
	*out = '\0';
	return 0;
}

void np_ctl_seterr(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (!err || !errlen)
		return;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

int np_ctl_line_parse(struct np_ctl_line *l, const char *line, size_t len,
		      char *err, size_t errlen)
{
	char *p, *tok, *save = NULL;

	l->nwords = l->nfields = 0;
	if (len && line[len - 1] == '\n')
		len--;
	if (len >= sizeof(l->buf)) {
		np_ctl_seterr(err, errlen, "line longer than %d bytes",
			      NP_CTL_MAX_LINE - 1);
		return -1;
	}
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)line[i];

		/* Tolerate a CR from "socat -" style clients at the end only. */
		if (c == '\r' && i == len - 1) {
			len--;
			break;
		}
		if (c < 0x20 || c == 0x7f) {
			np_ctl_seterr(err, errlen, "control byte 0x%02x in line", c);
			return -1;
		}
	}
	memcpy(l->buf, line, len);
	l->buf[len] = '\0';

	for (p = l->buf; (tok = strtok_r(p, " ", &save)); p = NULL) {
		char *eq = strchr(tok, '=');

		if (!eq) {
			if (l->nfields) {
				np_ctl_seterr(err, errlen,
					      "word '%.32s' after key=value fields", tok);
				return -1;
			}
			if (l->nwords == NP_CTL_MAX_WORDS) {
				np_ctl_seterr(err, errlen, "too many words");
				return -1;
			}
			l->words[l->nwords++] = tok;
			continue;
		}
		if (eq == tok) {
			np_ctl_seterr(err, errlen, "empty key");
			return -1;
		}
		if (l->nfields == NP_CTL_MAX_FIELDS) {
			np_ctl_seterr(err, errlen, "more than %d fields",
				      NP_CTL_MAX_FIELDS);
			return -1;
		}
		*eq = '\0';
		if (np_ctl_unescape(tok) || np_ctl_unescape(eq + 1)) {
			np_ctl_seterr(err, errlen, "bad %%-escape in field '%.32s'",
				      tok);
			return -1;
		}
		l->key[l->nfields] = tok;
		l->val[l->nfields++] = eq + 1;
	}
	return 0;
}

const char *np_ctl_get(const struct np_ctl_line *l, const char *key)
{
	/* Last one wins, like command-line flags. */
	for (unsigned int i = l->nfields; i-- > 0;)
		if (!strcmp(l->key[i], key))
			return l->val[i];
	return NULL;
}

int np_ctl_get_u64(const struct np_ctl_line *l, const char *key, uint64_t *out)
{
	const char *v = np_ctl_get(l, key);
	unsigned long long x;
	char *end;

	if (!v)
		return -1;
	if (!*v || *v == '-' || *v == '+' || *v == ' ')
		return -2;
	errno = 0;
	x = strtoull(v, &end, 10);
	if (errno || *end)
		return -2;
	*out = x;
	return 0;
}

int np_ctl_get_i64(const struct np_ctl_line *l, const char *key, int64_t *out)
{
	const char *v = np_ctl_get(l, key);
	long long x;
	char *end;

	if (!v)
		return -1;
	if (!*v || *v == ' ' || *v == '+')
		return -2;
	errno = 0;
	x = strtoll(v, &end, 10);
	if (errno || *end)
		return -2;
	*out = x;
	return 0;
}

/* A separating space unless this is the first item of a line. */
static void np_ctl_sep(struct np_buf *b)
{
	if (b->len && b->p[b->len - 1] != '\n')
		np_buf_puts(b, " ", 1);
}

void np_ctl_put_word(struct np_buf *b, const char *word)
{
	np_ctl_sep(b);
	np_buf_puts(b, word, strlen(word));
}

static int np_ctl_must_escape(unsigned char c)
{
	return c <= 0x20 || c == 0x7f || c == '%' || c == '=';
}

void np_ctl_put_str(struct np_buf *b, const char *key, const char *val)
{
	static const char hex[] = "0123456789ABCDEF";
	size_t n = strlen(val);

	np_ctl_sep(b);
	np_buf_puts(b, key, strlen(key));
	np_buf_puts(b, "=", 1);
	if (np_buf_reserve(b, 3 * n + 1))
		return;
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)val[i];

		if (np_ctl_must_escape(c)) {
			b->p[b->len++] = '%';
			b->p[b->len++] = hex[c >> 4];
			b->p[b->len++] = hex[c & 15];
		} else {
			b->p[b->len++] = c;
		}
	}
	b->p[b->len] = '\0';
}

void np_ctl_put_u64(struct np_buf *b, const char *key, uint64_t v)
{
	char num[24];

	snprintf(num, sizeof(num), "%" PRIu64, v);
	np_ctl_put_str(b, key, num);
}

void np_ctl_put_i64(struct np_buf *b, const char *key, int64_t v)
{
	char num[24];

	snprintf(num, sizeof(num), "%" PRId64, v);
	np_ctl_put_str(b, key, num);
}

void np_ctl_end_line(struct np_buf *b)
{
	np_buf_puts(b, "\n", 1);
}

void np_ctl_put_error(struct np_buf *b, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	np_ctl_put_word(b, NP_CTL_PROTO);
	np_ctl_put_word(b, "ERR");
	np_ctl_put_str(b, "msg", msg);
	np_ctl_end_line(b);
}

void np_ctl_put_ok(struct np_buf *b, unsigned int nlines)
{
	char num[16];

	snprintf(num, sizeof(num), "%u", nlines);
	np_ctl_put_word(b, NP_CTL_PROTO);
	np_ctl_put_word(b, "OK");
	np_ctl_put_word(b, num);
	np_ctl_end_line(b);
}
