#!/bin/bash
# build-debs.sh OUTDIR: build the nmiprof and nmiprof-dkms .debs from this
# checkout's working tree into OUTDIR.
#
# dpkg-buildpackage wants debian/ at the top of the source tree, so the
# tree (minus what .gitignore names and .git) is copied to OUTDIR/src with
# packaging/debian as its debian/, and debian/changelog is written with
# the version of project() in the top-level CMakeLists.txt.  The CMake
# build directory OUTDIR/obj is kept between runs: a rebuild only compiles
# what changed.
#
# Needs the Build-Depends of packaging/debian/control (dpkg-buildpackage
# checks them); tests/packaging/host-deps.sh installs them.
set -euo pipefail

prog=${0##*/}
die() { echo "$prog: $*" >&2; exit 1; }

top=$(cd "$(dirname "$0")/.." && pwd)
[ $# -eq 1 ] || die "usage: $prog OUTDIR"
mkdir -p "$1"
out=$(cd "$1" && pwd)
case $out/ in
"$top"/packaging/* | "$top"/debian/*) die "OUTDIR must not be inside the copied tree" ;;
esac

version=$(sed -nE 's/^project\(nmiprof[[:space:]]+VERSION[[:space:]]+([0-9][0-9A-Za-z.~+]*).*/\1/p' \
	"$top/CMakeLists.txt")
[ -n "$version" ] || die "no 'project(nmiprof VERSION x.y.z' in $top/CMakeLists.txt"

src=$out/src
obj=$out/obj
# The copy: everything git would see, and nothing under build*/ (OUTDIR
# itself usually is one).  Timestamps are kept, so make sees no change
# where there is none.
mkdir -p "$src"
rsync -a --delete --exclude=/.git --exclude='/build*/' --exclude=/debian \
	--filter=':- .gitignore' "$top/" "$src/"
rsync -a --delete "$top/packaging/debian/" "$src/debian/"

maint=$(sed -n 's/^Maintainer: //p' "$src/debian/control")
rev=$(git -C "$top" describe --always --dirty 2>/dev/null || echo unknown)
cat >"$src/debian/changelog" <<EOT
nmiprof ($version-1) unstable; urgency=medium

  * nmiprof $version, built from git $rev.

 -- $maint  $(date -R)
EOT

rm -f "$out"/nmiprof*.deb "$out"/nmiprof*.buildinfo "$out"/nmiprof*.changes
cd "$src"
# -nc: no "debian/rules clean" first; the fresh debian/ above already
# holds no stamps, and the build directory is meant to be reused.
NMIPROF_OBJDIR=$obj \
DEB_BUILD_OPTIONS="nocheck parallel=$(nproc) ${DEB_BUILD_OPTIONS:-}" \
	dpkg-buildpackage -b -uc -us -nc
ls "$out"/nmiprof_"$version"-1_*.deb "$out"/nmiprof-dkms_"$version"-1_all.deb
