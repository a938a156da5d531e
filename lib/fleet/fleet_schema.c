// SPDX-License-Identifier: GPL-2.0
/*
 * The fleet schema (docs/fleet.md).  Only SQL that ClickHouse 18.16
 * (Debian 12) and current releases both accept: MergeTree with PARTITION
 * BY / ORDER BY, ReplacingMergeTree, Distributed, Array columns.  No TTL
 * (19.6+), no codecs, no LowCardinality: retention drops day partitions
 * (np_fleet_prune).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "np_fleet.h"

/* %1$s: database.  Local tables hold one shard's rows. */
static const char *const fleet_local[] = {
	"CREATE TABLE IF NOT EXISTS %1$s.samples_local ("
	" day Date DEFAULT toDate(time), time DateTime, host String,"
	" batch UInt64, pid UInt32, cpu UInt32, comm String, stack UInt64, count UInt64,"
	" comm_hash UInt64 DEFAULT " NP_FLEET_COMM_HASH ")"
	" ENGINE = MergeTree PARTITION BY day ORDER BY (host, time, stack, pid, cpu)",

	/*
	 * One row per stack and day, its frames as ids into frames_local;
	 * repeats collapse when parts merge.  (The first schema's
	 * stacks_local, frames inline, is still read: fleet_query.c.)
	 */
	"CREATE TABLE IF NOT EXISTS %1$s.stack_frames_local ("
	" day Date DEFAULT toDate(time), time DateTime, stack UInt64,"
	" frames Array(UInt64))"
	" ENGINE = ReplacingMergeTree PARTITION BY day ORDER BY stack",

	/*
	 * One row per frame and day: far fewer frames than stacks.
	 * build_id: the object's GNU build-id, hex ("" if none); added
	 * after the first schema (fleet_added below).
	 */
	"CREATE TABLE IF NOT EXISTS %1$s.frames_local ("
	" day Date DEFAULT toDate(time), time DateTime, frame UInt64,"
	" kernel UInt8, dso String, func String, off UInt64, build_id String)"
	" ENGINE = ReplacingMergeTree PARTITION BY day ORDER BY frame",

	/* A slice's row commits its batch: inserted after its samples. */
	"CREATE TABLE IF NOT EXISTS %1$s.slices_local ("
	" day Date DEFAULT toDate(toDateTime(intDiv(start, 1000000000))),"
	" host String, start UInt64, end UInt64, batch UInt64,"
	" samples UInt64, lost UInt64, labels Array(String))"
	" ENGINE = MergeTree PARTITION BY day ORDER BY (host, start)",

	/*
	 * The committed samples of a (host, day), summed per (pid, comm,
	 * stack): `nmiprof cluster rollup`.  A rollup counts once its
	 * rollups_local row is in, and a query uses it only while the
	 * committed slices of that (host, day) are the ones it covers.
	 */
	"CREATE TABLE IF NOT EXISTS %1$s.samples_day_local ("
	" day Date, host String, rollup UInt64, pid UInt32, comm String,"
	" stack UInt64, count UInt64, comm_hash UInt64 DEFAULT " NP_FLEET_COMM_HASH ")"
	" ENGINE = MergeTree PARTITION BY day ORDER BY (host, day, rollup, stack, pid)",

	/* checksum: the sum of cityHash64 of the slices' batches */
	"CREATE TABLE IF NOT EXISTS %1$s.rollups_local ("
	" day Date, host String, rollup UInt64, slices UInt64, checksum UInt64)"
	" ENGINE = MergeTree PARTITION BY day ORDER BY (host, day)",

	"CREATE TABLE IF NOT EXISTS %1$s.lockups_local ("
	" day Date DEFAULT toDate(time), time DateTime, host String,"
	" id String, cpu UInt32,"
	" pid UInt32, tid UInt32, comm String, stuck_ns UInt64,"
	" kernel Array(UInt8), dsos Array(String), funcs Array(String),"
	" offsets Array(UInt64), flags Nullable(UInt32))"
	" ENGINE = ReplacingMergeTree PARTITION BY day ORDER BY (host, id)",
};

