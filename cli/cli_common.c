// SPDX-License-Identifier: GPL-2.0
/* Helpers shared by the nmiprof subcommands (see cli.h). */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "store.h"
#include "np_clock.h"

void cli_error(const char *cmd, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	/* One line, whatever the message carried in. */
	for (char *p = msg; *p; p++)
		if (*p == '\n' || *p == '\r')
			*p = ' ';
	if (cmd)
		fprintf(stderr, "nmiprof: %s: %s\n", cmd, msg);
	else
		fprintf(stderr, "nmiprof: %s\n", msg);
}

int cli_usage_error(const char *cmd, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	cli_error(cmd, "%s (try 'nmiprof %s --help')", msg, cmd);
	return EXIT_USAGE;
}

int cli_option_error(const char *cmd, int opt, char *const *argv)
{
	if (opt == ':')
		return cli_usage_error(cmd, "option '%s' needs a value", argv[optind - 1]);
	return cli_usage_error(cmd, "unknown option '%s'", argv[optind - 1]);
}

int cli_exit_for_errno(int err)
{
	if (err < 0)
		err = -err;
	switch (err) {
	case EACCES:
	case EPERM:
		return EXIT_NO_PERM;
	case ENOENT:
	case ENODEV:
	case ENXIO:
	case EOPNOTSUPP:
	case EPROTO:
		return EXIT_NO_BACKEND;
	default:
		return EXIT_FAILURE_RT;
	}
}

int cli_parse_u64(const char *s, uint64_t min, uint64_t max, uint64_t *out)
{
	unsigned long long v;
	char *end;

	if (!s || !*s || !isdigit((unsigned char)*s))
		return -1;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || *end || v < min || v > max)
		return -1;
	*out = v;
	return 0;
}

int cli_parse_time(const char *s, uint64_t now_ns, uint64_t *out)
{
	static const struct { char unit; uint64_t ns; } units[] = {
		{ 's', 1000000000ULL }, { 'm', 60000000000ULL },
		{ 'h', 3600000000000ULL }, { 'd', 86400000000000ULL },
	};
	struct tm tm;
	const char *end;
	uint64_t v;

	if (!strcmp(s, "now")) {
		*out = now_ns;
		return 0;
	}
	if (s[0] == '@') {
		if (cli_parse_u64(s + 1, 0, UINT64_MAX / 1000000000ULL, &v))
			return -1;
		*out = v * 1000000000ULL;
		return 0;
	}
	/* "10m": ten minutes ago */
	size_t n = strlen(s);

	if (n >= 2 && isdigit((unsigned char)s[0])) {
		for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
			char num[32];

			if (s[n - 1] != units[i].unit || n - 1 >= sizeof(num))
				continue;
			memcpy(num, s, n - 1);
			num[n - 1] = 0;
			if (cli_parse_u64(num, 0, UINT64_MAX / units[i].ns, &v))
				return -1;
			v *= units[i].ns;
			*out = v > now_ns ? 1 : now_ns - v;
			return 0;
		}
	}
	memset(&tm, 0, sizeof(tm));
	end = strptime(s, "%Y-%m-%d", &tm);
	if (!end)
		return -1;
	if (*end == ' ' || *end == 'T') {
		const char *e2 = strptime(end + 1, "%H:%M:%S", &tm);

		if (!e2)
			e2 = strptime(end + 1, "%H:%M", &tm);
		end = e2;
	}
	if (!end || *end)
		return -1;
	tm.tm_isdst = -1;
	time_t t = mktime(&tm);

	if (t < 0)
		return -1;
	*out = (uint64_t)t * 1000000000ULL;
	return 0;
}

void cli_format_time(uint64_t ns, char *buf, size_t len)
{
	time_t t = (time_t)(ns / 1000000000ULL);
	struct tm tm;

	if (!ns || !localtime_r(&t, &tm) ||
	    !strftime(buf, len, "%Y-%m-%d %H:%M:%S", &tm))
		snprintf(buf, len, "-");
}

int cli_frames_reserve(struct cli_frames *cf, size_t n)
{
	size_t cap = cf->cap ? cf->cap : 64;
	void *f, *names;

	if (n <= cf->cap)
		return 0;
	while (cap < n)
		cap *= 2;
	f = realloc(cf->f, cap * sizeof(*cf->f));
	if (!f)
		return -ENOMEM;
	cf->f = f;
	names = realloc(cf->names, cap * sizeof(*cf->names));
	if (!names)
		return -ENOMEM;
	cf->names = names;
	cf->cap = cap;
	return 0;
}

