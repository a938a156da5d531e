#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# build-libperf.sh PREFIX [SERIES]
#
# Debian does not package libperf, so build it (and libapi, which it
# needs when linked statically) from Debian's linux-source-SERIES package
# into PREFIX/{lib,include,lib/pkgconfig}.  Only static archives are
# installed: nmiprof binaries must run in a bare QEMU guest without
# extra shared objects.
#
# SERIES is pinned by cmake/Libperf.cmake (the libperf API changed after
# 6.1); the default here only serves manual runs.
#
# The few source directories libperf needs are extracted once into
# ${NMIPROF_CACHE:-/var/cache/nmiprof}/libperf-src-VERSION so that a fresh
# clone does not decompress the whole tarball again.  A stamp file makes
# the script a no-op once PREFIX is complete.
set -eu

prefix=${1:?usage: build-libperf.sh PREFIX [SERIES]}
series=${2:-6.1}
pkg=linux-source-$series

die() { echo "build-libperf: $*" >&2; exit 1; }

ver=$(dpkg-query -W -f='${Version}' "$pkg" 2>/dev/null) ||
	die "package $pkg is not installed (apt-get install $pkg)"
tarball=$(dpkg -L "$pkg" | grep -E "/$pkg\.tar\.(xz|bz2|gz)\$" | head -n1)
[ -n "$tarball" ] && [ -r "$tarball" ] ||
	die "no source tarball in package $pkg"

stamp="$prefix/.libperf-$ver.stamp"
if [ -f "$stamp" ] && [ -f "$prefix/lib/libperf.a" ] &&
   [ -f "$prefix/lib/libapi.a" ] && [ -f "$prefix/lib/pkgconfig/libperf.pc" ]; then
	exit 0
fi

cache=${NMIPROF_CACHE:-/var/cache/nmiprof}
if ! mkdir -p "$cache" 2>/dev/null || [ ! -w "$cache" ]; then
	cache=${XDG_CACHE_HOME:-$HOME/.cache}/nmiprof
	mkdir -p "$cache"
fi
src="$cache/libperf-src-$ver"
top=$pkg

if [ ! -f "$src/.extracted" ]; then
	echo "build-libperf: extracting libperf sources from $tarball"
	tmp="$src.tmp.$$"
	rm -rf "$tmp"
	mkdir -p "$tmp"
	# What tools/lib/perf/Makefile and tools/lib/api/Makefile reach:
	# their sources, tools/lib/{zalloc,str_error_r}.c, the tools/ copies
	# of the kernel headers and the tools/build machinery.
	tar -xf "$tarball" -C "$tmp" --strip-components=1 \
		"$top/tools/lib/perf" "$top/tools/lib/api" \
		"$top/tools/lib/zalloc.c" "$top/tools/lib/str_error_r.c" \
		"$top/tools/include" "$top/tools/arch/x86" \
		"$top/tools/build" "$top/tools/scripts"
	touch "$tmp/.extracted"
	# Another build may have won the race: keep its copy, it may be in
	# use.  Only a partial leftover (no .extracted) is replaced.
	[ -f "$src/.extracted" ] || rm -rf "$src"
	mv -T "$tmp" "$src" 2>/dev/null || rm -rf "$tmp"
	[ -f "$src/.extracted" ] || die "could not populate $src"
fi

obj="$prefix/.build"
rm -rf "$obj"
mkdir -p "$obj" "$prefix/lib/pkgconfig" "$prefix/include"
jobs=${NMIPROF_JOBS:-2}

# -j is fine: tools/build serialises fixdep itself.  EXTRA_CFLAGS keeps
# newer compilers from failing the kernel's -Werror on 6.1-era code.
make -s -C "$src/tools/lib/perf" -j"$jobs" O="$obj" prefix="$prefix" \
	libdir_relative=lib EXTRA_CFLAGS="-Wno-error" \
	"$obj/libperf.a" "$obj/libapi.a" >"$obj/build.log" 2>&1 || {
	tail -n 30 "$obj/build.log" >&2
	die "make failed, full log: $obj/build.log"
}
make -s -C "$src/tools/lib/perf" O="$obj" prefix="$prefix" \
	libdir_relative=lib install_headers install_pkgconfig \
	>>"$obj/build.log" 2>&1 || {
	tail -n 30 "$obj/build.log" >&2
	die "install failed, full log: $obj/build.log"
}
install -m 644 "$obj/libperf.a" "$obj/libapi.a" "$prefix/lib/"
# libperf's public headers include <linux/perf_event.h> etc. from the
# system uapi, which matches or is newer than 6.1: nothing else to copy.
touch "$stamp"
echo "build-libperf: libperf $ver installed in $prefix"
