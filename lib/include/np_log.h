/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Levelled logging to stderr.
 *
 * Daemons run under systemd with stderr connected to the journal; there
 * each line starts with an sd-daemon(3) "<N>" priority prefix so the
 * journal records the level (systemd sets $JOURNAL_STREAM for us, see
 * systemd.exec(5)).  On a terminal the line reads "ident: level: text".
 * No libsystemd is needed for either.
 *
 * The level and ident are process-wide settings of this module; they are
 * set once at start-up (and on a config reload) by the program's main.
 */
#ifndef NP_LOG_H
#define NP_LOG_H

enum np_log_level {
	NP_LOG_ERR = 0,
	NP_LOG_WARN,
	NP_LOG_INFO,
	NP_LOG_DEBUG,
};

/* ident: prefix of terminal lines (e.g. "nmiprofd"); the string is copied. */
void np_log_init(const char *ident, enum np_log_level level);
void np_log_set_level(enum np_log_level level);
enum np_log_level np_log_get_level(void);
/* "error", "warning"/"warn", "info", "debug"; returns 0 or -1. */
int np_log_parse_level(const char *s, enum np_log_level *out);
const char *np_log_level_name(enum np_log_level level);

void np_log(enum np_log_level level, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

#define np_err(...)	np_log(NP_LOG_ERR, __VA_ARGS__)
#define np_warn(...)	np_log(NP_LOG_WARN, __VA_ARGS__)
#define np_info(...)	np_log(NP_LOG_INFO, __VA_ARGS__)
#define np_dbg(...)	np_log(NP_LOG_DEBUG, __VA_ARGS__)

#endif /* NP_LOG_H */
