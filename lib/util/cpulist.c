// SPDX-License-Identifier: GPL-2.0
/*
 * CPU list strings ("0,2-5", as in /sys/devices/system/cpu/online and
 * perf's -C) to bitmasks and back, for backends that take a mask
 * (nmiprof.ko's nmiprof_config.cpumask).  The libperf backend hands the
 * string to perf_cpu_map__new() directly.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "np_backend_impl.h"

int np_cpulist_parse(const char *list, uint64_t *mask, unsigned int nbits,
		     char *err, size_t errlen)
{
	const char *p = list;
	int count = 0;

	memset(mask, 0, (nbits + 63) / 64 * sizeof(*mask));
	while (*p && *p != '\n') {
		char *end;
		unsigned long a, b;

		errno = 0;
		a = strtoul(p, &end, 10);
		if (end == p || errno)
			goto bad;
		b = a;
		p = end;
		if (*p == '-') {
			b = strtoul(p + 1, &end, 10);
			if (end == p + 1 || errno || b < a)
				goto bad;
			p = end;
		}
		if (b >= nbits) {
			snprintf(err, errlen, "CPU %lu in '%s' is beyond the %u supported",
				 b, list, nbits);
			return -1;
		}
		for (unsigned long c = a; c <= b; c++) {
			if (!(mask[c / 64] & (1ULL << (c % 64))))
				count++;
			mask[c / 64] |= 1ULL << (c % 64);
		}
		if (*p == ',')
			p++;
		else if (*p && *p != '\n')
			goto bad;
	}
	if (!count)
		goto bad;
	return count;
bad:
	snprintf(err, errlen, "invalid CPU list '%s' (expected e.g. 0,2-3)", list);
	return -1;
}

int np_cpulist_online(uint64_t *mask, unsigned int nbits, char *err,
		      size_t errlen)
{
	char buf[4096];
	FILE *f = fopen("/sys/devices/system/cpu/online", "r");

	if (!f || !fgets(buf, sizeof(buf), f)) {
		snprintf(err, errlen, "cannot read /sys/devices/system/cpu/online: %s",
			 strerror(errno ? errno : EIO));
		if (f)
			fclose(f);
		return -1;
	}
	fclose(f);
	return np_cpulist_parse(buf, mask, nbits, err, errlen);
}

int np_cpulist_format(const uint64_t *mask, unsigned int nbits, char *out,
		      size_t len)
{
	size_t n = 0;
	int count = 0;

	out[0] = '\0';
	for (unsigned int a = 0; a < nbits; a++) {
		unsigned int b = a;

		if (!(mask[a / 64] & (1ULL << (a % 64))))
			continue;
		while (b + 1 < nbits && (mask[(b + 1) / 64] & (1ULL << ((b + 1) % 64))))
			b++;
		n += snprintf(out + n, n < len ? len - n : 0,
			      a == b ? "%s%u" : "%s%u-%u", n ? "," : "", a, b);
		count += b - a + 1;
		a = b;
	}
	return n < len ? count : -1;
}
