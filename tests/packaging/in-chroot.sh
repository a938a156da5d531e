#!/bin/bash
# in-chroot.sh: the checks of the packaging test, run inside the Debian 12
# chroot that test-debs.sh prepared (see there).
#
#   in-chroot.sh DEBDIR VERSION KVER-INSTALLED [KVER-LATER...]
#
# DEBDIR holds nmiprof_*.deb and nmiprof-dkms_*.deb.  Headers for
# KVER-INSTALLED are installed already; those of each KVER-LATER are only
# in apt's cache and get installed here, the way a kernel upgrade would.
# Prints one "ok"/"FAIL" line per check; exits 1 if any failed.
set -uo pipefail

debdir=$1 version=$2 kfirst=$3
shift 3
klater=("$@")

failed=0
ok() { echo "ok   $*"; }
fail() { echo "FAIL $*"; failed=1; }
quiet() { "$@" >/dev/null 2>&1; }
check() { # DESCRIPTION CMD...: ok when CMD succeeds
	local what=$1
	shift
	if "$@"; then ok "$what"; else fail "$what"; fi
}

# The module DKMS built for KVER: present, and built for that kernel.
module_for() {
	local k=$1 ko vermagic
	ko=$(find "/lib/modules/$k" -name nmiprof.ko 2>/dev/null | head -n 1)
	if [ -z "$ko" ]; then
		fail "dkms: no nmiprof.ko under /lib/modules/$k"
		dkms status nmiprof 2>&1 | sed 's/^/     /'
		for log in /var/lib/dkms/nmiprof/"$version"/build/make.log \
			   /var/lib/dkms/nmiprof/"$version"/"$k"/*/log/make.log; do
			[ -f "$log" ] && tail -n 25 "$log" | sed 's/^/     /'
		done
		return
	fi
	vermagic=$(modinfo -F vermagic "$ko")
	if [ "${vermagic%% *}" = "$k" ]; then
		ok "dkms: $ko (vermagic $k)"
	else
		fail "dkms: $ko has vermagic '$vermagic', not $k"
	fi
}

# --- install --------------------------------------------------------------
echo "-- dpkg -i nmiprof-dkms nmiprof (dkms builds for $kfirst)"
if dpkg -i "$debdir"/nmiprof-dkms_"$version"-1_all.deb "$debdir"/nmiprof_"$version"-1_amd64.deb \
	>/tmp/dpkg-install.log 2>&1; then
	ok "install: dpkg -i of both packages"
else
	fail "install: dpkg -i of both packages"
	tail -n 40 /tmp/dpkg-install.log | sed 's/^/     /'
fi
module_for "$kfirst"

for k in "${klater[@]}"; do
	echo "-- kernel upgrade: headers for $k arrive (DKMS AUTOINSTALL)"
	if apt-get install -y -q --no-download --no-install-recommends "linux-headers-$k" \
		>/tmp/apt-headers.log 2>&1; then
		ok "headers: linux-headers-$k installed offline"
	else
		fail "headers: linux-headers-$k"
		tail -n 20 /tmp/apt-headers.log | sed 's/^/     /'
	fi
	module_for "$k"
done

echo "-- what the nmiprof package set up"
out=$(nmiprof --version 2>&1)
rc=$?
if [ $rc -eq 0 ] && grep -qF "$version" <<<"$out"; then
	ok "nmiprof --version: $out"
else
	fail "nmiprof --version (exit $rc): $out"
fi

out=$(nmiprofd --version 2>&1)
rc=$?
if [ $rc -eq 0 ] && grep -qF "$version" <<<"$out"; then
	ok "nmiprofd --version: $out"
else
	fail "nmiprofd --version (exit $rc): $out"
fi

check "group nmiprof exists (sysusers.d)" quiet getent group nmiprof
for d in /var/lib/nmiprof /run/nmiprof; do
	got=$(stat -c '%a %U:%G' "$d" 2>&1)
	[ "$got" = "750 root:nmiprof" ] && ok "tmpfiles: $d $got" ||
		fail "tmpfiles: $d is '$got', want '750 root:nmiprof'"
done
grep -qx ' /etc/nmiprof/nmiprofd.conf [0-9a-f]*' < <(dpkg-query -W -f='${Conffiles}\n' nmiprof) &&
	ok "conffile: /etc/nmiprof/nmiprofd.conf" ||
	fail "conffile: /etc/nmiprof/nmiprofd.conf is not a conffile of nmiprof"
check "udev rule installed" test -f /lib/udev/rules.d/60-nmiprof.rules
check "service enabled (multi-user.target.wants)" \
	test -L /etc/systemd/system/multi-user.target.wants/nmiprofd.service

# systemd-analyze verify prints problems and still exits 0 for many of
# them: any line at all about our unit is a failure.
out=$(systemd-analyze verify /lib/systemd/system/nmiprofd.service 2>&1)
rc=$?
if [ $rc -eq 0 ] && ! grep -q . <<<"$out"; then
	ok "systemd-analyze verify nmiprofd.service"
else
	fail "systemd-analyze verify nmiprofd.service (exit $rc)"
	sed 's/^/     /' <<<"$out"
fi
# Informational: systemd's own rating of the sandbox.
systemd-analyze security --offline=yes /lib/systemd/system/nmiprofd.service 2>/dev/null |
	tail -n 1 | sed 's/^/info /'

# --- purge ----------------------------------------------------------------
echo "-- dpkg --purge: everything goes except the store"
echo "a profile slice" >/var/lib/nmiprof/test-slice
files=$(dpkg -L nmiprof nmiprof-dkms | while read -r f; do [ -d "$f" ] || echo "$f"; done)
if dpkg --purge nmiprof nmiprof-dkms >/tmp/dpkg-purge.log 2>&1; then
	ok "purge: dpkg --purge of both packages"
else
	fail "purge: dpkg --purge of both packages"
	tail -n 20 /tmp/dpkg-purge.log | sed 's/^/     /'
fi
left=""
for f in $files; do
	[ -e "$f" ] || [ -L "$f" ] && left="$left $f"
done
[ -z "$left" ] && ok "purge: no packaged file is left" || fail "purge: left behind:$left"
left=$(ls -d /etc/nmiprof /run/nmiprof /usr/src/nmiprof-* /var/lib/dkms/nmiprof \
	/etc/systemd/system/*/nmiprofd.service 2>/dev/null;
	find /lib/modules -name nmiprof.ko 2>/dev/null)
[ -z "$left" ] && ok "purge: no config, runtime dir, DKMS tree, module or unit link left" ||
	fail "purge: left behind: $(echo $left)"
check "purge: the store /var/lib/nmiprof and its data remain" \
	grep -qx "a profile slice" /var/lib/nmiprof/test-slice

exit $failed