/* The tables the sharding key spreads: rows of one host stay together. */
static const struct {
	const char *name, *key;
} fleet_dist[] = {
	{ "samples", "cityHash64(host)" },
	{ "slices", "cityHash64(host)" },
	{ "stack_frames", "stack" },
	{ "frames", "frame" },
	{ "lockups", "cityHash64(host)" },
	{ "samples_day", "cityHash64(host)" },
	{ "rollups", "cityHash64(host)" },
};

/*
 * Columns that later schemas added to existing tables, last in each
 * table as CREATE above has them.  18.16 has no ADD COLUMN IF NOT
 * EXISTS: system.columns tells whether a table lacks one.
 */
static const struct {
	const char *table, *column, *type;
} fleet_added[] = {
	{ "frames", "build_id", "String" },
	/* np_fleet.h; parts written before compute it as they are read */
	{ "samples", "comm_hash", "UInt64 DEFAULT " NP_FLEET_COMM_HASH },
	/* NMIPROF_LF_*; NULL in rows of daemons that did not send it */
	{ "lockups", "flags", "Nullable(UInt32)" },
};

static int fleet_exec(struct np_ch *c, const char *sql, char *err,
		      size_t errlen)
{
	char msg[512];

	if (!np_ch_exec(c, sql, NULL, 0, NULL, msg, sizeof(msg)))
		return 0;
	snprintf(err, errlen, "%s: %s", np_ch_url(c), msg);
	return -1;
}

