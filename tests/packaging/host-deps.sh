#!/bin/bash
# host-deps.sh: Debian packages the packaging test needs on the build
# machine, installed when missing (idempotent: no apt call when all are
# there).  The Build-Depends of packaging/debian/control come on top;
# dpkg-checkbuilddeps names those that are missing.
set -euo pipefail

prog=${0##*/}
top=$(cd "$(dirname "$0")/../.." && pwd)

PACKAGES=(
	debootstrap     # the test chroot
	zstd rsync      # chroot cache, source copy
	dpkg-dev debhelper dh-dkms   # building the .debs
)

installed() {
	[ "$(dpkg-query -W -f='${Status}' "$1" 2>/dev/null)" = "install ok installed" ]
}

apt_install() {
	echo "$prog: installing: $*" >&2
	DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "$@" >&2 ||
		{ apt-get update -q >&2 &&
		  DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "$@" >&2; }
}

missing=()
for p in "${PACKAGES[@]}"; do
	installed "$p" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] || apt_install "${missing[@]}"

# "Unmet build dependencies: a b (>= 1) c | d" -> a b c
if ! out=$(dpkg-checkbuilddeps "$top/packaging/debian/control" 2>&1); then
	deps=$(sed -n 's/.*Unmet build dependencies: //p' <<<"$out" |
		sed -E 's/\([^)]*\)//g; s/ *\| *[^ ]+//g; s/:[a-z0-9]+//g' | xargs -n1 | sort -u)
	[ -n "$deps" ] || { echo "$out" >&2; exit 1; }
	# shellcheck disable=SC2086
	apt_install $deps
fi
