#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# Drives the full-screen `nmiprof top` in a detached tmux against the
# hot workload (tests/progs/hot: hot_a ~75%, hot_b ~25% of its CPU) and
# checks what is on screen after each key: pid filter, hot function at
# the top, only rows with self samples in the self sort, sort cycling,
# help screen, search, call-graph expansion (one row and all), kernel-frame
# toggle, comm and CPU filters, zoom into an object and a process, decay,
# pause, terminal resize (and columns narrowed to 80), zero, quit.
#
#   top_tmux.sh NMIPROF HOT WORKDIR
#
# Exits 77 (skip) when tmux is missing or this machine cannot sample.
# "A && B || fail" is meant: fail when either A or B fails.
# shellcheck disable=SC2015
set -u
NMIPROF=$1 HOT=$2 WORK=$3
SOCK=nmiprof-top-test-$$
# one directory per run: two runs of this test must not share files
WORK=$WORK/run.$$
mkdir -p "$WORK"

skip() { echo "SKIP: $*"; exit 77; }
command -v tmux >/dev/null || skip "tmux not installed"
[ -x "$HOT" ] || { echo "FAIL: $HOT not built"; exit 1; }

# Can this machine sample at all?  Our own probe decides; perf's view is
# printed for comparison (-B -N: perf's build-id post-processing has been
# seen to abort on unrelated binaries, which says nothing about sampling).
if command -v perf >/dev/null; then
	if perf record -B -N -a -g -o "$WORK/perf.data" -- sleep 1 >"$WORK/perf.log" 2>&1; then
		echo "note: perf record -a -g samples here"
	else
		echo "note: perf record -a -g fails here: $(tail -n 1 "$WORK/perf.log")"
	fi
fi
"$NMIPROF" top --once -d 1 -n 1 >"$WORK/probe.out" 2>"$WORK/probe.err"
rc=$?
case $rc in
0) ;;
3|4) skip "no sampling backend usable: $(cat "$WORK/probe.err")" ;;
*) echo "FAIL: top --once exited $rc: $(cat "$WORK/probe.err")"; exit 1 ;;
esac
grep -q '^# nmiprof top  backend: .*samples: [1-9]' "$WORK/probe.out" ||
	{ echo "FAIL: top --once took no samples:"; cat "$WORK/probe.out"; exit 1; }

"$HOT" 120 >/dev/null 2>&1 &
HOTPID=$!
TOPPID=
cleanup() {
	# top itself first: a server torn down under it must not orphan it
	[ -n "$TOPPID" ] && kill "$TOPPID" 2>/dev/null
	tmux -L "$SOCK" kill-server 2>/dev/null
	kill "$HOTPID" 2>/dev/null
	wait "$HOTPID" 2>/dev/null
}
trap cleanup EXIT INT TERM

TMUX_SOCK=$SOCK
# shellcheck source=tests/cli/tmux_lib.sh
. "$(dirname "$0")/tmux_lib.sh"
# wait_for_line N REGEX: until line N of the screen matches
wait_for_line() {
	i=0
	while [ $i -lt 75 ]; do
		screen >"$WORK/screen.txt" 2>/dev/null
		sed -n "$1p" "$WORK/screen.txt" | grep -Eq -- "$2" && return 0
		sleep 0.2
		i=$((i + 1))
	done
	echo "FAIL: waited for line $1 to match /$2/; screen was:"
	cat "$WORK/screen.txt"
	exit 1
}
step() { echo "ok   $*"; }
# until_screen WHAT CONDITION: until the shell CONDITION holds (10 s)
until_screen() {
	i=0
	until eval "$2"; do
		i=$((i + 1))
		[ $i -lt 50 ] || { echo "FAIL: $1; screen was:"; screen; exit 1; }
		sleep 0.2
	done
}

# The pane's shell reports top's exit status on screen.  (remain-on-exit
# and #{pane_dead_status} would be neater, but tmux 3.3a was seen leaving
# the exited top unreaped there, with no status.)
t -f /dev/null new-session -d -s top -x 160 -y 40 \
	"$NMIPROF top -d 1; echo \"EXITED \$?\"; sleep 60" ||
	skip "tmux cannot start a session here"
