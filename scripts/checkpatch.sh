#!/bin/sh
# checkpatch.sh BUILDDIR: the kernel's scripts/checkpatch.pl, from Debian's
# linux-source-6.12 (scripts/setup-deps.sh), over kmod/ and the ABI header.
# The script and its data files are unpacked once into BUILDDIR/tools.
#
# Flags: a whole-file check outside a kernel tree.  Ignored types:
#   LINUX_VERSION_CODE, CONSTANT_COMPARISON: kmod/compat.h holds every
#   6.1/6.12 difference as `#if LINUX_VERSION_CODE >= KERNEL_VERSION()`,
#   the idiom an out-of-tree module cannot avoid.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
build=${1:?usage: checkpatch.sh BUILDDIR}
tarball=/usr/src/linux-source-6.12.tar.xz
tools=$build/tools/checkpatch
cp=$tools/scripts/checkpatch.pl

if [ ! -f "$cp" ] || [ "$tarball" -nt "$cp" ]; then
	[ -f "$tarball" ] || {
		echo "checkpatch: $tarball missing: apt-get install linux-source-6.12 (scripts/setup-deps.sh)" >&2
		exit 1
	}
	rm -rf "$tools"
	mkdir -p "$tools"
	tar -xJf "$tarball" -C "$tools" --strip-components=1 --wildcards \
		'*/scripts/checkpatch.pl' '*/scripts/spelling.txt' \
		'*/scripts/const_structs.checkpatch'
	touch "$cp"
fi
cd "$top"
rc=0
out=$(perl "$cp" --no-tree --file --terse --show-types \
	--ignore LINUX_VERSION_CODE,CONSTANT_COMPARISON \
	kmod/*.c kmod/*.h include/nmiprof/*.h) || rc=$?
printf '%s\n' "$out" | grep -v '^total: 0 errors, 0 warnings,' || true
[ $rc -eq 0 ] && echo "checkpatch: kmod/ and include/nmiprof/ clean"
exit $rc
