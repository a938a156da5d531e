/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A small ClickHouse client over its HTTP interface, through libcurl
 * (TLS when the URL is https).  Shared by nmiprofd's fleet exporter and
 * `nmiprof report/export/cluster --cluster`.
 *
 * The URL names the server and, in its query string, the database
 * (http://[user@]host:8123/?database=nmiprof).  A password never goes in
 * the URL, the command line or a log line: it is read from a file that
 * only root (or the caller) can read, and sent as HTTP basic auth.
 *
 * Requests are synchronous and bounded: a connect timeout, a total
 * timeout, and a cancel flag another thread may set to end a transfer at
 * once (daemon shutdown).
 */
#ifndef NP_CH_H
#define NP_CH_H

#include <endian.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "np_buf.h"

#define NP_CH_PASSWORD_MAX	256

/* Request bodies and replies are np_bufs, kept NUL-terminated. */
static inline void np_ch_buf_str(struct np_buf *b, const char *s)
{
	np_buf_puts(b, s, strlen(s));
}
void np_ch_buf_printf(struct np_buf *b, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* RowBinary values: integers little-endian, strings length-prefixed. */
static inline void np_ch_rb_u8(struct np_buf *b, uint8_t v)
{
	np_put_bytes(b, &v, 1);
}

static inline void np_ch_rb_u32(struct np_buf *b, uint32_t v)
{
	v = htole32(v);
	np_put_bytes(b, &v, 4);
}

static inline void np_ch_rb_u64(struct np_buf *b, uint64_t v)
{
	v = htole64(v);
	np_put_bytes(b, &v, 8);
}

static inline void np_ch_rb_str(struct np_buf *b, const char *s)
{
	size_t len = strlen(s);

	np_put_var(b, len);
	np_put_bytes(b, s, len);
}

/* s as one TabSeparated field (\t, \n, \\ and control bytes escaped). */
void np_ch_buf_tsv(struct np_buf *b, const char *s);
/* s as a single-quoted SQL string literal. */
void np_ch_buf_sql_str(struct np_buf *b, const char *s);

/* In place: undo np_ch_buf_tsv's escaping of one field. */
void np_ch_tsv_unescape(char *s);

struct np_ch_opts {
	const char *url;
	const char *password;		/* NULL: none */
	unsigned int connect_timeout_s;	/* default 5 */
	unsigned int timeout_s;		/* whole request, default 60 */
	const volatile int *cancel;	/* nonzero: abort the transfer */
	const char *params;		/* "k=v&k=v" added to every request */
};

struct np_ch;

/* Checks the URL (http or https, no password in it).  NULL with err. */
struct np_ch *np_ch_open(const struct np_ch_opts *o, char *err, size_t errlen);
void np_ch_close(struct np_ch *c);
/* The URL's database= (default "default"). */
const char *np_ch_database(const struct np_ch *c);
/* The URL without any user part, for messages. */
const char *np_ch_url(const struct np_ch *c);

/*
 * Run one statement.  With data, sql is sent in the URL (an INSERT ...
 * FORMAT ...) and data is the body; without, sql is the body.  The reply
 * body is appended to out (may be NULL).  0, or -1 with a one-line
 * reason in err (the server's exception, an HTTP status or libcurl's).
 */
int np_ch_exec(struct np_ch *c, const char *sql, const void *data,
	       size_t len, struct np_buf *out, char *err, size_t errlen);

/*
 * A table sent along with a query (ClickHouse's "external data", a
 * temporary table the query reads by name, `x IN name`; shards of a
 * Distributed table get it too): a long id list costs seconds to parse
 * as SQL literals, milliseconds as rows.
 */
struct np_ch_table {
	const char *name;	/* an identifier */
	const char *structure;	/* "stack UInt64" */
	const void *data;	/* RowBinary rows */
	size_t len;
};

/* Run one SELECT with table t; out and the result as np_ch_exec(). */
int np_ch_query_with(struct np_ch *c, const char *sql,
		     const struct np_ch_table *t, struct np_buf *out,
		     char *err, size_t errlen);

/*
 * Read a password file: the first line.  The file must be a regular
 * file owned by root or the caller, readable by no one else (mode
 * 0600 or 0400); else -1 with the reason.
 */
int np_ch_read_password(const char *path, char *pw, size_t len,
			char *err, size_t errlen);

#endif /* NP_CH_H */
