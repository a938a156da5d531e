// SPDX-License-Identifier: GPL-2.0
/*
 * ClickHouse over HTTP through libcurl (see np_ch.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <curl/curl.h>

#include "np_ch.h"
#include "np_hex.h"

struct np_ch {
	CURL *curl;
	char *base;		/* scheme://host:port/path?query, no user,
				 * no database= */
	char *user;		/* NULL: ClickHouse's "default" */
	char password[NP_CH_PASSWORD_MAX];
	char database[128];
	char *params;
	struct np_ch_opts o;
};

/* ---- buffers ------------------------------------------------------- */

void np_ch_buf_printf(struct np_buf *b, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0 || np_buf_reserve(b, (size_t)n + 1))
		return;
	va_start(ap, fmt);
	vsnprintf((char *)b->p + b->len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	b->len += (size_t)n;
}

/* Escapes shared by TabSeparated fields and quoted literals. */
static void buf_escaped(struct np_buf *b, const char *s, char quote)
{
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		char esc[5];

		switch (c) {
		case '\t': np_buf_puts(b, "\\t", 2); continue;
		case '\n': np_buf_puts(b, "\\n", 2); continue;
		case '\\': np_buf_puts(b, "\\\\", 2); continue;
		case '\'':
			if (quote) {
				np_buf_puts(b, "\\'", 2);
				continue;
			}
			break;
		default:
			if (c < 0x20 || c == 0x7f) {
				snprintf(esc, sizeof(esc), "\\x%02x", c);
				np_buf_puts(b, esc, 4);
				continue;
			}
		}
		np_buf_puts(b, s, 1);
	}
}

void np_ch_buf_tsv(struct np_buf *b, const char *s)
{
	buf_escaped(b, s, 0);
}

void np_ch_buf_sql_str(struct np_buf *b, const char *s)
{
	np_buf_puts(b, "'", 1);
	buf_escaped(b, s, '\'');
	np_buf_puts(b, "'", 1);
}

void np_ch_tsv_unescape(char *s)
{
	char *w = s;

	for (; *s; s++) {
		if (*s != '\\' || !s[1]) {
			*w++ = *s;
			continue;
		}
		s++;
		switch (*s) {
		case 't': *w++ = '\t'; break;
		case 'n': *w++ = '\n'; break;
		case 'r': *w++ = '\r'; break;
		case 'b': *w++ = '\b'; break;
		case 'f': *w++ = '\f'; break;
		case '0': *w++ = '\0'; break;
		case 'x':
			if (np_hexval(s[1]) >= 0 && np_hexval(s[2]) >= 0) {
				*w++ = (char)(np_hexval(s[1]) * 16 + np_hexval(s[2]));
				s += 2;
				break;
			}
			/* fall through */
		default: *w++ = *s; break;
		}
	}
	*w = 0;
}

/* ---- the connection ------------------------------------------------ */

static pthread_once_t ch_once = PTHREAD_ONCE_INIT;
static CURLcode ch_init_rc;

static void ch_global_init(void)
{
	ch_init_rc = curl_global_init(CURL_GLOBAL_DEFAULT);
}

