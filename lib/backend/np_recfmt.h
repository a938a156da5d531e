/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Decoding nmiprof.ko records by field name.  The module describes each
 * record type with ftrace-style format text (NMIPROF_IOC_GET_FORMAT);
 * libtraceevent parses it and we cache each field's offset and size, so
 * a module that appended or reordered fields still decodes correctly.
 */
#ifndef NP_RECFMT_H
#define NP_RECFMT_H

#include <stddef.h>
#include "np_event.h"

struct np_recfmt;

struct np_recfmt *np_recfmt_new(void);
void np_recfmt_free(struct np_recfmt *f);
/*
 * Add one record type's format text (its "ID:" is the record type).
 * Fails with a one-line err if the text does not parse or lacks a field
 * this daemon needs.
 */
int np_recfmt_add(struct np_recfmt *f, const char *text, size_t len,
		  char *err, size_t errlen);
/* Is record type `type` described? */
int np_recfmt_has(const struct np_recfmt *f, unsigned int type);
/*
 * Decode one record (starting with struct nmiprof_rec_header, `size`
 * bytes) and pass it to fn.  Returns 1 if fn returned non-zero (the
 * caller should stop), else 0 (records of an unknown type are skipped
 * and counted), or -EINVAL for a malformed record.
 */
int np_recfmt_decode(struct np_recfmt *f, const void *rec, size_t size,
		     np_event_fn fn, void *arg);
/* Records skipped because their type was not described. */
unsigned long np_recfmt_unknown(const struct np_recfmt *f);

#endif /* NP_RECFMT_H */