/* Names go into SQL unquoted: keep them to identifiers. */
static int fleet_ident(const char *s)
{
	if (!*s || strlen(s) > 64)
		return 0;
	for (; *s; s++)
		if (!(*s == '_' || (*s >= 'a' && *s <= 'z') ||
		      (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9')))
			return 0;
	return 1;
}

/* 1 if db.table has column, 0 if not, -1 (err set). */
static int fleet_has_column(struct np_ch *c, const char *db, const char *table,
			    const char *column, char *err, size_t errlen)
{
	struct np_buf out = { 0 };
	char sql[512], msg[512];
	int ret;

	snprintf(sql, sizeof(sql),
		 "SELECT count() FROM system.columns WHERE database = '%s'"
		 " AND table = '%s' AND name = '%s' FORMAT TabSeparated",
		 db, table, column);
	ret = np_ch_exec(c, sql, NULL, 0, &out, msg, sizeof(msg));
	if (ret)
		snprintf(err, errlen, "%s: %s", np_ch_url(c), msg);
	else
		ret = out.p && strtoull(np_buf_str(&out), NULL, 10) > 0;
	np_buf_free(&out);
	return ret;
}

/* Add a column a later schema added, where it is missing. */
static int fleet_add_column(struct np_ch *c, const char *db, const char *table,
			    const char *column, const char *type,
			    char *err, size_t errlen)
{
	char sql[512];
	int has = fleet_has_column(c, db, table, column, err, errlen);

	if (has)
		return has < 0 ? -1 : 0;
	snprintf(sql, sizeof(sql), "ALTER TABLE %s.%s ADD COLUMN %s %s",
		 db, table, column, type);
	if (!fleet_exec(c, sql, err, errlen))
		return 0;
	/* Another `cluster init` may have added it meanwhile. */
	return fleet_has_column(c, db, table, column, err, errlen) > 0 ? 0 : -1;
}

int np_fleet_has_column(struct np_ch *c, const char *table, const char *column,
			char *err, size_t errlen)
{
	const char *db = np_ch_database(c);

	if (!fleet_ident(db) || !fleet_ident(table) || !fleet_ident(column)) {
		snprintf(err, errlen, "database '%s' must be a plain name", db);
		return -1;
	}
	return fleet_has_column(c, db, table, column, err, errlen);
}

int np_fleet_schema_create(struct np_ch *c, const char *cluster,
			   char *err, size_t errlen)
{
	const char *db = np_ch_database(c);
	char sql[1024];

	if (!fleet_ident(db) || !fleet_ident(cluster)) {
		snprintf(err, errlen, "database '%s' and cluster '%s' must be plain names",
			 db, cluster);
		return -1;
	}
	snprintf(sql, sizeof(sql), "CREATE DATABASE IF NOT EXISTS %s", db);
	if (fleet_exec(c, sql, err, errlen))
		return -1;
	for (size_t i = 0; i < sizeof(fleet_local) / sizeof(fleet_local[0]); i++) {
		snprintf(sql, sizeof(sql), fleet_local[i], db);
		if (fleet_exec(c, sql, err, errlen))
			return -1;
	}
	for (size_t i = 0; i < sizeof(fleet_dist) / sizeof(fleet_dist[0]); i++) {
		snprintf(sql, sizeof(sql),
			 "CREATE TABLE IF NOT EXISTS %s.%s AS %s.%s_local"
			 " ENGINE = Distributed(%s, %s, %s_local, %s)",
			 db, fleet_dist[i].name, db, fleet_dist[i].name, cluster,
			 db, fleet_dist[i].name, fleet_dist[i].key);
		if (fleet_exec(c, sql, err, errlen))
			return -1;
	}
	for (size_t i = 0; i < sizeof(fleet_added) / sizeof(fleet_added[0]); i++) {
		char local[80];

		snprintf(local, sizeof(local), "%s_local", fleet_added[i].table);
		if (fleet_add_column(c, db, local, fleet_added[i].column,
				     fleet_added[i].type, err, errlen) ||
		    fleet_add_column(c, db, fleet_added[i].table,
				     fleet_added[i].column, fleet_added[i].type,
				     err, errlen))
			return -1;
	}
	return 0;
}

int np_fleet_prune(struct np_ch *c, uint64_t before_ns, unsigned int *dropped,
		   char *err, size_t errlen)
{
	const char *db = np_ch_database(c);
	struct np_buf out = { 0 };
	char sql[512], msg[512];
	int ret = 0;

	*dropped = 0;
	if (!fleet_ident(db)) {
		snprintf(err, errlen, "database '%s' must be a plain name", db);
		return -1;
	}
	/* Partitions of Date columns are named YYYY-MM-DD in 18.16 and today. */
	snprintf(sql, sizeof(sql),
		 "SELECT DISTINCT table, partition FROM system.parts"
		 " WHERE database = '%s' AND active AND table IN"
		 " ('samples_local', 'stack_frames_local', 'frames_local', 'stacks_local',"
		 " 'slices_local', 'lockups_local', 'samples_day_local', 'rollups_local')"
		 " AND toDate(partition) < toDate(toDateTime(%" PRIu64 "))"
		 " FORMAT TabSeparated", db, before_ns / (uint64_t)1000000000);
	if (np_ch_exec(c, sql, NULL, 0, &out, msg, sizeof(msg))) {
		snprintf(err, errlen, "%s: %s", np_ch_url(c), msg);
		return -1;
	}
	for (char *line = np_buf_str(&out), *next; line && *line; line = next) {
		char *tab;

		next = strchr(line, '\n');
		if (next)
			*next++ = 0;
		tab = strchr(line, '\t');
		if (!tab)
			continue;
		*tab = 0;
		if (!fleet_ident(line) || strlen(tab + 1) != 10)
			continue;
		snprintf(sql, sizeof(sql), "ALTER TABLE %s.%s DROP PARTITION '%s'",
			 db, line, tab + 1);
		ret = fleet_exec(c, sql, err, errlen);
		if (ret)
			break;
		(*dropped)++;
	}
	np_buf_free(&out);
	return ret;
}

/*
 * Roll up each (host, day) of this shard before before_ns that has no
 * rollup of its committed slices as they are now.  The slices' count
 * and checksum are taken first: should a slice commit while the rollup
 * is made, the rollup holds it but its row does not, and no query uses
 * it (rolled_sql in fleet_query.c).
 */
int np_fleet_rollup(struct np_ch *c, uint64_t before_ns, unsigned int *made,
		    char *err, size_t errlen)
{
	const char *db = np_ch_database(c);
	struct np_buf out = { 0 }, sql = { 0 };
	char msg[512];
	int ret = 0;

	*made = 0;
	if (!fleet_ident(db)) {
		snprintf(err, errlen, "database '%s' must be a plain name", db);
		return -1;
	}
	np_ch_buf_printf(&sql, "SELECT host, dd, slices, checksum FROM (SELECT host, dd,"
			 " count() AS slices, sum(cityHash64(bt)) AS checksum FROM"
			 " (SELECT host, start, any(day) AS dd, min(batch) AS bt FROM %1$s.slices_local"
			 " WHERE day < toDate(toDateTime(%2$" PRIu64 ")) GROUP BY host, start)"
			 " GROUP BY host, dd) WHERE (host, dd, slices, checksum) NOT IN"
			 " (SELECT host, day, slices, checksum FROM %1$s.rollups_local)"
			 " FORMAT TabSeparated", db, before_ns / (uint64_t)1000000000);
	if (sql.oom || np_ch_exec(c, np_buf_str(&sql), NULL, 0, &out, msg, sizeof(msg))) {
		snprintf(err, errlen, "%s: %s", np_ch_url(c), sql.oom ? "out of memory" : msg);
		np_buf_free(&sql);
		return -1;
	}
	for (char *line = np_buf_str(&out), *next; !ret && line && *line; line = next) {
		char *fld[4];
		uint64_t id;
		int n = 0;

		next = strchr(line, '\n');
		if (next)
			*next++ = 0;
		for (char *p = line; n < 4; n++) {
			fld[n] = p;
			p = strchr(p, '\t');
			if (!p)
				break;
			*p++ = 0;
		}
		if (n != 3 || strlen(fld[1]) != 10 || strspn(fld[1], "0123456789-") != 10)
			continue;
		np_ch_tsv_unescape(fld[0]);
		if (getrandom(&id, sizeof(id), 0) != sizeof(id)) {
			snprintf(err, errlen, "getrandom: %s", strerror(errno));
			ret = -1;
			break;
		}
		np_buf_reset(&sql);
		np_ch_buf_printf(&sql, "INSERT INTO %1$s.samples_day_local"
				 " (day, host, rollup, pid, comm, stack, count)"
				 " SELECT day, host, %2$" PRIu64 ", pid, comm, stack, sum(count)"
				 " FROM %1$s.samples_local WHERE host = ", db, id);
		np_ch_buf_sql_str(&sql, fld[0]);
		np_ch_buf_printf(&sql, " AND day = '%s' AND batch IN (SELECT min(batch) FROM"
				 " %s.slices_local WHERE host = ", fld[1], db);
		np_ch_buf_sql_str(&sql, fld[0]);
		np_ch_buf_printf(&sql, " AND day = '%s' GROUP BY start)"
				 " GROUP BY day, host, pid, comm, stack", fld[1]);
		ret = sql.oom ? -1 : fleet_exec(c, np_buf_str(&sql), err, errlen);
		if (ret)
			break;
		/* its row makes it count */
		np_buf_reset(&sql);
		np_ch_buf_printf(&sql, "INSERT INTO %s.rollups_local (day, host, rollup, slices,"
				 " checksum) VALUES ('%s', ", db, fld[1]);
		np_ch_buf_sql_str(&sql, fld[0]);
		np_ch_buf_printf(&sql, ", %" PRIu64 ", %" PRIu64 ", %" PRIu64 ")", id,
				 (uint64_t)strtoull(fld[2], NULL, 10),
				 (uint64_t)strtoull(fld[3], NULL, 10));
		ret = sql.oom ? -1 : fleet_exec(c, np_buf_str(&sql), err, errlen);
		if (!ret)
			(*made)++;
	}
	if (sql.oom)
		snprintf(err, errlen, "out of memory");
	np_buf_free(&sql);
	np_buf_free(&out);
	return ret;
}
