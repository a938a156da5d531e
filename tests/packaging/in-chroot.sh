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
# Without /dev/nmiprof (no module loaded here) the rule cannot fire, but
# udevadm test parses every rules file and names the lines it rejects
# (unknown keys, an unknown group).  It needs a device: any misc one.
rules=/lib/udev/rules.d/60-nmiprof.rules
mount -t sysfs -o ro sysfs /sys
dev=$(ls -d /sys/devices/virtual/misc/* 2>/dev/null | head -n 1)
out=$(udevadm test --action=add "$dev" 2>&1)
if ! grep -q "Reading rules file: .*/60-nmiprof.rules" <<<"$out"; then
	fail "udev: $rules was not read by udevadm test $dev"
elif grep -q "60-nmiprof.rules:[0-9]" <<<"$out"; then
	fail "udev: $rules has errors"
	grep "60-nmiprof.rules:[0-9]" <<<"$out" | sed 's/^/     /'
else
	ok "udev: $rules parses cleanly"
fi
check "service enabled (multi-user.target.wants)" \
	test -L /etc/systemd/system/multi-user.target.wants/nmiprofd.service

# systemd-analyze verify prints problems and still exits 0 for many of
# them: any line at all about our unit is a failure.
for u in nmiprofd.service nmiprof-cluster.service nmiprof-cluster.timer; do
	out=$(systemd-analyze verify "/lib/systemd/system/$u" 2>&1)
	rc=$?
	if [ $rc -eq 0 ] && ! grep -q . <<<"$out"; then
		ok "systemd-analyze verify $u"
	else
		fail "systemd-analyze verify $u (exit $rc)"
		sed 's/^/     /' <<<"$out"
	fi
done
# The fleet upkeep: installed with its config, not enabled.
check "cluster.conf installed, no shards named" grep -qx 'NMIPROF_CLUSTER_URLS=' /etc/nmiprof/cluster.conf
if ls /etc/systemd/system/*/nmiprof-cluster.* >/dev/null 2>&1; then
	fail "nmiprof-cluster.timer is enabled by the package (one host of the fleet enables it)"
else
	ok "nmiprof-cluster.timer not enabled by the package"
fi
# Informational: systemd's own rating of the sandbox.
systemd-analyze security --offline=yes /lib/systemd/system/nmiprofd.service 2>/dev/null |
	tail -n 1 | sed 's/^/info /'

# --- the unit's credentials are enough ----------------------------------
# No systemd runs here, so the sandbox as a whole cannot be started; what
# can be reproduced is the part that decides whether the daemon can work:
# root with only the unit's capability bounding set, the unit's group and
# umask, no new privileges.  The daemon then samples the machine for a
# few seconds through perf events (the module is not loaded here).
unit=/lib/systemd/system/nmiprofd.service
caps=-all,$(sed -n 's/^CapabilityBoundingSet=//p' "$unit" | tr 'A-Z ' 'a-z,' | sed 's/cap_/+/g')
group=$(sed -n 's/^Group=//p' "$unit")
umask_=$(sed -n 's/^UMask=//p' "$unit")
sandboxed_daemon() { # BOUNDING-SET: run nmiprofd ~3 s, print its kernel hot spots
	rm -rf /var/lib/nmiprof/profile /var/lib/nmiprof/lockups
	# Another user's process, started before the daemon (its mappings come
	# from /proc/PID/maps), from a binary deleted since: the symbolizer
	# can only open it through /proc/PID/map_files.  Perl's interpreter
	# loop runs in functions perl exports, so they have names.
	cp /usr/bin/perl /tmp/perl-deleted
	setpriv --reuid=65534 --regid=65534 --clear-groups \
		/tmp/perl-deleted -e '$SIG{ALRM} = sub { exit }; alarm 6; $i++ while 1' &
	echo $! >/tmp/busy.pid
	sleep 0.5
	rm /tmp/perl-deleted
	(umask "$umask_"
	 exec setpriv --bounding-set="$1" --inh-caps=-all --regid="$group" --clear-groups \
		--no-new-privs nmiprofd --backend libperf --slice-seconds 1) >/tmp/nmiprofd.log 2>&1 &
	local pid=$! i
	# Keep the kernel busy so that kernel frames are sampled.
	for i in $(seq 30); do
		cat /proc/kallsyms /proc/self/maps >/dev/null
		sleep 0.1
	done
	nmiprof status >/tmp/nmiprof-status.log 2>&1 || echo "nmiprof status failed" >>/tmp/nmiprofd.log
	stat -c '%a %U:%G' /run/nmiprof/nmiprofd.sock >/tmp/nmiprofd-sock 2>&1
	kill -TERM $pid
	wait $pid || echo "nmiprofd exited with $?" >>/tmp/nmiprofd.log
	nmiprof report --kernel -n 20 2>&1 | grep '\[k\]' | awk '{ print $NF }'
	nmiprof report --user --pid "$(cat /tmp/busy.pid)" -n 5 >/tmp/user-report 2>&1
	wait "$(cat /tmp/busy.pid)" 2>/dev/null
}
# "named/all" of the user hot spots of the other user's process
user_named() {
	local all
	all=$(grep -v '^#' /tmp/user-report | grep -v '^Overhead' | awk 'NF { print $NF }')
	echo "$(grep -v '^0x' <<<"$all" | grep -c .)/$(grep -c . <<<"$all")"
}
echo "-- nmiprofd with the unit's credentials (bounding set $caps, group $group)"
ksyms=$(sandboxed_daemon "$caps")
if grep -q 'nmiprofd exited\|status failed' /tmp/nmiprofd.log; then
	fail "nmiprofd under the unit's credentials"
	sed 's/^/     /' /tmp/nmiprofd.log /tmp/nmiprof-status.log
else
	ok "nmiprofd runs, answers 'nmiprof status' and stops cleanly under the unit's credentials"
fi
got=$(cat /tmp/nmiprofd-sock)
[ "$got" = "660 root:nmiprof" ] && ok "control socket $got" ||
	fail "control socket is '$got', want '660 root:nmiprof'"
world=$(find /var/lib/nmiprof -perm /o=rwx 2>&1)
[ -z "$world" ] && ok "store: nothing in it is world-accessible" ||
	fail "store: world-accessible: $(echo $world)"
# CAP_SYSLOG is what makes /proc/kallsyms show addresses (unless the
# host's sysctls show them to everyone anyway).
named=$(grep -v '^0x' <<<"$ksyms" | grep -c .)
[ "$named" -gt 0 ] && ok "kernel frames symbolized ($named of $(grep -c . <<<"$ksyms") hot spots named)" ||
	fail "no kernel frame symbolized: $(echo $ksyms | cut -c1-100)"
u=$(user_named)
[ "${u%/*}" -gt 0 ] && ok "another user's process, binary deleted, symbolized ($u user hot spots named)" ||
	{ fail "another user's process, binary deleted, not symbolized ($u named)"; sed 's/^/     /' /tmp/user-report; }
ksyms=$(sandboxed_daemon "${caps/,+syslog/}")
echo "info without CAP_SYSLOG: $(grep -v '^0x' <<<"$ksyms" | grep -c .) of $(grep -c . <<<"$ksyms") kernel hot spots named"
sandboxed_daemon "${caps/,+checkpoint_restore/}" >/dev/null
echo "info without CAP_CHECKPOINT_RESTORE: $(user_named) user hot spots of that process named"

# --- upgrade path ---------------------------------------------------------
# Reinstalling runs the maintainer scripts' upgrade branch; a local edit of
# the conffile must survive it.
echo "# local edit" >>/etc/nmiprof/nmiprofd.conf
if dpkg -i "$debdir"/nmiprof_"$version"-1_amd64.deb >/tmp/dpkg-reinstall.log 2>&1 &&
   grep -qx "# local edit" /etc/nmiprof/nmiprofd.conf; then
	ok "reinstall (upgrade path) keeps the local edit of nmiprofd.conf"
else
	fail "reinstall (upgrade path) or the conffile edit"
	tail -n 20 /tmp/dpkg-reinstall.log | sed 's/^/     /'
fi

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