SHPID=$(t display-message -p -t top '#{pane_pid}')
i=0
until TOPPID=$(pgrep -P "$SHPID" -x nmiprof); do
	i=$((i + 1))
	[ $i -lt 50 ] || { echo "FAIL: top did not start in the pane"; exit 1; }
	sleep 0.1
done
wait_for '^nmiprof top  backend: ' 10
step "full screen up: $(head -n 1 "$WORK/screen.txt")"

keys p
wait_for '^pid \(empty: all\):'
keys -l "$HOTPID"
keys Enter
wait_for "filter: pid=$HOTPID"
wait_for '\[\.\] hot_a'
wait_for '\[\.\] hot_b'
# Once a few dozen samples are in, the hottest row (line 4, under two
# header lines and the column titles) is hot_a (~75% vs hot_b's ~25%).
wait_for_line 4 '\[\.\] hot_a'
step "pid filter: hot_a on the top row, hot_b listed"
# main, __libc_start_call_main, _start: children only, never self
if grep -Eq '^ +[0-9.]+%  +0  ' "$WORK/screen.txt"; then
	echo "FAIL: the self sort lists rows with 0 self samples:"
	cat "$WORK/screen.txt"; exit 1
fi
step "self sort: no row with 0 self samples"

keys s
wait_for 'sort: children'
wait_for '\[\.\] main'
keys s
wait_for 'sort: comm'
keys s s
wait_for 'sort: symbol'
keys s
wait_for 'sort: pid'
keys s
wait_for 'sort: self'
step "s cycles children (callers listed), comm, dso, symbol, pid, self"

keys h
wait_for '^nmiprof top: keys'
keys x
wait_for '^nmiprof top  backend: '
step "h shows help, any key returns"

keys /
wait_for '^search symbols'
keys -l hot_b
keys Enter
wait_for 'search=hot_b'
if grep -q '\[\.\] hot_a' "$WORK/screen.txt"; then
	echo "FAIL: search for hot_b still shows hot_a"; cat "$WORK/screen.txt"; exit 1
fi
grep -q '\[\.\] hot_b' "$WORK/screen.txt" || wait_for '\[\.\] hot_b'
keys /
keys -l zzz_no_such_symbol
keys Enter
wait_for 'no rows match'
grep -q 'no samples yet' "$WORK/screen.txt" &&
	{ echo "FAIL: 'no samples yet' with samples"; cat "$WORK/screen.txt"; exit 1; }
keys /
keys Enter
wait_for '\[\.\] hot_a'
step "/ search narrows to hot_b, to nothing ('no rows match'), empty restores"

# user frames only: hot_a, a leaf, has callers and no callees
keys k
wait_for 'frames: user'
keys Home Enter
wait_for 'callers'
wait_for '\[\.\] main'
if grep -q '^    callees:' "$WORK/screen.txt"; then
	echo "FAIL: an empty callees heading under hot_a"; cat "$WORK/screen.txt"; exit 1
fi
step "Enter expands hot_a: callers include main, no empty callees heading"
keys Enter
keys k
wait_for 'frames: kernel\+user'

keys E
until_screen "E expanded fewer than 2 rows" \
	'[ "$(screen | grep -c "^    callers")" -ge 2 ]'
keys C
until_screen "C left rows expanded" '! screen | grep -q "^    callers"'
step "E expands every row, C collapses them"

keys k
wait_for 'frames: user'
keys k
wait_for 'frames: kernel\+user'
step "k toggles kernel frames"

keys m
wait_for '^comm \(empty: all\):'
keys -l hot
keys Enter
wait_for 'comm=hot'
wait_for '\[\.\] hot_a'
keys m Enter
keys c
wait_for '^CPU \(empty: all\):'
keys -l 4095
keys Enter
wait_for 'cpu=4095'
wait_for '\(no rows match'
keys c Enter
wait_for '\[\.\] hot_a'
step "m filters by comm, c by CPU (an idle CPU id: 'no rows match')"

