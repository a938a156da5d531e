// SPDX-License-Identifier: GPL-2.0
/*
 * unwind_dlopen: maps and unmaps code while it is sampled.
 *
 *   unwind_dlopen SECONDS LIBDIR
 *
 * Loads LIBDIR/libdlhot_a.so, calls its hot_in_a from call_a, unloads
 * it, then the same with libdlhot_b.so, hot_in_b and call_b, over and
 * over: the two libraries take turns at the same addresses, so a stack
 * resolved against the wrong mapping shows hot_in_b under call_a.
 */
#include <dlfcn.h>
#include "split_main.h"

__attribute__((noinline)) static int call(const char *dir, const char *lib,
					  const char *sym)
{
	char path[4096];
	void (*fn)(long);
	void *h;

	snprintf(path, sizeof(path), "%s/%s", dir, lib);
	h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		fprintf(stderr, "unwind_dlopen: %s\n", dlerror());
		return -1;
	}
	fn = (void (*)(long))dlsym(h, sym);
	if (fn)
		fn(2000000);
	dlclose(h);
	return fn ? 0 : -1;
}

__attribute__((noinline)) int call_a(const char *dir)
{
	int r = call(dir, "libdlhot_a.so", "hot_in_a");

	__asm__ volatile("" ::: "memory");
	return r;
}

__attribute__((noinline)) int call_b(const char *dir)
{
	int r = call(dir, "libdlhot_b.so", "hot_in_b");

	__asm__ volatile("" ::: "memory");
	return r;
}

int main(int argc, char **argv)
{
	double secs = argc > 1 ? atof(argv[1]) : 3.0;
	const char *dir = argc > 2 ? argv[2] : ".";
	uint64_t cpu0 = now_ns();
	long rounds = 0;

	do {
		if (call_a(dir) < 0 || call_b(dir) < 0)
			return 1;
		rounds++;
	} while (now_ns() - cpu0 < (uint64_t)(secs * 1e9));
	printf("rounds %ld\n", rounds);
	return 0;
}
