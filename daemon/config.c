// SPDX-License-Identifier: GPL-2.0
/*
 * nmiprofd configuration file and overrides (see config.h and
 * docs/nmiprofd.conf.example for the keys).
 */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "config.h"

static void npd_seterr(char *err, size_t errlen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void npd_seterr(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

void npd_config_defaults(struct npd_config *c)
{
	memset(c, 0, sizeof(*c));
	snprintf(c->store_dir, sizeof(c->store_dir), "%s", NPD_DEFAULT_STORE);
	c->slice_s = 60;
	c->retention_bytes = 1ULL << 30;	/* 1 GiB */
	c->retention_age_s = 7 * 86400;
	c->pending_bytes = 64ULL << 20;
	c->freq_hz = 99;
	c->backend = NP_BACKEND_AUTO;
	snprintf(c->socket_path, sizeof(c->socket_path), "%s",
		 "/run/nmiprof/nmiprofd.sock");
	c->kstack_depth = NMIPROF_DEFAULT_FRAMES;
	c->ustack_depth = NMIPROF_DEFAULT_FRAMES;
	c->user_stacks = 1;
	c->log_level = NP_LOG_INFO;
	c->live_s = 300;
	c->clickhouse_timeout_s = 30;
}

/* An unsigned number with an optional unit suffix from units[]. */
struct npd_unit {
	const char *suffix;
	uint64_t mult;
};

static int npd_parse_scaled(const char *s, const struct npd_unit *units,
			    uint64_t lo, uint64_t hi, uint64_t *out)
{
	unsigned long long v;
	char *end;

	if (!isdigit((unsigned char)*s))
		return -1;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno)
		return -1;
	if (*end) {
		const struct npd_unit *u;

		for (u = units; u && u->suffix; u++)
			if (!strcasecmp(end, u->suffix))
				break;
		if (!u || !u->suffix)
			return -1;
		if (v && u->mult > UINT64_MAX / v)
			return -1;
		v *= u->mult;
	}
	if (v < lo || v > hi)
		return -1;
	*out = v;
	return 0;
}

static const struct npd_unit npd_size_units[] = {
	{ "K", 1ULL << 10 }, { "KiB", 1ULL << 10 }, { "M", 1ULL << 20 },
	{ "MiB", 1ULL << 20 }, { "G", 1ULL << 30 }, { "GiB", 1ULL << 30 },
	{ "T", 1ULL << 40 }, { "TiB", 1ULL << 40 }, { NULL, 0 },
};

static const struct npd_unit npd_time_units[] = {
	{ "s", 1 }, { "m", 60 }, { "min", 60 }, { "h", 3600 },
	{ "d", 86400 }, { "w", 7 * 86400 }, { NULL, 0 },
};

static int npd_parse_bool(const char *s, int *out)
{
	static const char *const yes[] = { "1", "yes", "true", "on" };
	static const char *const no[] = { "0", "no", "false", "off" };

	for (unsigned int i = 0; i < 4; i++) {
		if (!strcasecmp(s, yes[i])) {
			*out = 1;
			return 0;
		}
		if (!strcasecmp(s, no[i])) {
			*out = 0;
			return 0;
		}
	}
	return -1;
}

static const char *const npd_backend_names[] = {
	[NP_BACKEND_AUTO] = "auto",
	[NP_BACKEND_KMOD] = "kmod",
	[NP_BACKEND_PERF] = "libperf",
};

const char *npd_backend_kind_name(enum np_backend_kind k)
{
	if ((unsigned int)k > NP_BACKEND_PERF)
		return "?";
	return npd_backend_names[k];
}

enum npd_key_type { NPD_STR, NPD_STR0, NPD_LABELS, NPD_U32, NPD_SIZE, NPD_AGE, NPD_BOOL,
		    NPD_BACKEND, NPD_LOGLEVEL };

struct npd_key {
	const char *name;
	enum npd_key_type type;
	size_t off, size;
	uint64_t lo, hi;
};

#define NPD_KEY(n, t, field, l, h) \
	{ n, t, offsetof(struct npd_config, field), \
	  sizeof(((struct npd_config *)0)->field), l, h }

static const struct npd_key npd_keys[] = {
	NPD_KEY("store_dir", NPD_STR, store_dir, 1, 0),
	NPD_KEY("slice_seconds", NPD_U32, slice_s, 1, 86400),
	NPD_KEY("retention_size", NPD_SIZE, retention_bytes, 0, UINT64_MAX),
	NPD_KEY("retention_age", NPD_AGE, retention_age_s, 0, UINT64_MAX),
	NPD_KEY("pending_size", NPD_SIZE, pending_bytes, 1ULL << 20, UINT64_MAX),
	NPD_KEY("frequency", NPD_U32, freq_hz, 1, NMIPROF_MAX_FREQ),
	NPD_KEY("backend", NPD_BACKEND, backend, 0, 0),
	NPD_KEY("socket", NPD_STR, socket_path, 1, 0),
	NPD_KEY("kernel_stack_depth", NPD_U32, kstack_depth, 1, NMIPROF_MAX_FRAMES),
	NPD_KEY("user_stack_depth", NPD_U32, ustack_depth, 1, NMIPROF_MAX_FRAMES),
	NPD_KEY("user_stacks", NPD_BOOL, user_stacks, 0, 1),
	NPD_KEY("unwind_budget", NPD_SIZE, unwind_budget, NP_UNWIND_BUDGET_MIN,
		NP_UNWIND_BUDGET_MAX),
	NPD_KEY("log_level", NPD_LOGLEVEL, log_level, 0, 0),
	NPD_KEY("live_seconds", NPD_U32, live_s, 10, 3600),
	NPD_KEY("clickhouse_url", NPD_STR0, clickhouse_url, 0, 0),
	NPD_KEY("clickhouse_password_file", NPD_STR0, clickhouse_password_file, 0, 0),
	NPD_KEY("clickhouse_timeout", NPD_AGE, clickhouse_timeout_s, 1, 3600),
	NPD_KEY("host_label", NPD_STR0, host_label, 0, 0),
	NPD_KEY("labels", NPD_LABELS, labels, 0, 0),
};

/* "k=v,k=v": no empty key, no '=' in a value, no spaces. */
static int npd_labels_ok(const char *s)
{
	while (*s) {
		size_t n = strcspn(s, ","), k = strcspn(s, "=");

		if (k == 0 || k >= n || memchr(s + k + 1, '=', n - k - 1) ||
		    strcspn(s, " \t'\\") < n)
			return 0;
		s += n;
		if (*s == ',' && !*++s)
			return 0;
	}
	return 1;
}

int npd_config_set(struct npd_config *c, const char *key, const char *val,
		   char *err, size_t errlen)
{
	const struct npd_key *k = NULL;
	char *field = (char *)c;
	uint64_t v;

	for (unsigned int i = 0; i < sizeof(npd_keys) / sizeof(npd_keys[0]); i++)
		if (!strcmp(npd_keys[i].name, key))
			k = &npd_keys[i];
	if (!k) {
		npd_seterr(err, errlen, "unknown setting '%s'", key);
		return -1;
	}
	field += k->off;
	switch (k->type) {
	case NPD_STR:
		if (!*val || strlen(val) >= k->size) {
			npd_seterr(err, errlen, "%s: must be 1..%zu characters",
				   key, k->size - 1);
			return -1;
		}
		strcpy(field, val);
		return 0;
	case NPD_STR0:
		if (strlen(val) >= k->size) {
			npd_seterr(err, errlen, "%s: must be at most %zu characters",
				   key, k->size - 1);
			return -1;
		}
		strcpy(field, val);
		return 0;
	case NPD_LABELS:
		if (strlen(val) >= k->size || !npd_labels_ok(val)) {
			npd_seterr(err, errlen, "%s: '%s' is not k=v[,k=v...] (at most %zu characters)",
				   key, val, k->size - 1);
			return -1;
		}
		strcpy(field, val);
		return 0;
	case NPD_U32:
		if (npd_parse_scaled(val, NULL, k->lo, k->hi, &v))
			goto range;
		*(uint32_t *)field = (uint32_t)v;
		return 0;
	case NPD_SIZE:
		if (npd_parse_scaled(val, npd_size_units, k->lo, k->hi, &v)) {
			if (k->lo)
				npd_seterr(err, errlen, "%s: '%s' is not a size from %lluK to %lluG, such as 512M",
					   key, val, (unsigned long long)(k->lo >> 10),
					   (unsigned long long)(k->hi >> 30));
			else
				npd_seterr(err, errlen, "%s: '%s' is not a size such as 512M, 2G or 0 (unlimited)",
					   key, val);
			return -1;
		}
		*(uint64_t *)field = v;
		return 0;
	case NPD_AGE:
		if (npd_parse_scaled(val, npd_time_units, k->lo, k->hi, &v)) {
			npd_seterr(err, errlen, k->lo ?
				   "%s: '%s' is not a time such as 30, 30s or 2m" :
				   "%s: '%s' is not an age such as 3600, 12h, 7d or 0 (unlimited)",
				   key, val);
			return -1;
		}
		if (k->size == sizeof(uint32_t))
			*(uint32_t *)field = (uint32_t)v;
		else
			*(uint64_t *)field = v;
		return 0;
	case NPD_BOOL:
		if (npd_parse_bool(val, (int *)field)) {
			npd_seterr(err, errlen, "%s: '%s' is not yes or no", key, val);
			return -1;
		}
		return 0;
	case NPD_BACKEND:
		for (unsigned int i = 0; i <= NP_BACKEND_PERF; i++) {
			if (!strcmp(val, npd_backend_names[i]) ||
			    (i == NP_BACKEND_PERF && !strcmp(val, "perf"))) {
				*(enum np_backend_kind *)field = (enum np_backend_kind)i;
				return 0;
			}
		}
		npd_seterr(err, errlen, "%s: '%s' is not auto, kmod or libperf", key, val);
		return -1;
	case NPD_LOGLEVEL:
		if (np_log_parse_level(val, (enum np_log_level *)field)) {
			npd_seterr(err, errlen, "%s: '%s' is not error, warning, info or debug",
				   key, val);
			return -1;
		}
		return 0;
	}
range:
	npd_seterr(err, errlen, "%s: '%s' is not a number in %" PRIu64 "..%" PRIu64,
		   key, val, k->lo, k->hi);
	return -1;
}

static char *npd_trim(char *s)
{
	char *e;

	while (isspace((unsigned char)*s))
		s++;
	e = s + strlen(s);
	while (e > s && isspace((unsigned char)e[-1]))
		*--e = '\0';
	return s;
}

static int npd_config_parse_file(struct npd_config *c, FILE *f,
				 const char *path, char *err, size_t errlen)
{
	char buf[PATH_MAX + 64], msg[256];
	unsigned int lineno = 0;

	while (fgets(buf, sizeof(buf), f)) {
		char *line, *eq, *key, *val;

		lineno++;
		if (!strchr(buf, '\n') && !feof(f)) {
			npd_seterr(err, errlen, "%s:%u: line too long", path, lineno);
			return -1;
		}
		line = npd_trim(buf);
		if (!*line || *line == '#')
			continue;
		eq = strchr(line, '=');
		if (!eq) {
			npd_seterr(err, errlen, "%s:%u: expected 'key = value'",
				   path, lineno);
			return -1;
		}
		*eq = '\0';
		key = npd_trim(line);
		val = npd_trim(eq + 1);
		/* Optional quotes around values with leading/trailing spaces. */
		if (strlen(val) >= 2 && val[0] == '"' && val[strlen(val) - 1] == '"') {
			val[strlen(val) - 1] = '\0';
			val++;
		}
		if (npd_config_set(c, key, val, msg, sizeof(msg))) {
			npd_seterr(err, errlen, "%s:%u: %s", path, lineno, msg);
			return -1;
		}
	}
	if (ferror(f)) {
		npd_seterr(err, errlen, "%s: read error", path);
		return -1;
	}
	return 0;
}

int npd_config_load(struct npd_config *out, const char *path, int must_exist,
		    const struct npd_overrides *ov, char *err, size_t errlen)
{
	struct npd_config c;
	char msg[256];
	FILE *f;

	npd_config_defaults(&c);
	f = path ? fopen(path, "re") : NULL;
	if (f) {
		int rc = npd_config_parse_file(&c, f, path, err, errlen);

		fclose(f);
		if (rc)
			return -1;
	} else if (path && (must_exist || errno != ENOENT)) {
		npd_seterr(err, errlen, "%s: %s", path, strerror(errno));
		return -1;
	}
	for (unsigned int i = 0; ov && i < ov->nr; i++) {
		if (npd_config_set(&c, ov->key[i], ov->val[i], msg, sizeof(msg))) {
			npd_seterr(err, errlen, "command line: %s", msg);
			return -1;
		}
	}
	*out = c;
	return 0;
}

int npd_overrides_add(struct npd_overrides *ov, const char *key,
		      const char *val, char *err, size_t errlen)
{
	struct npd_config scratch;

	npd_config_defaults(&scratch);
	if (npd_config_set(&scratch, key, val, err, errlen))
		return -1;
	if (ov->nr == NPD_MAX_OVERRIDES) {
		npd_seterr(err, errlen, "too many options");
		return -1;
	}
	ov->key[ov->nr] = strdup(key);
	ov->val[ov->nr] = strdup(val);
	if (!ov->key[ov->nr] || !ov->val[ov->nr]) {
		free(ov->key[ov->nr]);
		free(ov->val[ov->nr]);
		npd_seterr(err, errlen, "out of memory");
		return -1;
	}
	ov->nr++;
	return 0;
}

void npd_overrides_free(struct npd_overrides *ov)
{
	for (unsigned int i = 0; i < ov->nr; i++) {
		free(ov->key[i]);
		free(ov->val[i]);
	}
	ov->nr = 0;
}

int npd_config_backend_changed(const struct npd_config *a,
			       const struct npd_config *b)
{
	return a->backend != b->backend || a->freq_hz != b->freq_hz ||
	       a->kstack_depth != b->kstack_depth ||
	       a->ustack_depth != b->ustack_depth ||
	       a->user_stacks != b->user_stacks ||
	       a->unwind_budget != b->unwind_budget;
}

const char *npd_config_restart_needed(const struct npd_config *a,
				      const struct npd_config *b)
{
	if (strcmp(a->store_dir, b->store_dir))
		return "store_dir";
	if (strcmp(a->socket_path, b->socket_path))
		return "socket";
	if (a->live_s != b->live_s)
		return "live_seconds";
	return NULL;
}
