/* SPDX-License-Identifier: GPL-2.0 */
/*
 * nmiprofd configuration: /etc/nmiprof/nmiprofd.conf (key = value) with
 * command-line overrides.  Every setting has one key; the command-line
 * flags are spelled the same with dashes (store_dir -> --store-dir).
 */
#ifndef NPD_CONFIG_H
#define NPD_CONFIG_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/un.h>

#include "np_backend.h"
#include "np_log.h"

#define NPD_DEFAULT_CONFIG	"/etc/nmiprof/nmiprofd.conf"
#define NPD_DEFAULT_STORE	"/var/lib/nmiprof"
#define NPD_MAX_OVERRIDES	32

struct npd_config {
	char store_dir[1024];		/* fits np_ctl_status.store_dir */
	uint32_t slice_s;		/* seconds per stored slice */
	uint64_t retention_bytes;	/* 0: unlimited */
	uint64_t retention_age_s;	/* 0: unlimited */
	uint64_t pending_bytes;		/* unwritten slice data while the
					 * store fails, at most */
	uint32_t freq_hz;		/* per CPU */
	enum np_backend_kind backend;
	char socket_path[sizeof(((struct sockaddr_un *)0)->sun_path)];
	uint32_t kstack_depth, ustack_depth;
	int user_stacks;
	uint64_t unwind_budget;		/* nmiprof.ko's table memory, bytes;
					 * 0: the module's own setting */
	enum np_log_level log_level;
	uint32_t live_s;		/* seconds of per-second aggregates kept */
	/* fleet export (fleet.c): empty url, no export */
	char clickhouse_url[1024];
	char clickhouse_password_file[1024];
	char host_label[128];		/* empty: the hostname */
	char labels[512];		/* "k=v,k=v" */
	uint32_t clickhouse_timeout_s;	/* one request, at most */
};

/* key=value pairs from the command line, re-applied after every reload. */
struct npd_overrides {
	unsigned int nr;
	char *key[NPD_MAX_OVERRIDES];
	char *val[NPD_MAX_OVERRIDES];
};

void npd_config_defaults(struct npd_config *c);
/* Set one key; -1 with a one-line reason on an unknown key or bad value. */
int npd_config_set(struct npd_config *c, const char *key, const char *val,
		   char *err, size_t errlen);
/*
 * Build a config: defaults, then the file (a missing file is fine unless
 * must_exist), then the overrides.  On error *c is untouched.
 */
int npd_config_load(struct npd_config *c, const char *path, int must_exist,
		    const struct npd_overrides *ov, char *err, size_t errlen);
/* Remember a command-line setting (validated against a scratch config). */
int npd_overrides_add(struct npd_overrides *ov, const char *key,
		      const char *val, char *err, size_t errlen);
void npd_overrides_free(struct npd_overrides *ov);

const char *npd_backend_kind_name(enum np_backend_kind k);

/* Does switching from a to b need the backend reopened / a restart? */
int npd_config_backend_changed(const struct npd_config *a,
			       const struct npd_config *b);
/* Names the first setting that only a restart can change, else NULL. */
const char *npd_config_restart_needed(const struct npd_config *a,
				      const struct npd_config *b);

#endif /* NPD_CONFIG_H */
