#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# `nmiprof top --daemon`: rows from a private nmiprofd (its own store and
# socket under WORKDIR) while tests/progs/hot runs.  The daemon's stacks
# must give the in-process view: hot_a the top row with hot's comm and
# pid, main's children covering hot_a and hot_b, and in the full screen
# (tmux) Enter must expand hot_a's call graph with main among its
# callers, k must drop kernel frames and t (comm) must be evaluated by
# the daemon.  `status` must see the daemon.
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
"$HOT" 30 >/dev/null 2>&1 &
HPID=$!
cleanup() {
	kill "$HPID" 2>/dev/null
	kill -TERM "$DPID" 2>/dev/null
	wait "$HPID" "$DPID" 2>/dev/null
}
trap cleanup EXIT INT TERM

# shellcheck source=tests/daemon/npd_lib.sh
. "$(dirname "$0")/../daemon/npd_lib.sh"
npd_wait_socket "$SOCK" "$DPID" "$WORK/nmiprofd.log"
sleep 3		# a few seconds of hot in the daemon's live window

"$NMIPROF" top --daemon --socket "$SOCK" --window 3 --once -n 30 -p "$HPID" \
	-s comm,pid,dso,sym \
	>"$WORK/top.txt" 2>"$WORK/top.err" ||
	{ echo "FAIL: top --daemon exited $?: $(cat "$WORK/top.err")"; exit 1; }
cat "$WORK/top.txt"
head -n 1 "$WORK/top.txt" | grep -q "source: nmiprofd pid $DPID " ||
	{ echo "FAIL: header does not name the daemon"; exit 1; }
# Overhead Self Children Command Pid DSO Symbol: hot_a of hot, pid HPID
sed -n 4p "$WORK/top.txt" |
	grep -Eq "^ +[0-9.]+% +[0-9]+ +[0-9]+ +hot +$HPID +hot +\[\.\] hot_a\$" ||
	{ echo "FAIL: the top row is not hot_a of comm hot, pid $HPID"; exit 1; }
grep -Eq " hot +$HPID +hot +\[\.\] hot_b\$" "$WORK/top.txt" ||
	{ echo "FAIL: hot_b of pid $HPID missing"; exit 1; }
# Children from whole stacks: main (no self time) covers hot_a and hot_b.
awk -v pid="$HPID" '
	$4 == "hot" && $5 == pid && $NF == "hot_a" { a = $2 }
	$4 == "hot" && $5 == pid && $NF == "hot_b" { b = $2 }
	$4 == "hot" && $5 == pid && $NF == "main" { m = $3 }
	END { exit !(a > 0 && b > 0 && m >= a + b) }' "$WORK/top.txt" ||
	{ echo "FAIL: the children of main do not cover hot_a + hot_b"; exit 1; }
echo "ok   top --daemon --once: hot_a first with comm and pid, main's children"

# The full screen against the daemon: call graph, frame toggle, comm filter.
if command -v tmux >/dev/null; then
	TMUX_SOCK=nmiprof-topd-test-$$
	# shellcheck source=tests/cli/tmux_lib.sh
	. "$(dirname "$0")/tmux_lib.sh"
	cleanup() {
		tmux -L "$TMUX_SOCK" kill-server 2>/dev/null
		kill "$HPID" 2>/dev/null
		kill -TERM "$DPID" 2>/dev/null
		wait "$HPID" "$DPID" 2>/dev/null
	}
	t -f /dev/null new-session -d -s top -x 160 -y 40 \
		"$NMIPROF top --daemon --socket $SOCK --window 3 -d 1 -p $HPID -s comm,pid,dso,sym; echo \"EXITED \$?\"; sleep 60" ||
		{ echo "FAIL: tmux cannot start a session"; exit 1; }
	wait_for '^nmiprof top  source: nmiprofd'
	wait_for " hot +$HPID +hot +\[\.\] hot_a"
	keys Home Enter
	wait_for 'callers'
	# main calls hot_a: listed under the expanded row's callers (the
	# lines between the "callers" and "callees" titles)
	i=0
	until awk '/callers/ { c = 1; next } /callees/ { c = 0 }
		c && /\[\.\] main/ { f = 1 } END { exit !f }' "$WORK/screen.txt"; do
		i=$((i + 1))
		[ $i -lt 25 ] || { echo "FAIL: main is not among the callers of hot_a:";
			cat "$WORK/screen.txt"; exit 1; }
		sleep 0.2
		screen >"$WORK/screen.txt"
	done
	echo "ok   top --daemon full screen: Enter expands hot_a, callers include main"
	keys Enter k
	wait_for 'frames: user'
	if grep -q '\[k\]' "$WORK/screen.txt"; then
		sleep 1.5
		screen >"$WORK/screen.txt"
		grep -q '\[k\]' "$WORK/screen.txt" &&
			{ echo "FAIL: k left kernel frames:"; cat "$WORK/screen.txt"; exit 1; }
	fi
	keys k m
	wait_for '^comm \(empty: all\):'
	keys -l nosuchcomm
	keys Enter
	wait_for 'comm=nosuchcomm'
	wait_for '\(no rows match'
	keys m Enter
	wait_for " hot +$HPID +hot +\[\.\] hot_a"
	echo "ok   top --daemon full screen: k drops kernel frames, m filters by comm"
	keys q
	wait_for '^EXITED 0'
	echo "ok   top --daemon full screen: q quits with status 0"
else
	echo "note: tmux not installed: the full-screen part is not run"
fi

"$NMIPROF" status --socket "$SOCK" >"$WORK/status.txt" 2>&1 ||
	{ echo "FAIL: status"; cat "$WORK/status.txt"; exit 1; }
grep -q "^daemon:   nmiprofd .* pid $DPID," "$WORK/status.txt" ||
	{ echo "FAIL: status does not show the daemon:"; cat "$WORK/status.txt"; exit 1; }
echo "ok   top --daemon and status through the control socket"
cleanup

# SIGTERM flushed the slice: offline status must count every store file,
# the stack dictionaries of format v4 as well as the segments.
"$NMIPROF" status --socket "$WORK/none.sock" --store "$WORK/store" \
	>"$WORK/status-offline.txt" 2>&1
on_disk=$(find "$WORK/store/profile" -type f \( -name 'seg-*.nps' -o -name 'dict-*.npd' \) \
	-printf '%s\n' | awk '{ s += $1 } END { print s + 0 }')
grep -Eq "^store: .*[0-9]+ segment\(s\), [0-9]+ dictionar(y|ies), $on_disk bytes" \
	"$WORK/status-offline.txt" ||
	{ echo "FAIL: offline status does not report the $on_disk bytes on disk:"
	  cat "$WORK/status-offline.txt"; ls -l "$WORK/store/profile"; exit 1; }
echo "ok   offline status counts segments and dictionaries ($on_disk bytes)"
rm -rf "$WORK"	# kept only when a check failed
