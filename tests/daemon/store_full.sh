#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# nmiprofd with its store on a full disk (issue 15, item 15): a 1 MiB
# tmpfs, the libperf backend, a workload of short-lived processes (new
# pids: new aggregate entries every sample), 1 s slices and
# pending_size 1M.  Once the disk is filled, `nmiprof status` must name
# the failing path and ENOSPC, say since when and what is pending, and
# exit 6; the oldest segments must have been deleted to make room; the
# unwritten samples must stay within pending_size (the oldest dropped and
# counted).  Once space is freed the daemon must write again by itself,
# status exit 0, and the dropped samples be stored as lost.
#
#   store_full.sh NMIPROF NMIPROFD WORKDIR
# Exits 77 (skip) when not root (mount) or the daemon cannot sample.
set -u
NMIPROF=$1 NMIPROFD=$2 WORK=$3
[ "$(id -u)" = 0 ] || { echo "SKIP: mounting a tmpfs needs root"; exit 77; }
WORK=$WORK/run.$$
MNT=$WORK/mnt
SOCK=$WORK/nmiprofd.sock
mkdir -p "$MNT"
mount -t tmpfs -o size=1M,mode=0755 nmiprof-store-full "$MNT" ||
	{ echo "SKIP: cannot mount a tmpfs"; exit 77; }

"$NMIPROFD" -c /dev/null -s "$MNT/store" -S "$SOCK" -b libperf -F 999 \
	--slice-seconds 1 --pending-size 1M >"$WORK/nmiprofd.log" 2>&1 &
DPID=$!
# Short-lived processes: every sample a new pid, so new entries.
sh -c 'while :; do /bin/true; done' >/dev/null 2>&1 &
LPID=$!
cleanup() {
	kill "$LPID" 2>/dev/null
	kill -TERM "$DPID" 2>/dev/null
	wait "$LPID" "$DPID" 2>/dev/null
	umount "$MNT" 2>/dev/null
}
trap cleanup EXIT INT TERM

# shellcheck source=tests/daemon/npd_lib.sh
. "$(dirname "$0")/npd_lib.sh"
npd_wait_socket "$SOCK" "$DPID" "$WORK/nmiprofd.log"

status() {
	"$NMIPROF" status --socket "$SOCK" >"$WORK/status.txt" 2>&1
	echo $?
}
rss_kb() {
	awk '/^VmRSS:/ { print $2 }' "/proc/$DPID/status"
}
# Poll status (every 0.5 s, at most $1 s) until its output matches $2.
wait_status() {
	n=0
	while [ $n -lt $(($1 * 2)) ]; do
		rc=$(status)
		grep -Eq "$2" "$WORK/status.txt" && return 0
		n=$((n + 1))
		sleep 0.5
	done
	return 1
}

# A few slices on disk first: the full disk will take the oldest.
wait_status 10 'store: .* [3-9][0-9]* slice\(s\)|store: .* [1-9][0-9]+ slice\(s\)' ||
	{ echo "FAIL: no 3 slices written in 10 s:"; cat "$WORK/status.txt"; exit 1; }
rc=$(status)
[ "$rc" = 0 ] || { echo "FAIL: status exits $rc with a working store:"; cat "$WORK/status.txt"; exit 1; }
RSS0=$(rss_kb)
echo "ok   store writing; daemon RSS $RSS0 kB"

dd if=/dev/zero of="$MNT/fill" bs=4k >/dev/null 2>&1
df -k "$MNT" | tail -n 1

wait_status 15 'WRITES FAILING' ||
	{ echo "FAIL: status does not say the store fails (exit $rc):"; cat "$WORK/status.txt"; exit 1; }
cat "$WORK/status.txt"
rc=$(status)
[ "$rc" = 6 ] || { echo "FAIL: status exits $rc while the store fails, not 6"; exit 1; }
grep -q "WRITES FAILING since .*$MNT/store/profile.*No space left on device (ENOSPC)" \
	"$WORK/status.txt" ||
	{ echo "FAIL: the failing path, reason or errno is missing"; exit 1; }
grep -Eq 'store: +[0-9]+ sample\(s\) pending in memory, [0-9.]+ of 1\.0 MiB' "$WORK/status.txt" ||
	{ echo "FAIL: the pending samples and their bound are missing"; exit 1; }
grep -Eq 'disk full: [1-9][0-9]* oldest segment\(s\), [1-9][0-9]* bytes, deleted' \
	"$WORK/status.txt" ||
	{ echo "FAIL: no old segment was deleted to make room"; exit 1; }
echo "ok   status exit 6: path, ENOSPC, since, pending, segments deleted"

# Samples keep coming: past pending_size the oldest are dropped, counted.
wait_status 25 'unwritten sample\(s\) dropped over pending_size' ||
	{ echo "FAIL: nothing dropped over pending_size 1M in 25 s:"; cat "$WORK/status.txt"; exit 1; }
PEND=$(sed -n 's/.*pending in memory, \([0-9.]*\) of.*/\1/p' "$WORK/status.txt")
awk -v p="$PEND" 'BEGIN { exit !(p <= 1.1) }' ||
	{ echo "FAIL: $PEND MiB pending, over pending_size 1M"; exit 1; }
RSS1=$(rss_kb)
grep 'dropped' "$WORK/status.txt"
echo "ok   pending $PEND MiB <= 1 MiB, oldest dropped and counted; RSS $RSS0 -> $RSS1 kB"

rm -f "$MNT/fill"
n=0
while rc=$(status); [ "$rc" != 0 ] && [ $n -lt 20 ]; do
	n=$((n + 1))
	sleep 0.5
done
[ "$rc" = 0 ] && ! grep -q 'WRITES FAILING' "$WORK/status.txt" ||
	{ echo "FAIL: the store does not work again 10 s after freeing space (exit $rc):"
	  cat "$WORK/status.txt"; exit 1; }
grep -q 'store writes work again' "$WORK/nmiprofd.log" ||
	{ echo "FAIL: no recovery in the log"; cat "$WORK/nmiprofd.log"; exit 1; }
DROPPED=$(sed -n 's/^store: *\([0-9]*\) unwritten sample(s) dropped.*/\1/p' "$WORK/status.txt")
kill -TERM "$DPID"
wait "$DPID"
"$NMIPROF" report --store "$MNT/store" >"$WORK/report.txt" 2>&1 ||
	{ echo "FAIL: report of the store:"; cat "$WORK/report.txt"; exit 1; }
LOST=$(sed -n 's/.*lost: \([0-9]*\).*/\1/p' "$WORK/report.txt" | head -n 1)
head -n 3 "$WORK/report.txt"
[ -n "$LOST" ] && [ "$LOST" -ge "$DROPPED" ] ||
	{ echo "FAIL: the store has ${LOST:-no} lost samples, $DROPPED were dropped"; exit 1; }
echo "ok   writes resumed by themselves; status exit 0; $DROPPED dropped stored as lost ($LOST)"