void cli_frame_from_sym(struct cli_frames *cf, size_t i, const struct np_sym *s)
{
	cf->f[i].dso = s->dso ? s->dso : "[unknown]";
	cf->f[i].kernel = s->kernel;
	cf->f[i].build_id = s->build_id;
	if (s->name) {
		cf->f[i].sym = s->name;
	} else {
		cf->f[i].sym = np_sym_unnamed(cf->names[i], sizeof(cf->names[i]),
					      s->dso, s->offset);
	}
}

void cli_frames_free(struct cli_frames *cf)
{
	free(cf->f);
	free(cf->names);
	memset(cf, 0, sizeof(*cf));
}

/* ---- loading a profile (report, export) -------------------------- */

struct load_ctx {
	const char *cmd;
	struct topview *tv;
	struct cli_frames cf;
	char first_warning[512];
	unsigned warnings;
	int oom;
};

static void load_warn(void *arg, const char *msg)
{
	struct load_ctx *c = arg;

	/* Held back: a file with no good segment turns it into the error. */
	if (!c->warnings++)
		snprintf(c->first_warning, sizeof(c->first_warning), "%s", msg);
	else if (c->warnings <= 5)
		cli_error(c->cmd, "warning: %s", msg);
}

int cli_topview_add(struct topview *tv, struct topview_sample *ts)
{
	/* Never drop a sample: an empty stack is one unknown frame. */
	static const struct np_frame unk = { "[unknown]", "[unknown]", 0, NULL };

	if (!ts->nr_frames) {
		ts->frames = &unk;
		ts->nr_frames = 1;
	}
	return topview_add(tv, ts);
}

static int load_sample(const struct np_prof_sample *s, void *arg)
{
	struct load_ctx *c = arg;
	struct topview_sample ts;

	if (cli_frames_reserve(&c->cf, s->nr_frames ? s->nr_frames : 1)) {
		c->oom = 1;
		return -ENOMEM;
	}
	for (unsigned i = 0; i < s->nr_frames; i++)
		cli_frame_from_sym(&c->cf, i, s->frames[i]);
	ts = (struct topview_sample){
		.cpu = s->cpu, .pid = s->pid, .comm = s->comm,
		.frames = c->cf.f, .nr_frames = s->nr_frames,
		.weight = (double)s->count,
	};
	if (cli_topview_add(c->tv, &ts)) {
		c->oom = 1;
		return -ENOMEM;
	}
	return 0;
}

int cli_load_profile(const char *cmd, const struct cli_source *src,
		     struct topview *tv, struct cli_profile_info *info)
{
	struct load_ctx c = { .cmd = cmd, .tv = tv };
	const char *what = src->file ? src->file :
			   src->store ? src->store : NP_STORE_DEFAULT_DIR;
	struct np_read_opts ro;
	struct np_read_stats st = { 0 };
	struct np_agg *a = np_agg_new(NULL);
	char err[512] = "";
	struct stat sb;
	int ret;

	if (!a) {
		cli_error(cmd, "out of memory");
		return EXIT_FAILURE_RT;
	}
	if (src->file && !stat(src->file, &sb) && S_ISDIR(sb.st_mode)) {
		cli_error(cmd, "%s: is a directory (a store? use --store DIR)",
			  src->file);
		np_agg_free(a);
		return EXIT_BAD_INPUT;
	}
	np_read_opts_init(&ro);
	ro.since_ns = src->since_ns;
	ro.until_ns = src->until_ns;
	ro.pid = src->pid;
	ro.warn = load_warn;
	ro.warn_arg = &c;
	if (src->file)
		ret = np_profile_read(src->file, &ro, a, &st, err, sizeof(err));
	else
		ret = np_store_read(what, &ro, a, &st, err, sizeof(err));
	if (ret < 0) {
		/* No store at all: most likely no daemon ever ran here. */
		if (ret == -ENOENT && !src->file)
			cli_error(cmd, "%s (no profile store: is nmiprofd running? "
				  "else use -i FILE)", err[0] ? err : strerror(-ret));
		else
			cli_error(cmd, "%s", err[0] ? err : strerror(-ret));
		np_agg_free(a);
		return ret == -EACCES || ret == -EPERM ? EXIT_NO_PERM : EXIT_BAD_INPUT;
	}
	if (!st.segments && st.skipped) {
		size_t n = strlen(c.first_warning);

		/* Nothing was read: it is the error, not a skipped part. */
		if (n > 9 && !strcmp(c.first_warning + n - 9, ", skipped"))
			c.first_warning[n - 9] = 0;
		cli_error(cmd, "%s", c.first_warning[0] ? c.first_warning :
			  "no readable profile segment");
		np_agg_free(a);
		return EXIT_BAD_INPUT;
	}
	if (c.warnings)
		cli_error(cmd, "warning: %s", c.first_warning);
	if (c.warnings > 5)
		cli_error(cmd, "warning: %u more damaged segment(s) skipped",
			  c.warnings - 5);
	ret = np_profile_foreach(a, load_sample, &c);
	cli_frames_free(&c.cf);
	np_agg_free(a);
	if (ret || c.oom) {
		cli_error(cmd, "out of memory loading %s", what);
		return EXIT_FAILURE_RT;
	}
	if (info) {
		info->segments = st.segments;
		info->skipped = st.skipped;
		info->samples = st.samples;
		info->lost = st.lost;
		info->first_ns = st.first_ns;
		info->last_ns = st.last_ns;
		info->period_ns = st.period_ns;
		info->period_mixed = st.period_mixed;
	}
	return EXIT_OK;
}