static void ch_seterr(char *err, size_t errlen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void ch_seterr(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

/* database=NAME from the URL's query string. */
static void ch_find_database(struct np_ch *c, const char *query)
{
	const char *p = query;

	snprintf(c->database, sizeof(c->database), "default");
	while (p && *p) {
		size_t n = strcspn(p, "&");

		if (n > 9 && !strncmp(p, "database=", 9) && n - 9 < sizeof(c->database)) {
			memcpy(c->database, p + 9, n - 9);
			c->database[n - 9] = 0;
		}
		p += n;
		if (*p == '&')
			p++;
	}
}

static int ch_parse_url(struct np_ch *c, const char *url, char *err,
			size_t errlen)
{
	char *scheme = NULL, *pw = NULL, *user = NULL, *query = NULL, *base = NULL;
	CURLU *u = curl_url();
	int ret = -1;

	if (!u) {
		ch_seterr(err, errlen, "out of memory");
		return -1;
	}
	if (curl_url_set(u, CURLUPART_URL, url, 0) != CURLUE_OK ||
	    curl_url_get(u, CURLUPART_SCHEME, &scheme, 0) != CURLUE_OK) {
		ch_seterr(err, errlen, "not a URL (expected http://HOST:8123/?database=NAME)");
		goto out;
	}
	if (strcmp(scheme, "http") && strcmp(scheme, "https")) {
		ch_seterr(err, errlen, "%s: only http and https are supported", scheme);
		goto out;
	}
	if (curl_url_get(u, CURLUPART_PASSWORD, &pw, 0) == CURLUE_OK) {
		ch_seterr(err, errlen, "the URL must not hold a password: put it in a password file");
		goto out;
	}
	if (curl_url_get(u, CURLUPART_USER, &user, CURLU_URLDECODE) == CURLUE_OK &&
	    *user)
		c->user = strdup(user);
	if (curl_url_get(u, CURLUPART_QUERY, &query, 0) != CURLUE_OK)
		query = NULL;
	ch_find_database(c, query);
	/*
	 * Every statement names the database itself; the session's default
	 * stays "default" so that CREATE DATABASE works before it exists.
	 */
	if (query) {
		char *q = query, *w = query;

		while (*q) {
			size_t n = strcspn(q, "&");

			if (strncmp(q, "database=", 9)) {
				if (w != query)
					*w++ = '&';
				memmove(w, q, n);
				w += n;
			}
			q += n;
			if (*q == '&')
				q++;
		}
		*w = 0;
		curl_url_set(u, CURLUPART_QUERY, *query ? query : NULL, 0);
	}
	curl_url_set(u, CURLUPART_USER, NULL, 0);
	if (curl_url_get(u, CURLUPART_URL, &base, 0) != CURLUE_OK) {
		ch_seterr(err, errlen, "not a URL");
		goto out;
	}
	c->base = strdup(base);
	ret = c->base ? 0 : -1;
	if (ret)
		ch_seterr(err, errlen, "out of memory");
out:
	curl_free(scheme);
	curl_free(pw);
	curl_free(user);
	curl_free(query);
	curl_free(base);
	curl_url_cleanup(u);
	return ret;
}

struct np_ch *np_ch_open(const struct np_ch_opts *o, char *err, size_t errlen)
{
	struct np_ch *c;

	pthread_once(&ch_once, ch_global_init);
	if (ch_init_rc != CURLE_OK) {
		ch_seterr(err, errlen, "libcurl: %s", curl_easy_strerror(ch_init_rc));
		return NULL;
	}
	if (!o->url || !*o->url) {
		ch_seterr(err, errlen, "no URL");
		return NULL;
	}
	c = calloc(1, sizeof(*c));
	if (!c) {
		ch_seterr(err, errlen, "out of memory");
		return NULL;
	}
	c->o = *o;
	c->o.url = NULL;
	c->o.password = NULL;
	c->o.params = NULL;
	if (o->params && *o->params && !(c->params = strdup(o->params))) {
		ch_seterr(err, errlen, "out of memory");
		goto fail;
	}
	if (!c->o.connect_timeout_s)
		c->o.connect_timeout_s = 5;
	if (!c->o.timeout_s)
		c->o.timeout_s = 60;
	if (o->password &&
	    snprintf(c->password, sizeof(c->password), "%s", o->password) >=
	    (int)sizeof(c->password)) {
		ch_seterr(err, errlen, "password too long");
		goto fail;
	}
	if (ch_parse_url(c, o->url, err, errlen))
		goto fail;
	c->curl = curl_easy_init();
	if (!c->curl) {
		ch_seterr(err, errlen, "libcurl: cannot create a handle");
		goto fail;
	}
	return c;
fail:
	np_ch_close(c);
	return NULL;
}

void np_ch_close(struct np_ch *c)
{
	if (!c)
		return;
	if (c->curl)
		curl_easy_cleanup(c->curl);
	explicit_bzero(c->password, sizeof(c->password));
	free(c->base);
	free(c->user);
	free(c->params);
	free(c);
}

const char *np_ch_database(const struct np_ch *c)
{
	return c->database;
}

const char *np_ch_url(const struct np_ch *c)
{
	return c->base;
}

static size_t ch_write(char *p, size_t size, size_t n, void *arg)
{
	struct np_buf *b = arg;

	np_buf_puts(b, p, size * n);
	return b->oom ? 0 : size * n;
}

static int ch_progress(void *arg, curl_off_t dlt, curl_off_t dln,
		       curl_off_t ult, curl_off_t uln)
{
	const volatile int *cancel = arg;

	(void)dlt; (void)dln; (void)ult; (void)uln;
	return cancel && *cancel;	/* nonzero aborts the transfer */
}

/* The first line of the server's reply, for an error message. */
static void ch_reply_line(const struct np_buf *b, char *out, size_t len)
{
	size_t n;

	if (!b->p || !b->len) {
		snprintf(out, len, "(empty reply)");
		return;
	}
	n = strcspn(np_buf_str(b), "\n");
	if (n > 300)
		n = 300;
	snprintf(out, len, "%.*s", (int)n, np_buf_str(b));
}

/* &name=value, the value URL-escaped; -1 on ENOMEM. */
static int ch_url_param(CURL *h, struct np_buf *url, const char *name,
			const char *suffix, const char *value)
{
	char *q = curl_easy_escape(h, value, 0);

	if (!q)
		return -1;
	np_ch_buf_str(url, strchr(np_buf_str(url), '?') ? "&" : "?");
	np_ch_buf_str(url, name);
	np_ch_buf_str(url, suffix);
	np_ch_buf_str(url, "=");
	np_ch_buf_str(url, q);
	curl_free(q);
	return url->oom ? -1 : 0;
}

/*
 * One request: sql as the body, or in the URL when data (the body) or a
 * table (a multipart body, ClickHouse's external data) goes with it.
 */
static int ch_request(struct np_ch *c, const char *sql, const void *data,
		      size_t len, const struct np_ch_table *t,
		      struct np_buf *out, char *err, size_t errlen)
{
	struct np_buf reply = { 0 }, url = { 0 };
	struct curl_slist *hdr = NULL;
	char cerr[CURL_ERROR_SIZE] = "", line[320];
	curl_mime *mime = NULL;
	long status = 0;
	CURLcode rc;
	CURL *h = c->curl;
	int ret = -1;

	np_ch_buf_str(&url, c->base);
	if (c->params) {
		np_ch_buf_str(&url, strchr(c->base, '?') ? "&" : "?");
		np_ch_buf_str(&url, c->params);
	}
	if ((data || t) && ch_url_param(h, &url, "query", "", sql)) {
		ch_seterr(err, errlen, "out of memory");
		goto out;
	}
	if (t && (ch_url_param(h, &url, t->name, "_structure", t->structure) ||
		  ch_url_param(h, &url, t->name, "_format", "RowBinary"))) {
		ch_seterr(err, errlen, "out of memory");
		goto out;
	}
	if (url.oom) {
		ch_seterr(err, errlen, "out of memory");
		goto out;
	}
	curl_easy_reset(h);
	if (t) {
		curl_mimepart *part;

		mime = curl_mime_init(h);
		part = mime ? curl_mime_addpart(mime) : NULL;
		if (!part || curl_mime_name(part, t->name) ||
		    curl_mime_filename(part, t->name) ||
		    curl_mime_data(part, t->data, t->len)) {
			ch_seterr(err, errlen, "out of memory");
			goto out;
		}
	}
	curl_easy_setopt(h, CURLOPT_URL, np_buf_str(&url));
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	if (mime) {
		curl_easy_setopt(h, CURLOPT_MIMEPOST, mime);
	} else {
		curl_easy_setopt(h, CURLOPT_POST, 1L);
		curl_easy_setopt(h, CURLOPT_POSTFIELDS, data ? data : (const void *)sql);
		curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE,
				 (curl_off_t)(data ? len : strlen(sql)));
		hdr = curl_slist_append(hdr, "Content-Type: text/plain");
	}
	/* The server answers big inserts at once; no 100-continue round trip. */
	hdr = curl_slist_append(hdr, "Expect:");
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdr);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, ch_write);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, &reply);
	curl_easy_setopt(h, CURLOPT_ERRORBUFFER, cerr);
	curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT, (long)c->o.connect_timeout_s);
	curl_easy_setopt(h, CURLOPT_TIMEOUT, (long)c->o.timeout_s);
	curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
	curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, ch_progress);
	curl_easy_setopt(h, CURLOPT_XFERINFODATA, (void *)c->o.cancel);
	curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
	if (c->user || c->password[0]) {
		curl_easy_setopt(h, CURLOPT_HTTPAUTH, (long)CURLAUTH_BASIC);
		curl_easy_setopt(h, CURLOPT_USERNAME, c->user ? c->user : "default");
		curl_easy_setopt(h, CURLOPT_PASSWORD, c->password);
	}
	rc = curl_easy_perform(h);
	curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
	if (rc == CURLE_ABORTED_BY_CALLBACK) {
		ch_seterr(err, errlen, "cancelled");
		goto out;
	}
	if (rc != CURLE_OK) {
		ch_seterr(err, errlen, "%s", cerr[0] ? cerr : curl_easy_strerror(rc));
		goto out;
	}
	if (reply.oom) {
		ch_seterr(err, errlen, "out of memory for the reply");
		goto out;
	}
	if (status != 200) {
		ch_reply_line(&reply, line, sizeof(line));
		ch_seterr(err, errlen, "HTTP %ld: %s", status, line);
		goto out;
	}
	if (out && !out->p) {	/* the reply itself: tens of MB, not copied */
		*out = reply;
		np_buf_init(&reply);
	} else if (out && reply.len) {
		np_buf_puts(out, np_buf_str(&reply), reply.len);
	}
	ret = out && out->oom ? -1 : 0;
	if (ret)
		ch_seterr(err, errlen, "out of memory for the reply");
