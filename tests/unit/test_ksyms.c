// SPDX-License-Identifier: GPL-2.0
/*
 * Kernel symbols: a module's last function must not swallow the code of a
 * module loaded after kallsyms was read.  /proc/modules bounds it, so such
 * an address misses (and the symbolizer reloads) instead of being named
 * "last_function+0xee37".  Each object's build-id comes from the notes
 * sysfs shows: /sys/kernel/notes, /sys/module/NAME/notes/.note.gnu.build-id.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "np_symtab.h"

#include "check.h"

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	if (!f || fputs(text, f) < 0 || fclose(f)) {
		perror(path);
		exit(1);
	}
}

/* An ELF note as sysfs shows it: namesz, descsz, type, name, desc (4-aligned). */
static size_t note(unsigned char *p, const char *name, uint32_t type,
		   const unsigned char *desc, uint32_t descsz)
{
	uint32_t h[3] = { (uint32_t)strlen(name) + 1, descsz, type };
	size_t n = sizeof(h);

	memset(p, 0, 12 + ((h[0] + 3) & ~3U) + ((descsz + 3) & ~3U));
	memcpy(p, h, sizeof(h));
	memcpy(p + n, name, h[0]);
	n += (h[0] + 3) & ~3U;
	memcpy(p + n, desc, descsz);
	return n + ((descsz + 3) & ~3U);
}

static void write_bytes(const char *path, const unsigned char *b, size_t n)
{
	FILE *f = fopen(path, "w");

	if (!f || fwrite(b, 1, n, f) != n || fclose(f)) {
		perror(path);
		exit(1);
	}
}

static void test_module_bounds(void)
{
	char dir[] = "/tmp/test_ksyms.XXXXXX", ksyms[64], mods[64], sys[64], p[160];
	static const unsigned char kid[20] = { 0x32, 0xa7, 0xf3, 0xba, 0xce, 0xe6, 0xbf,
		0x69, 0xda, 0x94, 0xf4, 0x97, 0xa8, 0xa0, 0x76, 0x48, 0x3b, 0xae, 0xa2, 0x0e };
	static const unsigned char mid[20] = { 0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd,
		0xef, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 0xfe, 0xff };
	unsigned char buf[256];
	size_t n;
	char warning[256] = "";
	struct np_symtab t = { 0 };
	struct np_arena a = { 0 };
	const struct np_symdef *d;

	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		failures++;
		return;
	}
	snprintf(ksyms, sizeof(ksyms), "%s/kallsyms", dir);
	snprintf(mods, sizeof(mods), "%s/modules", dir);
	snprintf(sys, sizeof(sys), "%s/sys", dir);
	/* the kernel's notes: others before the build-id, as Xen's and Linux's */
	snprintf(p, sizeof(p), "%s/kernel", sys);
	CHECK(!mkdir(sys, 0700) && !mkdir(p, 0700), "mkdir %s", p);
	n = note(buf, "Linux", 6, (const unsigned char *)"6.1.0", 6);
	n += note(buf + n, "Xen", 0x13, (const unsigned char *)"\1\0\0\0", 4);
	n += note(buf + n, "GNU", 3, kid, sizeof(kid));
	snprintf(p, sizeof(p), "%s/kernel/notes", sys);
	write_bytes(p, buf, n);
	/* module early's; other has no notes */
	snprintf(p, sizeof(p), "%s/module", sys);
	CHECK(!mkdir(p, 0700), "mkdir %s", p);
	snprintf(p, sizeof(p), "%s/module/early", sys);
	CHECK(!mkdir(p, 0700), "mkdir %s", p);
	snprintf(p, sizeof(p), "%s/module/early/notes", sys);
	CHECK(!mkdir(p, 0700), "mkdir %s", p);
	snprintf(p, sizeof(p), "%s/module/early/notes/.note.gnu.build-id", sys);
	write_bytes(p, buf, note(buf, "GNU", 3, mid, sizeof(mid)));
	write_file(ksyms,
		   "ffffffff81000000 T _stext\n"
		   "ffffffff81000100 T schedule\n"
		   "ffffffffc0200000 t early_fn\t[early]\n"
		   "ffffffffc0200400 t early_last\t[early]\n"
		   "ffffffffc0400000 t late_neighbour\t[other]\n");
	/* "early" is 0x1000 bytes long; something else was loaded after it. */
	write_file(mods,
		   "early 4096 0 - Live 0xffffffffc0200000 (O)\n"
		   "other 8192 0 - Live 0xffffffffc0400000\n");

	CHECK(np_ksyms_load(&t, &a, ksyms, mods, sys, warning, sizeof(warning)) == 0,
	      "load: %s", warning);
	d = np_symtab_find(&t, 0xffffffffc0200410);
	CHECK(d && !strcmp(d->name, "early_last") && !strcmp(np_symtab_dso(&t, d), "[early]"),
	      "inside the module: %s", d ? d->name : "(none)");
	CHECK(d && np_symtab_build_id(&t, d) &&
	      !strcmp(np_symtab_build_id(&t, d), "0123456789abcdef00010203040506070809feff"),
	      "module build-id: %s", d && np_symtab_build_id(&t, d) ?
	      np_symtab_build_id(&t, d) : "(none)");
	d = np_symtab_find(&t, 0xffffffffc0400010);
	CHECK(d && !np_symtab_build_id(&t, d), "a module without notes has a build-id");
	d = np_symtab_find(&t, 0xffffffffc0300000);
	CHECK(!d, "past the module's end resolved to %s+%#llx", d ? d->name : "",
	      d ? (unsigned long long)(0xffffffffc0300000 - d->start) : 0ULL);
	d = np_symtab_find(&t, 0xffffffff81000180);
	CHECK(d && !strcmp(d->name, "schedule"), "kernel symbol");
	CHECK(d && np_symtab_build_id(&t, d) &&
	      !strcmp(np_symtab_build_id(&t, d), "32a7f3bacee6bf69da94f497a8a076483baea20e"),
	      "kernel build-id: %s", d && np_symtab_build_id(&t, d) ?
	      np_symtab_build_id(&t, d) : "(none)");

	np_symtab_free(&t);
	np_arena_free(&a);
	unlink(ksyms);
	unlink(mods);
	snprintf(p, sizeof(p), "rm -rf '%s'", dir);
	CHECK(system(p) == 0, "%s", p);
}

