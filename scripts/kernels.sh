#!/bin/bash
# kernels.sh: resolve, fetch and locate the kernels nmiprof is tested on.
#
# The test kernels are named by Debian metapackages, never by version: the
# distribution's 6.1 (linux-image-amd64) and bookworm-security's 6.12
# (linux-image-6.12-amd64). Their concrete versions are read from the local
# package lists once and cached, so later runs need neither network nor apt.
#
# Headers are installed as packages (Kbuild needs them in /usr/src). Images
# are NOT installed: installing one runs initramfs and bootloader hooks on
# the host. Only boot/ of the image package is unpacked into the cache; QEMU
# boots that vmlinuz with our own initramfs.
#
#   kernels.sh list            one kernel release (uname -r) per line
#   kernels.sh fetch           make sure headers and images of all are present
#   kernels.sh refresh         re-resolve the versions from the package lists
#   kernels.sh vmlinuz KVER    path of the cached vmlinuz
#   kernels.sh headers KVER    path of the installed Kbuild headers tree
#   kernels.sh status          table of what is present
#
# NMIPROF_CACHE overrides the cache root (default /var/cache/nmiprof).
set -euo pipefail

# image metapackage : headers metapackage, one test kernel each.
TEST_KERNELS=(
	"linux-image-amd64:linux-headers-amd64"
	"linux-image-6.12-amd64:linux-headers-6.12-amd64"
)

prog=${0##*/}
die() { echo "$prog: $*" >&2; exit 1; }
note() { echo "$prog: $*" >&2; }

cache_root() {
	if [ -n "${NMIPROF_CACHE:-}" ]; then
		echo "$NMIPROF_CACHE"
	elif [ "$(id -u)" = 0 ] || [ -w /var/cache/nmiprof ]; then
		echo /var/cache/nmiprof
	else
		echo "${XDG_CACHE_HOME:-$HOME/.cache}/nmiprof"
	fi
}
KDIR=$(cache_root)/kernels
RESOLVED=$KDIR/resolved

# First "Depends:" of a metapackage's candidate version, e.g.
# linux-image-amd64 -> linux-image-6.1.0-57-amd64.
meta_target() {
	local dep
	dep=$(apt-cache depends --no-recommends --no-suggests "$1" 2>/dev/null |
		awk '$1 == "Depends:" { print $2; exit }')
	[ -n "$dep" ] || die "cannot resolve metapackage $1 (apt-get update needed?)"
	echo "$dep"
}

# Writes "kver image-package headers-package" lines to the cache.
resolve() {
	local pair img hdr kver tmp
	tmp=$(mktemp)
	for pair in "${TEST_KERNELS[@]}"; do
		img=$(meta_target "${pair%%:*}") || { rm -f "$tmp"; exit 1; }
		hdr=$(meta_target "${pair##*:}") || { rm -f "$tmp"; exit 1; }
		kver=${img#linux-image-}
		[ "linux-headers-$kver" = "$hdr" ] ||
			{ rm -f "$tmp"; die "${pair%%:*} -> $img but ${pair##*:} -> $hdr: lists out of sync"; }
		echo "$kver $img $hdr" >>"$tmp"
	done
	mkdir -p "$KDIR"
	mv "$tmp" "$RESOLVED"
	chmod 644 "$RESOLVED"
}

resolved() {
	[ -s "$RESOLVED" ] || resolve
	cat "$RESOLVED"
}

field_of() { # KVER column
	awk -v k="$1" -v c="$2" '$1 == k { print $c; found = 1 } END { exit !found }' \
		<(resolved) || die "$1 is not a test kernel (see: $prog list)"
}

headers_dir() {
	local d
	for d in "/usr/src/linux-headers-$1" "/lib/modules/$1/build"; do
		[ -f "$d/Makefile" ] && { echo "$d"; return 0; }
	done
	return 1
}

vmlinuz_path() { echo "$KDIR/$1/boot/vmlinuz-$1"; }

installed() {
	[ "$(dpkg-query -W -f='${Status}' "$1" 2>/dev/null)" = "install ok installed" ]
}

fetch_one() {
	local kver=$1 img hdr dir tmp deb
	img=$(field_of "$kver" 2)
	hdr=$(field_of "$kver" 3)
	if ! headers_dir "$kver" >/dev/null; then
		[ "$(id -u)" = 0 ] || die "headers for $kver missing; run as root: apt-get install $hdr"
		note "installing $hdr"
		DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "$hdr" >&2
	fi
	[ -f "$(vmlinuz_path "$kver")" ] && return 0
	dir=$KDIR/$kver
	tmp=$(mktemp -d "$KDIR/.dl.XXXXXX")
	note "downloading $img (image is unpacked into $dir, not installed)"
	# apt's sandbox user (_apt) cannot write our private directory.
	(cd "$tmp" && apt-get download -q -o APT::Sandbox::User=root "$img" >&2) || { rm -rf "$tmp"; die "apt-get download $img failed"; }
	deb=$(echo "$tmp"/*.deb)
	mkdir -p "$tmp/x"
	# Only boot/ (vmlinuz, config, System.map); the modules are not needed.
	dpkg-deb --fsys-tarfile "$deb" | tar -x -C "$tmp/x" --wildcards './boot/*' ||
		{ rm -rf "$tmp"; die "unpacking $deb failed"; }
	[ -f "$tmp/x/boot/vmlinuz-$kver" ] || { rm -rf "$tmp"; die "$deb has no boot/vmlinuz-$kver"; }
	dpkg-deb -f "$deb" Version >"$tmp/x/package-version"
	rm -rf "$dir"
	mv "$tmp/x" "$dir"
	rm -rf "$tmp"
}

usage() {
	sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'
	exit "${1:-0}"
}

cmd=${1:-}
[ $# -gt 0 ] && shift
case $cmd in
list)
	resolved | awk '{ print $1 }'
	;;
refresh)
	resolve
	resolved | awk '{ print $1 }'
	;;
fetch)
	mkdir -p "$KDIR"
	for k in $(resolved | awk '{ print $1 }'); do
		fetch_one "$k"
	done
	;;
vmlinuz)
	[ $# -eq 1 ] || usage 2
	field_of "$1" 1 >/dev/null
	p=$(vmlinuz_path "$1")
	[ -f "$p" ] || die "no image for $1 cached; run: $prog fetch"
	echo "$p"
	;;
headers)
	[ $# -eq 1 ] || usage 2
	field_of "$1" 1 >/dev/null
	headers_dir "$1" || die "no headers for $1; run: $prog fetch (as root)"
	;;
status)
	while read -r kver img hdr; do
		h=$(headers_dir "$kver" || echo "(missing: $hdr)")
		v=$(vmlinuz_path "$kver")
		[ -f "$v" ] || v="(missing: $img)"
		printf '%s\n  headers %s\n  vmlinuz %s\n' "$kver" "$h" "$v"
	done < <(resolved)
	;;
-h | --help | help)
	usage
	;;
*)
	usage 2
	;;
esac