out:
	/* Nothing keeps the password around in libcurl's options. */
	curl_easy_reset(h);
	curl_mime_free(mime);
	curl_slist_free_all(hdr);
	np_buf_free(&reply);
	np_buf_free(&url);
	return ret;
}

int np_ch_exec(struct np_ch *c, const char *sql, const void *data,
	       size_t len, struct np_buf *out, char *err, size_t errlen)
{
	return ch_request(c, sql, data, len, NULL, out, err, errlen);
}

int np_ch_query_with(struct np_ch *c, const char *sql,
		     const struct np_ch_table *t, struct np_buf *out,
		     char *err, size_t errlen)
{
	return ch_request(c, sql, NULL, 0, t, out, err, errlen);
}

int np_ch_read_password(const char *path, char *pw, size_t len,
			char *err, size_t errlen)
{
	struct stat sb;
	ssize_t n;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);

	if (fd < 0) {
		ch_seterr(err, errlen, "%s: %s", path, strerror(errno));
		return -1;
	}
	if (fstat(fd, &sb) || !S_ISREG(sb.st_mode)) {
		ch_seterr(err, errlen, "%s: not a regular file", path);
		close(fd);
		return -1;
	}
	if ((sb.st_uid != 0 && sb.st_uid != geteuid()) || (sb.st_mode & 077)) {
		ch_seterr(err, errlen, "%s: must be owned by root and readable by no one else (chmod 600)",
			  path);
		close(fd);
		return -1;
	}
	n = read(fd, pw, len - 1);
	close(fd);
	if (n < 0) {
		ch_seterr(err, errlen, "%s: %s", path, strerror(errno));
		return -1;
	}
	pw[n] = 0;
	pw[strcspn(pw, "\r\n")] = 0;
	return 0;
}