int cli_frames_option(const char *cmd, int opt, struct topview_filter *f)
{
	int kernel = opt == 'K';

	/* Both default on: the other one off means it was asked for. */
	if (kernel ? f->user && !f->kernel : f->kernel && !f->user)
		return cli_usage_error(cmd, "--kernel and --user exclude each other");
	f->kernel = kernel;
	f->user = !kernel;
	return 0;
}

int cli_source_option(const char *cmd, int opt, const char *arg,
		      struct cli_source *src, struct topview_filter *f)
{
	uint64_t v, now = np_real_ns();

	switch (opt) {
	case 'i':
		src->file = arg;
		return 0;
	case OPT_STORE:
		src->store = arg;
		return 0;
	case OPT_SINCE:
	case OPT_UNTIL:
		if (cli_parse_time(arg, now, &v))
			return cli_usage_error(cmd, "bad time '%s'", arg);
		if (opt == OPT_SINCE)
			src->since_ns = v;
		else
			src->until_ns = v;
		return 0;
	case OPT_PID:
		if (cli_parse_u64(arg, 0, INT32_MAX, &v))
			return cli_usage_error(cmd, "bad pid '%s'", arg);
		src->pid = (int64_t)v;
		f->pid = (int64_t)v;
		return 0;
	case OPT_COMM:
		if (strlen(arg) >= TOPVIEW_COMM_MAX)
			return cli_usage_error(cmd, "comm '%s' is longer than %d bytes",
					       arg, TOPVIEW_COMM_MAX - 1);
		snprintf(f->comm, sizeof(f->comm), "%s", arg);
		return 0;
	case OPT_CPU:
		if (cli_parse_u64(arg, 0, 65535, &v))
			return cli_usage_error(cmd, "bad cpu '%s'", arg);
		f->cpu = (int)v;
		return 0;
	case OPT_CLUSTER:
		src->cluster = arg;
		return 0;
	case OPT_PWFILE:
		src->password_file = arg;
		return 0;
	case OPT_HOST:
		if (src->nr_hosts == sizeof(src->hosts) / sizeof(src->hosts[0]))
			return cli_usage_error(cmd, "too many --host options");
		src->hosts[src->nr_hosts++] = arg;
		return 0;
	case OPT_LABEL:
		if (!strchr(arg, '=') || *arg == '=')
			return cli_usage_error(cmd, "bad label '%s' (K=V)", arg);
		if (src->nr_labels == sizeof(src->labels) / sizeof(src->labels[0]))
			return cli_usage_error(cmd, "too many --label options");
		src->labels[src->nr_labels++] = arg;
		return 0;
	case 'K':
	case 'U':
		return cli_frames_option(cmd, opt, f);
	}
	return -1;
}

int cli_load_view(const char *cmd, const struct cli_source *src,
		  const struct topview_filter *f, const struct topview_keys *keys,
		  struct topview **tv, struct cli_profile_info *info)
{
	int ret;

	*tv = NULL;
	if (src->file && (src->store || src->since_ns || src->until_ns))
		return cli_usage_error(cmd, "-i FILE excludes --store/--since/--until");
	if (src->since_ns && src->until_ns && src->since_ns > src->until_ns)
		return cli_usage_error(cmd, "--since is after --until");
	if (src->cluster && (src->file || src->store))
		return cli_usage_error(cmd, "--cluster excludes -i and --store");
	if (!src->cluster && (src->nr_hosts || src->nr_labels || src->password_file))
		return cli_usage_error(cmd, "--host, --label and --password-file need --cluster");
	*tv = topview_new();
	if (!*tv) {
		cli_error(cmd, "out of memory");
		return EXIT_FAILURE_RT;
	}
	topview_set_filter(*tv, f);
	if (keys)
		topview_set_keys(*tv, keys);
	if (src->cluster)
		ret = cli_load_cluster(cmd, src, *tv, info);
	else
		ret = cli_load_profile(cmd, src, *tv, info);
	if (ret) {
		topview_free(*tv);
		*tv = NULL;
	}
	return ret;
}
