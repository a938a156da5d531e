// SPDX-License-Identifier: GPL-2.0
/*
 * bench_topview: what one `nmiprof top` refresh costs with 100k rows.
 *
 * A refresh is: sort the view, format the rows that fit a screen, decay
 * every weight.  Also measured: a filter change (k/u/c/p/t keys: a full
 * rebuild from the buckets), expanding a row's callers/callees, and the
 * ingest rate.  CPU time (CLOCK_PROCESS_CPUTIME_ID), median of runs.
 * The budget is 50 ms per refresh; this prints figures, it asserts nothing.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "topview.h"

#define NR_LEAVES	100000
#define NR_PIDS		500
#define NR_MIDS		1000
#define RUNS		15
#define SCREEN_ROWS	60

static double cpu_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_double);
	return v[n / 2];
}

int main(void)
{
	static char leaf[NR_LEAVES][16], mid[NR_MIDS][16];
	struct topview *tv = topview_new();
	double t0, ingest, refresh[RUNS], rebuild[RUNS], expand[RUNS];
	unsigned seed = 12345;
	struct topview_filter f;
	struct topview_edge e[16];
	char line[512];
	size_t rows = 0, chars = 0;

	for (int i = 0; i < NR_LEAVES; i++)
		snprintf(leaf[i], sizeof(leaf[i]), "fn_%d", i);
	for (int i = 0; i < NR_MIDS; i++)
		snprintf(mid[i], sizeof(mid[i]), "mid_%d", i);

	t0 = cpu_ms();
	for (int i = 0; i < NR_LEAVES; i++) {
		struct np_frame fr[8] = {
			{ "[kernel.kallsyms]", "native_write_msr", 1, NULL },
			{ "[kernel.kallsyms]", "asm_sysvec_apic_timer_interrupt", 1, NULL },
			{ "/usr/bin/app", leaf[i], 0, NULL },
			{ "/usr/bin/app", mid[i % NR_MIDS], 0, NULL },
			{ "/usr/bin/app", "dispatch", 0, NULL },
			{ "/usr/bin/app", "main", 0, NULL },
			{ "/usr/lib/libc.so.6", "__libc_start_call_main", 0, NULL },
			{ "/usr/lib/libc.so.6", "__libc_start_main", 0, NULL },
		};
		/* a quarter of the samples interrupted in the kernel */
		int k = (i & 3) == 0 ? 0 : 2;
		struct topview_sample s = {
			.cpu = (uint32_t)(i & 1), .pid = 1000 + (uint32_t)(i % NR_PIDS),
			.comm = "app", .frames = fr + k, .nr_frames = 8 - (unsigned)k,
			.weight = 1 + rand_r(&seed) % 100,
		};

		if (topview_add(tv, &s)) {
			fprintf(stderr, "bench_topview: out of memory\n");
			return 1;
		}
	}
	ingest = cpu_ms() - t0;

	for (int r = 0; r < RUNS; r++) {
		t0 = cpu_ms();
		rows = topview_sort(tv, r & 1 ? TOPVIEW_SORT_CHILDREN : TOPVIEW_SORT_SELF);
		for (size_t i = 0; i < SCREEN_ROWS && i < rows; i++) {
			const struct topview_row *row = topview_row(tv, i);

			chars += (size_t)snprintf(line, sizeof(line),
				"%7.2f%% %8.0f %8.0f %-15s %8u %-20s [%c] %s",
				100 * row->self / topview_total(tv), row->self,
				row->children, row->comm, row->pid, row->dso,
				row->kernel ? 'k' : '.', row->sym);
		}
		topview_decay(tv, 7.0 / 8.0);
		refresh[r] = cpu_ms() - t0;

		t0 = cpu_ms();
		topview_filter_init(&f);
		f.kernel = r & 1;		/* the k key */
		topview_set_filter(tv, &f);
		rebuild[r] = cpu_ms() - t0;

		topview_sort(tv, TOPVIEW_SORT_SELF);
		t0 = cpu_ms();
		topview_callers(tv, topview_row(tv, 0), e, 16);
		topview_callees(tv, topview_row(tv, 0), e, 16);
		expand[r] = cpu_ms() - t0;
	}
	topview_filter_init(&f);
	topview_set_filter(tv, &f);
	rows = topview_sort(tv, TOPVIEW_SORT_SELF);

	printf("bench_topview: %zu rows in view (%d leaf symbols x %d pids)\n",
	       rows, NR_LEAVES, NR_PIDS);
	printf("  ingest:            %.1f ms CPU for %d samples (%.2f us/sample, 6-8 frames)\n",
	       ingest, NR_LEAVES, ingest * 1e3 / NR_LEAVES);
	printf("  refresh:           %.2f ms CPU median of %d (sort + %d rows + decay); budget 50 ms: %s\n",
	       median(refresh, RUNS), RUNS, SCREEN_ROWS,
	       median(refresh, RUNS) <= 50 ? "within" : "OVER");
	printf("  filter change:     %.2f ms CPU median (full rebuild from buckets)\n",
	       median(rebuild, RUNS));
	printf("  expand call graph: %.2f ms CPU median (callers + callees of one row)\n",
	       median(expand, RUNS));
	printf("  (%zu chars formatted)\n", chars);
	topview_free(tv);
	return 0;
}