# d: zoom into hot_a's object (the hot binary), every row listed is its
keys Home
wait_for_line 4 '\[\.\] hot_a'
keys d
wait_for 'dso=hot( |$)'
if sed -n '4,39p' "$WORK/screen.txt" | grep -E '%  ' | grep -Ev ' hot +\[' >/dev/null; then
	echo "FAIL: zoomed into hot, rows of other objects listed:"
	cat "$WORK/screen.txt"; exit 1
fi
keys d
until_screen "d did not zoom out" '! screen | grep -q "dso=hot"'
step "d zooms into the row's object and out again"

# t: zoom into hot_a's process, from a view of every process
keys p Enter
keys /
keys -l hot_a
keys Enter
wait_for 'search=hot_a'
wait_for_line 4 '\[\.\] hot_a'
grep -q "pid=" "$WORK/screen.txt" && { echo "FAIL: pid filter not cleared"; cat "$WORK/screen.txt"; exit 1; }
# other tests may run hot programs too: the zoom is into whichever hot_a
# row is on top when t arrives, and lists that process's rows only
keys Home t
wait_for 'filter: pid=[0-9]+ '
ZPID=$(sed -n 2p "$WORK/screen.txt" | sed 's/.*filter: pid=\([0-9]*\).*/\1/')
if sed -n '4,39p' "$WORK/screen.txt" | grep -E '%  ' | awk -v p="$ZPID" '$5 != p' | grep -q .; then
	echo "FAIL: zoomed into pid $ZPID, other processes listed:"
	cat "$WORK/screen.txt"; exit 1
fi
keys t
until_screen "t did not zoom out" '! screen | grep -q "pid=$ZPID"'
keys / Enter p
wait_for '^pid \(empty: all\):'
keys -l "$HOTPID"
keys Enter
wait_for "filter: pid=$HOTPID\$"
step "t zooms into the row's process and out again"

keys D
wait_for 'decay: off'
keys D
wait_for 'decay: on'
keys P
wait_for '\[PAUSED\]'
keys P
step "D toggles decay, P pauses"

t resize-window -t top -x 90 -y 16 2>/dev/null ||
	t resize-pane -t top -x 90 -y 16
# Laid out again for 16 lines: the key hint moves to the new last line
# (a top that ignored KEY_RESIZE would leave a table row there).
# All checked on one capture: header, column titles, hint on line 16.
i=0
while :; do
	screen >"$WORK/screen.txt"
	[ "$(wc -l <"$WORK/screen.txt")" -le 16 ] &&
		sed -n 16p "$WORK/screen.txt" | grep -q '^h help  q quit' &&
		sed -n 1p "$WORK/screen.txt" | grep -q '^nmiprof top  backend: ' &&
		sed -n 3p "$WORK/screen.txt" | grep -q '^Overhead' && break
	i=$((i + 1))
	[ $i -lt 50 ] || { echo "FAIL: not redrawn for 90x16:"; cat "$WORK/screen.txt"; exit 1; }
	sleep 0.2
done
step "resize to 90x16: laid out again for the new size"

# 80 columns: comm, pid and object narrow (cut with '..') so that the
# symbol still shows; at fixed widths it started at column 79.
t resize-window -t top -x 80 -y 24 2>/dev/null ||
	t resize-pane -t top -x 80 -y 24
wait_for_line 4 '^ +[0-9.]+% +[0-9]+ +[0-9]+  hot +[0-9]+  hot +\[\.\] hot_a$'
if awk 'length($0) > 80' "$WORK/screen.txt" | grep -q .; then
	echo "FAIL: a line wider than 80 columns:"; cat "$WORK/screen.txt"; exit 1
fi
sed -n 3p "$WORK/screen.txt" | grep -q '  Symbol' ||
	{ echo "FAIL: no Symbol title at 80 columns:"; cat "$WORK/screen.txt"; exit 1; }
step "80 columns: [.] hot_a shown whole, columns narrowed"

keys z
wait_for 'zeroed'
step "z zeroes"

keys q
wait_for '^EXITED 0' 10
kill -0 "$TOPPID" 2>/dev/null && { echo "FAIL: top still running after q"; exit 1; }
TOPPID=
step "q quits with status 0"
cleanup
rm -rf "$WORK"	# kept only when a check failed
