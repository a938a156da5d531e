// SPDX-License-Identifier: GPL-2.0
/*
 * Steady RSS of the daemon's aggregation + store path with 100k distinct
 * stacks: every slice sees all of them (worst case for the per-slice
 * tables), is written to a store in /tmp, and the aggregator is reset, as
 * nmiprofd does every 60 s.  Figures, not assertions.
 *
 *   bench_store_rss [distinct_stacks] [slices] [shared_depth]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "agg.h"
#include "store.h"

static long status_kb(const char *key)
{
	FILE *f = fopen("/proc/self/status", "r");
	size_t kl = strlen(key);
	char line[256];
	long kb = -1;

	while (f && fgets(line, sizeof(line), f))
		if (!strncmp(line, key, kl))
			kb = atol(line + kl);
	if (f)
		fclose(f);
	return kb;
}

static uint64_t rng(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static int sym(void *arg, uint32_t pid, uint64_t addr, int kernel,
	       struct np_sym *out)
{
	static char name[48];

	snprintf(name, sizeof(name), "%s_function_%llx", kernel ? "kernel" : "user",
		 (unsigned long long)(addr >> 4));
	out->dso = kernel ? "[kernel.kallsyms]" : "/usr/lib/libapp.so";
	out->name = name;
	out->offset = addr & 15;
	return 0;
}

/*
 * Stack `id`: 100 processes; user depth 14..26 over a fan-out-4 call tree
 * that branches below depth `shared` (4: stacks part ways early, the
 * worst case for a trie; 10: a server whose request path is common);
 * kernel depth 6..14 over a fan-out-4 tree below a shared entry.
 */
static uint32_t shared = 4;

static void stack_of(uint32_t id, struct np_sample *s, uint64_t *k, uint64_t *u)
{
	uint64_t path = id * 0x9e3779b97f4a7c15ULL;
	uint32_t proc = id % 100, nu = 14 + id % 13, nk = 6 + (id >> 3) % 9;

	for (uint32_t j = 0; j < nu; j++) {
		uint32_t d = nu - 1 - j;
		uint64_t br = d < shared ? 0 : (path >> (2 * (d - shared))) & 3;

		u[j] = 0x7f0000000000ULL + ((uint64_t)proc << 24) +
		       ((uint64_t)d << 16) + (br << 8) + 0x10 * (d & 7) + 3;
	}
	for (uint32_t j = 0; j < nk; j++) {
		uint32_t d = nk - 1 - j;
		uint64_t br = d < 2 ? 0 : (path >> (44 + 2 * d)) & 3;

		k[j] = 0xffffffff81000000ULL + ((uint64_t)d << 16) + (br << 8) + 5;
	}
	memset(s, 0, sizeof(*s));
	s->pid = s->tid = 5000 + proc;
	s->cpu = proc % 16;
	snprintf(s->comm, sizeof(s->comm), "svc-%u", proc);
	s->kframes = k;
	s->nr_kframes = (uint16_t)nk;
	s->uframes = u;
	s->nr_uframes = (uint16_t)nu;
}

int main(int argc, char **argv)
{
	uint32_t nstacks = argc > 1 ? (uint32_t)atoi(argv[1]) : 100000;
	uint32_t nslices = argc > 2 ? (uint32_t)atoi(argv[2]) : 6;
	uint64_t t0 = np_store_now_ns();
	long base_kb = status_kb("VmRSS:");
	struct np_store_opts so;
	struct np_agg_opts ao;
	struct np_store *st;
	struct np_agg *a;
	char dir[256], err[256], cmd[300];
	uint64_t seed = 1, k[16], u[32];

	snprintf(dir, sizeof(dir), "/tmp/nmiprof-bench-rss.%d", (int)getpid());
	np_store_opts_init(&so);
	so.dir = dir;
	st = np_store_open(&so, err, sizeof(err));
	np_agg_opts_init(&ao);
	ao.symbolize = sym;
	a = np_agg_new(&ao);
	if (argc > 3)
		shared = (uint32_t)atoi(argv[3]);
	if (!st || !a) {
		fprintf(stderr, "setup: %s\n", st ? "out of memory" : err);
		return 1;
	}
	printf("%u stack ids (20-40 frames, branching below depth %u), each "
	       "sampled ~3x per slice, %u slices; RSS before: %ld KiB\n",
	       nstacks, shared, nslices, base_kb);
	for (uint32_t sl = 0; sl < nslices; sl++) {
		uint32_t ne;

		for (uint32_t i = 0; i < nstacks * 3; i++) {
			struct np_sample s;

			stack_of((uint32_t)(rng(&seed) % nstacks), &s, k, u);
			np_agg_sample(a, &s);
		}
		np_agg_entries(a, &ne);
		if (np_store_write(st, a, t0 + sl * 60000000000ULL,
				   t0 + (sl + 1) * 60000000000ULL, err, sizeof(err)))
			fprintf(stderr, "write: %s\n", err);
		printf("slice %u: %u keys, %u stack nodes, %u frames; agg+stack "
		       "table %.1f MiB; RSS %.1f MiB\n", sl, ne,
		       np_stacktab_nr_nodes(np_agg_stacktab(a)),
		       np_stacktab_nr_frames(np_agg_stacktab(a)),
		       np_agg_mem(a) / 1048576.0, status_kb("VmRSS:") / 1024.0);
		np_agg_reset(a);
	}
	printf("steady RSS %.1f MiB, peak (VmHWM) %.1f MiB, store %.1f MiB on disk\n",
	       status_kb("VmRSS:") / 1024.0, status_kb("VmHWM:") / 1024.0,
	       np_store_bytes(st) / 1048576.0);
	np_store_close(st);
	np_agg_free(a);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	return system(cmd) != 0;
}
