#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# `nmiprof top --daemon`: rows from a private nmiprofd (its own store and
# socket under WORKDIR) while tests/progs/hot runs; hot_a must be the top
# row of hot's pid, and `status` must see the daemon.
#
#   top_daemon.sh NMIPROF NMIPROFD HOT WORKDIR
# Exits 77 (skip) when the daemon cannot sample on this machine.
set -u
NMIPROF=$1 NMIPROFD=$2 HOT=$3 WORK=$4
# one directory per run: two runs of this test must not share files
WORK=$WORK/run.$$
mkdir -p "$WORK"
SOCK=$WORK/nmiprofd.sock

"$NMIPROFD" -c /dev/null -s "$WORK/store" -S "$SOCK" -b libperf -F 199 \
	>"$WORK/nmiprofd.log" 2>&1 &
DPID=$!
"$HOT" 8 >/dev/null 2>&1 &
HPID=$!
cleanup() {
	kill "$HPID" 2>/dev/null
	kill -TERM "$DPID" 2>/dev/null
	wait "$HPID" "$DPID" 2>/dev/null
}
trap cleanup EXIT INT TERM

i=0
until [ -S "$SOCK" ]; do
	if ! kill -0 "$DPID" 2>/dev/null; then
		if grep -Eq 'Permission denied|not supported|No such device' "$WORK/nmiprofd.log"; then
			echo "SKIP: nmiprofd cannot sample here: $(tail -n 1 "$WORK/nmiprofd.log")"
			exit 77
		fi
		echo "FAIL: nmiprofd exited:"; cat "$WORK/nmiprofd.log"; exit 1
	fi
	i=$((i + 1))
	[ $i -lt 50 ] || { echo "FAIL: no socket after 10 s"; cat "$WORK/nmiprofd.log"; exit 1; }
	sleep 0.2
done
sleep 3		# a few seconds of hot in the daemon's live window

"$NMIPROF" top --daemon --socket "$SOCK" --window 3 --once -n 5 -p "$HPID" \
	>"$WORK/top.txt" 2>"$WORK/top.err" ||
	{ echo "FAIL: top --daemon exited $?: $(cat "$WORK/top.err")"; exit 1; }
cat "$WORK/top.txt"
head -n 1 "$WORK/top.txt" | grep -q "source: nmiprofd pid $DPID " ||
	{ echo "FAIL: header does not name the daemon"; exit 1; }
sed -n 4p "$WORK/top.txt" | grep -q '\[\.\] hot_a$' ||
	{ echo "FAIL: hot_a is not the top row"; exit 1; }
grep -q '\[\.\] hot_b$' "$WORK/top.txt" || { echo "FAIL: hot_b missing"; exit 1; }

"$NMIPROF" status --socket "$SOCK" >"$WORK/status.txt" 2>&1 ||
	{ echo "FAIL: status"; cat "$WORK/status.txt"; exit 1; }
grep -q "^daemon:   nmiprofd .* pid $DPID," "$WORK/status.txt" ||
	{ echo "FAIL: status does not show the daemon:"; cat "$WORK/status.txt"; exit 1; }
echo "ok   top --daemon and status through the control socket"
cleanup
rm -rf "$WORK"	# kept only when a check failed
