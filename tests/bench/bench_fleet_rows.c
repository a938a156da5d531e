// SPDX-License-Identifier: GPL-2.0
/*
 * The fleet exporter's CPU without the network or the machine's churn of
 * the moment: replay a store the daemon wrote, slice by slice, oldest
 * first, as daemon/fleet.c ships it: read the slice back
 * (np_store_reader_read into a reset aggregate), build its rows
 * (np_fleet_rows_build against a set of the ids already sent), then
 * take the new ids as acknowledged.  Each round starts cold (new reader,
 * rows and set), as a daemon after a start; thread CPU time, the best
 * round of ROUNDS, and the minor page faults a slice after the first
 * (nmiprofd's malloc setting: mmapped past 256 KiB).  Figures only.
 *
 * usage: bench_fleet_rows STORE_DIR [ROUNDS]   (a daemon's store: run
 *        nmiprofd -F 1000 with 60 s slices while other work starts and
 *        ends processes, and keep its store)
 */
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/resource.h>

#include "agg.h"
#include "np_fleet.h"
#include "store.h"

#define KNOWN_MAX	(1U << 18)	/* as daemon/fleet.c */

struct segs {
	char (*name)[32];
	size_t n, cap;
};

struct known {
	uint64_t *v;
	size_t n;
	uint64_t gen;
};

static double cpu_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static long minflt(void)
{
	struct rusage ru;

	return getrusage(RUSAGE_THREAD, &ru) ? 0 : ru.ru_minflt;
}

static int list_fn(const char *name, const struct np_seg_info *in, void *arg)
{
	struct segs *s = arg;

	(void)in;
	if (s->n == s->cap) {
		size_t nc = s->cap ? s->cap * 2 : 64;
		void *p = realloc(s->name, nc * sizeof(*s->name));

		if (!p)
			return -1;
		s->name = p;
		s->cap = nc;
	}
	snprintf(s->name[s->n++], sizeof(s->name[0]), "%s", name);
	return 0;
}

static int known_fn(void *arg, uint64_t h)
{
	struct known *k = arg;

	h = h ? h : 1;
	for (size_t i = h & (KNOWN_MAX - 1); k->v[i]; i = (i + 1) & (KNOWN_MAX - 1))
		if (k->v[i] == h)
			return 1;
	return 0;
}

static void remember(struct known *k, const uint64_t *hs, size_t n)
{
	for (size_t j = 0; j < n; j++) {
		uint64_t h = hs[j] ? hs[j] : 1;
		size_t i;

		if (k->n * 2 >= KNOWN_MAX) {
			memset(k->v, 0, KNOWN_MAX * sizeof(*k->v));
			k->n = 0;
			k->gen++;
		}
		for (i = h & (KNOWN_MAX - 1); k->v[i] && k->v[i] != h;
		     i = (i + 1) & (KNOWN_MAX - 1))
			;
		if (!k->v[i]) {
			k->v[i] = h;
			k->n++;
		}
	}
}

int main(int argc, char **argv)
{
	int rounds = argc > 2 ? atoi(argv[2]) : 3;
	double best = -1, best_rd = 0, best_rows = 0, first = 0;
	struct segs segs = { 0 };
	uint64_t entries = 0, samples = 0, news = 0;
	long flt = 0;
	char err[256];

	/* nmiprofd's malloc setting: its page faults are the exporter's */
	mallopt(M_MMAP_THRESHOLD, 256 << 10);
	if (argc < 2 || rounds < 1) {
		fprintf(stderr, "usage: %s STORE_DIR [ROUNDS]\n", argv[0]);
		return 2;
	}
	if (np_store_list(argv[1], list_fn, &segs, NULL, NULL, err, sizeof(err))) {
		fprintf(stderr, "%s: %s\n", argv[1], err);
		return 1;
	}
	for (int k = 0; k < rounds; k++) {
		struct np_store_reader *rd = np_store_reader_open(argv[1]);
		struct known kn = { .v = calloc(KNOWN_MAX, sizeof(uint64_t)), .gen = 1 };
		struct np_agg *a = np_agg_new(NULL);
		struct np_fleet_rows rows = { 0 };
		double t_rd = 0, t_rows = 0, t_first = 0;

		if (!rd || !kn.v || !a) {
			fprintf(stderr, "out of memory\n");
			return 1;
		}
		entries = samples = news = 0;
		for (size_t i = 0; i < segs.n; i++) {
			struct np_fleet_slice sl = {
				.host = "bench", .labels = "tier=bench", .batch = i + 1,
			};
			struct np_read_stats st = { 0 };
			double t0 = cpu_ms(), t1;
			uint32_t nr;

			np_agg_reset(a);
			if (np_store_reader_read(rd, segs.name[i], a, &st, err, sizeof(err))) {
				fprintf(stderr, "%s: %s\n", segs.name[i], err);
				return 1;
			}
			t1 = cpu_ms();
			t_rd += t1 - t0;
			sl.start_ns = st.first_ns;
			sl.end_ns = st.last_ns;
			sl.samples = st.samples;
			np_fleet_rows_reset(&rows);
			rows.known_gen = kn.gen;
			if (np_fleet_rows_build(&rows, a, &sl, known_fn, &kn)) {
				fprintf(stderr, "out of memory building rows\n");
				return 1;
			}
			remember(&kn, rows.new_ids, rows.nr_new);
			t_rows += cpu_ms() - t1;
			if (!i) {
				t_first = cpu_ms() - t0;
				flt = minflt();
			}
			np_agg_entries(a, &nr);
			entries += nr;
			samples += st.samples;
			news += rows.nr_new;
		}
		if (best < 0 || t_rd + t_rows < best) {
			best = t_rd + t_rows;
			best_rd = t_rd;
			best_rows = t_rows;
			first = t_first;
		}
		flt = minflt() - flt;
		np_fleet_rows_free(&rows);
		np_agg_free(a);
		free(kn.v);
		np_store_reader_close(rd);
	}
	printf("%zu slices, %llu samples, %llu entries, %llu stacks and frames sent\n",
	       segs.n, (unsigned long long)samples, (unsigned long long)entries,
	       (unsigned long long)news);
	printf("exporter CPU, best of %d cold rounds: %.1f ms (read %.1f, rows %.1f), "
	       "%.1f ms a slice; the first slice %.1f ms\n", rounds, best, best_rd,
	       best_rows, segs.n ? best / (double)segs.n : 0.0, first);
	if (segs.n > 1)
		printf("minor page faults a slice after the first (last round): %.0f\n",
		       (double)flt / (double)(segs.n - 1));
	free(segs.name);
	return 0;
}
