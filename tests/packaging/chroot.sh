#!/bin/bash
# chroot.sh: a Debian 12 chroot for the packaging test, built once and cached
# as a tarball, unpacked fresh for every run so that no run sees another's
# leftovers.
#
#   chroot.sh prepare ROOT [--headers KVER]... [--later-headers KVER]... PKG...
#       Unpack the cached chroot into ROOT (which is removed first), building
#       the cache first if this exact recipe has none.  The recipe is the
#       mirror, the package list and the kernels:
#         --headers KVER        linux-headers-KVER is installed
#         --later-headers KVER  linux-headers-KVER is only downloaded into the
#                               chroot's apt cache, so that a test can install
#                               it offline later ("a kernel upgrade").
#   chroot.sh run ROOT CMD...
#       Run CMD in ROOT with /proc and /dev mounted, inside a private mount
#       namespace: the mounts vanish with the command, even when it is killed.
#
# The cache lives in ${NMIPROF_CACHE:-/var/cache/nmiprof}/chroot-*.tar.zst
# (about 220 MB; one unused for two weeks is deleted).
# Nothing outside ROOT and the cache is written.
set -euo pipefail

prog=${0##*/}
die() { echo "$prog: $*" >&2; exit 1; }
note() { echo "$prog: $*" >&2; }

SUITE=bookworm
SOURCES=/etc/apt/sources.list.d/debian.sources
CACHE=${NMIPROF_CACHE:-/var/cache/nmiprof}

[ "$(id -u)" = 0 ] || die "must run as root (debootstrap, chroot)"

# The mirror of the first deb822 stanza that carries $SUITE.
mirror() {
	awk -v s="$SUITE" '
		/^URIs:/ { u = $2 }
		/^Suites:/ { for (i = 2; i <= NF; i++) if ($i == s) { print u; exit } }
		/^$/ { u = "" }' "$SOURCES"
}

# run ROOT CMD...: the mounts live in a namespace of their own.
run_in() {
	local root=$1
	shift
	unshare --mount --propagation private -- /bin/sh -euc '
		root=$1; shift
		mount -t proc proc "$root/proc"
		mount --rbind /dev "$root/dev"
		exec chroot "$root" /usr/bin/env -i \
			PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 \
			DEBIAN_FRONTEND=noninteractive "$@"' sh "$root" "$@"
}

# Some kernels' headers packages depend on the kernel image (6.12 in
# bookworm-security does).  Installing an image in the chroot would unpack
# all its modules and build an initramfs for nothing: a tiny package
# standing in for it provides the image names the headers ask for.
IMAGE_STANDIN='
	hdr=$1
	k=${hdr#linux-headers-}
	prov=$(apt-cache show --no-all-versions "$hdr" | sed -n "s/^Depends: //p" |
		tr ",|" "\n\n" | sed "s/^ *//; s/ *$//" | grep "^linux-image-$k[ (]" | paste -sd, -)
	[ -n "$prov" ] || exit 0
	d=$(mktemp -d)
	mkdir "$d/DEBIAN"
	printf "%s\n" "Package: nmiprof-test-image-standin-$k" "Version: 1" \
		"Architecture: all" "Maintainer: nmiprof test <root@localhost>" \
		"Provides: $prov" \
		"Description: stand-in for the kernel image (nmiprof test chroot only)" \
		>"$d/DEBIAN/control"
	dpkg-deb -b "$d" /tmp/standin.deb >/dev/null
	dpkg -i /tmp/standin.deb
	rm -rf "$d" /tmp/standin.deb
'

build_cache() { # TARBALL RECIPE-FILE
	local tarball=$1 recipe=$2 tmp m
	m=$(mirror)
	[ -n "$m" ] || die "no $SUITE mirror in $SOURCES"
	for p in debootstrap zstd; do
		command -v "$p" >/dev/null || die "$p is not installed (tests/packaging/host-deps.sh)"
	done
	mkdir -p "$CACHE"
	tmp=$(mktemp -d "$CACHE/.chroot.XXXXXX")
	trap 'rm -rf --one-file-system "$tmp"' EXIT
	note "building the $SUITE chroot cache from $m (once; takes a few minutes)"
	unshare --mount --propagation private -- \
		debootstrap --variant=minbase "$SUITE" "$tmp/root" "$m" >"$tmp/debootstrap.log" 2>&1 ||
		{ tail -n 20 "$tmp/debootstrap.log" >&2; tail -n 20 "$tmp/root/debootstrap/debootstrap.log" >&2 || true; die "debootstrap failed"; }
	# The host's sources (with -security, where the test kernels' headers
	# come from) and resolver; services never start in the chroot.
	rm -f "$tmp/root/etc/apt/sources.list"
	cp "$SOURCES" "$tmp/root/etc/apt/sources.list.d/"
	cp -L /etc/resolv.conf "$tmp/root/etc/resolv.conf"
	printf '#!/bin/sh\nexit 101\n' >"$tmp/root/usr/sbin/policy-rc.d"
	chmod 755 "$tmp/root/usr/sbin/policy-rc.d"
	local pkgs=() later=()
	while read -r kind name; do
		case $kind in
		pkg) pkgs+=("$name") ;;
		headers) pkgs+=("linux-headers-$name") ;;
		later) later+=("linux-headers-$name") ;;
		esac
	done <"$recipe"
	local log=$tmp/apt.log
	{
		run_in "$tmp/root" apt-get update -q &&
		run_in "$tmp/root" apt-get install -y -q --no-install-recommends "${pkgs[@]}" &&
		run_in "$tmp/root" apt-get clean &&
		(for h in "${later[@]}"; do
			run_in "$tmp/root" /bin/sh -euc "$IMAGE_STANDIN" sh "$h" &&
			run_in "$tmp/root" apt-get install -y -q --no-install-recommends --download-only "$h" ||
			exit 1
		done)
	} >"$log" 2>&1 || { tail -n 30 "$log" >&2; die "setting up the chroot failed"; }
	cp "$recipe" "$tmp/root/.nmiprof-chroot-recipe"
	tar -C "$tmp/root" --numeric-owner -cf - . | zstd -q -T0 -3 -o "$tmp/chroot.tar.zst"
	mv "$tmp/chroot.tar.zst" "$tarball"
	rm -rf --one-file-system "$tmp"
	trap - EXIT
	note "cached $tarball ($(du -h "$tarball" | cut -f1))"
}

