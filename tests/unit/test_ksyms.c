// SPDX-License-Identifier: GPL-2.0
/*
 * Kernel symbols: a module's last function must not swallow the code of a
 * module loaded after kallsyms was read.  /proc/modules bounds it, so such
 * an address misses (and the symbolizer reloads) instead of being named
 * "last_function+0xee37".
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

static void test_module_bounds(void)
{
	char dir[] = "/tmp/test_ksyms.XXXXXX", ksyms[64], mods[64];
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

	CHECK(np_ksyms_load(&t, &a, ksyms, mods, warning, sizeof(warning)) == 0,
	      "load: %s", warning);
	d = np_symtab_find(&t, 0xffffffffc0200410);
	CHECK(d && !strcmp(d->name, "early_last") && !strcmp(np_symtab_dso(&t, d), "[early]"),
	      "inside the module: %s", d ? d->name : "(none)");
	d = np_symtab_find(&t, 0xffffffffc0300000);
	CHECK(!d, "past the module's end resolved to %s+%#llx", d ? d->name : "",
	      d ? (unsigned long long)(0xffffffffc0300000 - d->start) : 0ULL);
	d = np_symtab_find(&t, 0xffffffff81000180);
	CHECK(d && !strcmp(d->name, "schedule"), "kernel symbol");

	np_symtab_free(&t);
	np_arena_free(&a);
	unlink(ksyms);
	unlink(mods);
	rmdir(dir);
}

static const struct np_test_case cases[] = {
	NP_CASE(test_module_bounds),
	{ 0 }
};

int main(int argc, char **argv)
{
	return np_test_main(argc, argv, cases);
}