/*
 * The symbol sort (np_symtab_finish) on many symbols, with aliases: one
 * symbol per start, in order, the preferred of each start's (highest
 * priority, then sized, then first by name, then first added), and each
 * ending at its size or at the next start.
 */
static void test_symtab_sort(void)
{
	enum { N = 20000 };
	static struct { uint64_t start, size; int prio; char name[16]; } in[N];
	struct np_symtab t = { 0 };
	uint32_t x = 7, bad = 0, nstarts = 0;
	static char seen[N];

	for (int i = 0; i < N; i++) {
		x = x * 1103515245u + 12345u;
		/* 1 << 22 apart at most: several radix passes, many aliases */
		in[i].start = 0x400000 + (uint64_t)(x >> 8) % 6000 * 700;
		in[i].size = x % 3 ? 16 : 0;
		in[i].prio = (int)(x >> 3) % 4 - 1;
		snprintf(in[i].name, sizeof(in[i].name), "s%u", (x >> 5) % 5000);
		CHECK(np_symtab_add(&t, in[i].start, in[i].size, in[i].name, "d",
				    in[i].prio) == 0);
	}
	np_symtab_finish(&t);
	for (size_t i = 1; i < t.nr; i++)
		bad += t.v[i].start <= t.v[i - 1].start;
	CHECK(bad == 0, "%u out of order", bad);
	for (int i = 0; i < N; i++) {
		const struct np_symdef *d = np_symtab_find(&t, in[i].start);
		int best = -1;

		if (!d || d->start != in[i].start) {
			bad++;
			continue;
		}
		if (seen[(in[i].start - 0x400000) / 700]++)
			continue;
		nstarts++;
		for (int j = 0; j < N; j++) {
			if (in[j].start != in[i].start)
				continue;
			if (best < 0 || in[j].prio > in[best].prio ||
			    (in[j].prio == in[best].prio &&
			     (!!in[j].size > !!in[best].size ||
			      (!!in[j].size == !!in[best].size &&
			       strcmp(in[j].name, in[best].name) < 0))))
				best = j;
		}
		/* size-less: to the next start */
		bad += strcmp(d->name, in[best].name) != 0 ||
		       d->size != (in[best].size ? 16 :
				   d + 1 < t.v + t.nr ? d[1].start - d->start : 4096);
	}
	CHECK(bad == 0, "%u symbols wrong", bad);
	CHECK(t.nr == nstarts, "%zu symbols for %u starts", t.nr, nstarts);
	np_symtab_free(&t);
}

static const struct np_test_case cases[] = {
	NP_CASE(test_symtab_sort),
	NP_CASE(test_module_bounds),
	{ 0 }
};

int main(int argc, char **argv)
{
	return np_test_main(argc, argv, cases);
}