prepare() {
	local root=${1:?usage: $prog prepare ROOT [--headers KVER]... PKG...}
	shift
	local recipe key tarball
	recipe=$(mktemp)
	{
		# Bump when build_cache changes what it makes of a recipe.
		echo "builder 2"
		echo "suite $SUITE"
		echo "mirror $(mirror)"
		while [ $# -gt 0 ]; do
			case $1 in
			--headers) echo "headers ${2:?}"; shift 2 ;;
			--later-headers) echo "later ${2:?}"; shift 2 ;;
			*) echo "pkg $1"; shift ;;
			esac
		done
	} >"$recipe"
	key=$(sha256sum <"$recipe" | cut -c1-12)
	tarball=$CACHE/chroot-$SUITE-$key.tar.zst
	[ -f "$tarball" ] || build_cache "$tarball" "$recipe"
	rm -f "$recipe"
	# Recipes change (a kernel ABI bump, new dependencies): a cache unused
	# for two weeks goes.
	touch "$tarball"
	find "$CACHE" -maxdepth 1 -name "chroot-$SUITE-*.tar.zst" -mtime +14 -delete
	# A leftover ROOT is only ever a plain directory: mounts never outlive
	# run_in's namespace.
	rm -rf --one-file-system "$root"
	mkdir -p "$root"
	zstd -q -d -c "$tarball" | tar -C "$root" --numeric-owner -xf -
	echo "$tarball"
}

cmd=${1:-}
[ $# -gt 0 ] && shift
case $cmd in
prepare) prepare "$@" ;;
run) root=${1:?usage: $prog run ROOT CMD...}; shift; run_in "$root" "$@" ;;
*) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2; exit 2 ;;
esac
