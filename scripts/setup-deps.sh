#!/bin/bash
# setup-deps.sh: install everything nmiprof needs to build and test, on
# Debian 12, as root. Idempotent: when everything is present it does not
# touch apt at all and returns in about a second.
#
# Then scripts/kernels.sh fetch installs the test kernels' headers and caches
# their images (see that script; images are unpacked, never installed).
set -euo pipefail

PACKAGES=(
	# build
	build-essential cmake pkg-config flex bison bc
	libtraceevent-dev libncurses-dev libzstd-dev libelf-dev zlib1g-dev
	# unwind tables from .eh_frame/.debug_frame (lib/unwind)
	libdw-dev
	# gcc -m32 -static: the 32-bit test program (tests/progs/ia32)
	gcc-multilib
	# libperf is built from the kernel tree (tools/lib/perf)
	linux-source-6.1 xz-utils zstd
	# kmod/: the kernel's checkpatch.pl (cmake target checkpatch)
	linux-source-6.12
	# the QEMU bench and its guest
	qemu-system-x86 busybox-static kmod cpio python3
	# comparisons and interactive tests: perf, top driven through tmux,
	# pprof decoded by protoc, the flame graph's script run by node
	linux-perf tmux protobuf-compiler nodejs
	# pprof itself reads the pprof export: built with Debian's Go from
	# Debian's sources (GOPATH mode) by tests/cli/pprof_reader.sh
	golang-go golang-github-google-pprof-dev golang-github-chzyer-readline-dev
	golang-github-ianlancetaylor-demangle-dev golang-golang-x-sys-dev
	# the fleet exporter: libcurl; its tests run Debian's ClickHouse on
	# loopback (tests/fleet)
	libcurl4-openssl-dev clickhouse-server clickhouse-client
	# the packaging test: .debs built and installed into a Debian chroot
	debootstrap rsync dpkg-dev debhelper dh-dkms
	# model checks of the module's lock-free protocols (tests/spin)
	spin
)
# apt lists older than this are refreshed before installing anything.
LISTS_MAX_AGE_MIN=360

here=$(cd "$(dirname "$0")" && pwd)
prog=${0##*/}

[ "$(id -u)" = 0 ] || { echo "$prog: must run as root" >&2; exit 1; }

missing=()
for p in "${PACKAGES[@]}"; do
	[ "$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null)" = "install ok installed" ] ||
		missing+=("$p")
done

if [ ${#missing[@]} -gt 0 ]; then
	echo "$prog: installing: ${missing[*]}"
	# Refresh the lists if they are stale or do not know a package.
	fresh=$(find /var/lib/apt/lists -maxdepth 1 -name '*_Packages*' \
		-mmin -"$LISTS_MAX_AGE_MIN" 2>/dev/null | head -n 1)
	for p in "${missing[@]}"; do
		apt-cache show "$p" >/dev/null 2>&1 || fresh=
	done
	[ -n "$fresh" ] || apt-get update -q
	DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

# A failure here usually means stale lists (a kernel ABI bump removed the
# cached version from the mirror): refresh the lists and the versions once.
if ! "$here/kernels.sh" fetch; then
	echo "$prog: retrying with fresh package lists"
	apt-get update -q
	"$here/kernels.sh" refresh >/dev/null
	"$here/kernels.sh" fetch
fi
echo "$prog: ok; test kernels: $("$here/kernels.sh" list | tr '\n' ' ')"
