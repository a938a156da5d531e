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

int main(void)
{
	uint64_t ip = (uint64_t)(uintptr_t)&npd_test_label + 1;
	struct np_symbolizer *s;
	struct np_sym sym;
	char err[256], pfx[256];
	uint64_t kip;

	s = np_symbolizer_new(err, sizeof(err));
	if (!s) {
		fprintf(stderr, "symbolizer: %s\n", err);
		return 1;
	}
	np_symbolize(s, (uint32_t)getpid(), ip, 0, &sym);
	CHECK(sym.name && !strcmp(sym.name, "npd_test_label") && sym.offset == 1);
	if (!sym.name || strcmp(sym.name, "npd_test_label"))
		fprintf(stderr, "label: got %s+0x%" PRIx64 "\n",
			sym.name ? sym.name : "(none)", sym.offset);

	kip = kernel_pfx(pfx, sizeof(pfx));
	if (kip) {
		np_symbolize(s, (uint32_t)getpid(), kip + 4, 1, &sym);
		CHECK(!sym.name || strncmp(sym.name, "__pfx_", 6));
		if (sym.name && !strncmp(sym.name, "__pfx_", 6))
			fprintf(stderr, "%s+4: named %s\n", pfx, sym.name);
	} else {
		printf("no __pfx_ symbols with addresses in /proc/kallsyms: "
		       "that part not checked\n");
	}
	np_symbolizer_free(s);
	if (failures) {
		fprintf(stderr, "test_npd_symnames: %d check(s) failed\n", failures);
		return 1;
	}
	printf("test_npd_symnames: all checks passed\n");
	return 0;
}
