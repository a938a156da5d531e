#!/bin/bash
# test-debs.sh: the packaging test (ctest label "packaging").
#
#   test-debs.sh SRCDIR WORKDIR VERSION
#
# Builds the .debs from SRCDIR (packaging/build-debs.sh), checks their
# version against VERSION (project() in CMakeLists.txt), then installs them
# into a fresh Debian 12 chroot and checks there (tests/packaging/
# in-chroot.sh): DKMS builds nmiprof.ko for the first test kernel on
# install and for the others when their headers arrive later, the unit
# passes systemd-analyze verify, `nmiprof --version` runs, the group, store
# and socket dirs exist, nmiprofd works with only the unit's capability
# bounding set, group and umask (it samples the machine for a few seconds
# through perf events), and a purge removes everything but the store.
#
# The chroot comes from a tarball cached in ${NMIPROF_CACHE:-/var/cache/
# nmiprof}, built on first use (debootstrap from the host's mirror; a few
# minutes, needs the network).  The test kernels are scripts/kernels.sh's.
# Needs root; exits 77 (ctest: skipped) without it.  Writes only WORKDIR,
# the cache, and the host packages tests/packaging/host-deps.sh installs.
set -euo pipefail

prog=${0##*/}
die() { echo "$prog: $*" >&2; exit 1; }
step() { printf '%s: [%3ds] %s\n' "$prog" "$SECONDS" "$*"; }

[ $# -eq 3 ] || die "usage: $prog SRCDIR WORKDIR VERSION"
src=$(cd "$1" && pwd) work=$2 version=$3
here=$src/tests/packaging

if [ "$(id -u)" -ne 0 ]; then
	echo "$prog: needs root (debootstrap, chroot, apt); skipped"
	exit 77
fi
mkdir -p "$work"
work=$(cd "$work" && pwd)

step "host packages"
"$here/host-deps.sh"

step "building the .debs (packaging/build-debs.sh; log: $work/build-debs.log)"
if ! "$src/packaging/build-debs.sh" "$work/debs" >"$work/build-debs.log" 2>&1; then
	tail -n 30 "$work/build-debs.log"
	die "building the packages failed (full log: $work/build-debs.log)"
fi
deb=$work/debs/nmiprof_${version}-1_amd64.deb
dkmsdeb=$work/debs/nmiprof-dkms_${version}-1_all.deb
for f in "$deb" "$dkmsdeb"; do
	[ -f "$f" ] || die "no $f: the package version is not the project's $version"
done

# The chroot gets the test kernels' headers (the first installed, the
# others kept for a later "upgrade") and, so that the install needs no
# network, the nmiprof package's dependencies.
mapfile -t kernels < <("$src/scripts/kernels.sh" list)
[ ${#kernels[@]} -ge 1 ] || die "scripts/kernels.sh list named no kernel"
args=(--headers "${kernels[0]}")
for k in "${kernels[@]:1}"; do
	args+=(--later-headers "$k")
done
mapfile -t deps < <(dpkg-deb -f "$deb" Depends | tr ',' '\n' |
	sed -E 's/\(.*\)//; s/\|.*//; s/[[:space:]]//g' | grep . | sort -u)
step "chroot (kernels: ${kernels[*]}; nmiprof needs: ${deps[*]})"
# procps (/bin/kill of ExecReload=), man-db (systemd-analyze verify runs
# man for Documentation=) and udev (udevadm test checks the rule) are on
# every standard Debian system, but not in a minbase chroot.
"$here/chroot.sh" prepare "$work/chroot" "${args[@]}" dkms systemd procps man-db udev "${deps[@]}"

mkdir -p "$work/chroot/tmp/nmiprof-test"
cp "$deb" "$dkmsdeb" "$here/in-chroot.sh" "$work/chroot/tmp/nmiprof-test/"
step "checks in the chroot"
rc=0
"$here/chroot.sh" run "$work/chroot" /bin/bash /tmp/nmiprof-test/in-chroot.sh \
	/tmp/nmiprof-test "$version" "${kernels[@]}" || rc=$?
# The chroot is ~1 GB; keep it only when it has something to show.
if [ $rc -eq 0 ]; then
	step "removing the chroot"
	rm -rf --one-file-system "$work/chroot"
else
	echo "$prog: FAILED; the chroot is kept for inspection: $work/chroot"
fi
step "done"
exit $rc
