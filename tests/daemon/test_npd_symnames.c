// SPDX-License-Identifier: GPL-2.0
/*
 * The names the daemon's symbolizer gives, as perf gives them
 * (tools/perf/util/symbol-elf.c): an untyped, size-less label in code
 * (ld.so's _start, _dl_start_user) is a name, not a bare offset; the
 * kernel's __pfx_ padding symbols are never names.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "symbolizer.h"

#include "../unit/check.h"

/* An assembly entry point as ld.so has them: global, no .type, no .size. */
__asm__(".text\n"
	".globl npd_test_label\n"
	"npd_test_label:\n"
	"\tnop\n\tnop\n\tret\n");
void npd_test_label(void);

/* The first __pfx_ symbol of /proc/kallsyms with a real address, or 0. */
static uint64_t kernel_pfx(char *name, size_t len)
{
	FILE *f = fopen("/proc/kallsyms", "r");
	char line[512], sym[256], type;
	uint64_t addr = 0, a;

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%" SCNx64 " %c %255s", &a, &type, sym) == 3 &&
		    a && (type == 't' || type == 'T') && !strncmp(sym, "__pfx_", 6)) {
			addr = a;
			snprintf(name, len, "%s", sym);
			break;
		}
	}
	fclose(f);
	return addr;
}

static struct np_symbolizer *symbolizer(void)
{
	char err[256];
	struct np_symbolizer *s = np_symbolizer_new(err, sizeof(err));

	CHECK(s != NULL, "symbolizer: %s", err);
	return s;
}

/* An untyped, size-less label in code is a name. */
static void test_label(void)
{
	uint64_t ip = (uint64_t)(uintptr_t)&npd_test_label + 1;
	struct np_symbolizer *s = symbolizer();
	struct np_sym sym;

	if (!s)
		return;
	np_symbolize(s, (uint32_t)getpid(), ip, 0, &sym);
	CHECK(sym.name && !strcmp(sym.name, "npd_test_label") && sym.offset == 1,
	      "got %s+0x%" PRIx64, sym.name ? sym.name : "(none)", sym.offset);
	np_symbolizer_free(s);
}

/* The kernel's __pfx_ padding is never a name. */
static void test_pfx(void)
{
	struct np_symbolizer *s;
	struct np_sym sym;
	char pfx[256];
	uint64_t kip = kernel_pfx(pfx, sizeof(pfx));

	if (!kip) {
		printf("no __pfx_ symbols with addresses in /proc/kallsyms: "
		       "that part not checked\n");
		return;
	}
	s = symbolizer();
	if (!s)
		return;
	np_symbolize(s, (uint32_t)getpid(), kip + 4, 1, &sym);
	CHECK(!sym.name || strncmp(sym.name, "__pfx_", 6), "%s+4: named %s",
	      pfx, sym.name);
	np_symbolizer_free(s);
}

static const struct np_test_case cases[] = {
	NP_CASE(test_label),
	NP_CASE(test_pfx),
	{ 0 }
};

int main(int argc, char **argv)
{
	return np_test_main(argc, argv, cases);
}
