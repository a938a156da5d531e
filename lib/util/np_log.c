// SPDX-License-Identifier: GPL-2.0
/*
 * Levelled logging to stderr, journal-aware (see np_log.h).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "np_log.h"

/* Process-wide by nature: there is one stderr.  Private to this file. */
static struct {
	char ident[32];
	enum np_log_level level;
	int journal;		/* stderr is the journal: use <N> prefixes */
} np_log_state = { "nmiprof", NP_LOG_INFO, 0 };

static const struct {
	const char *name;
	int syslog_prio;	/* sd-daemon(3) prefix: LOG_ERR .. LOG_DEBUG */
} np_log_levels[] = {
	[NP_LOG_ERR]	= { "error", 3 },
	[NP_LOG_WARN]	= { "warning", 4 },
	[NP_LOG_INFO]	= { "info", 6 },
	[NP_LOG_DEBUG]	= { "debug", 7 },
};

/*
 * systemd sets JOURNAL_STREAM=<dev>:<ino> of the stream it connected to
 * stderr; it only counts if stderr still is that stream (we may have been
 * started from a unit but redirected).
 */
static int np_log_stderr_is_journal(void)
{
	const char *js = getenv("JOURNAL_STREAM");
	unsigned long long dev, ino;
	struct stat st;

	if (!js || sscanf(js, "%llu:%llu", &dev, &ino) != 2)
		return 0;
	if (fstat(2, &st) < 0)
		return 0;
	return (unsigned long long)st.st_dev == dev &&
	       (unsigned long long)st.st_ino == ino;
}

void np_log_init(const char *ident, enum np_log_level level)
{
	snprintf(np_log_state.ident, sizeof(np_log_state.ident), "%s",
		 ident ? ident : "nmiprof");
	np_log_set_level(level);
	np_log_state.journal = np_log_stderr_is_journal();
}

void np_log_set_level(enum np_log_level level)
{
	if (level > NP_LOG_DEBUG)
		level = NP_LOG_DEBUG;
	np_log_state.level = level;
}

enum np_log_level np_log_get_level(void)
{
	return np_log_state.level;
}

int np_log_parse_level(const char *s, enum np_log_level *out)
{
	static const struct {
		const char *name;
		enum np_log_level level;
	} names[] = {
		{ "error", NP_LOG_ERR }, { "err", NP_LOG_ERR },
		{ "warning", NP_LOG_WARN }, { "warn", NP_LOG_WARN },
		{ "info", NP_LOG_INFO }, { "debug", NP_LOG_DEBUG },
	};

	for (unsigned int i = 0; s && i < sizeof(names) / sizeof(names[0]); i++) {
		if (!strcasecmp(s, names[i].name)) {
			*out = names[i].level;
			return 0;
		}
	}
	return -1;
}

const char *np_log_level_name(enum np_log_level level)
{
	if (level > NP_LOG_DEBUG)
		return "?";
	return np_log_levels[level].name;
}

void np_log(enum np_log_level level, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;
	int n;

	if (level > np_log_state.level)
		return;
	va_start(ap, fmt);
	n = vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	/* One line per message: the journal splits on newlines anyway. */
	while (n > 0 && (size_t)n < sizeof(msg) && msg[n - 1] == '\n')
		msg[--n] = '\0';
	for (char *p = msg; *p; p++)
		if (*p == '\n')
			*p = ' ';

	/* A single fprintf: stderr is unbuffered, keep the line in one write. */
	if (np_log_state.journal)
		fprintf(stderr, "<%d>%s\n", np_log_levels[level].syslog_prio, msg);
	else
		fprintf(stderr, "%s: %s: %s\n", np_log_state.ident,
			np_log_levels[level].name, msg);
}
