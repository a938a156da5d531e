#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# The full-screen `nmiprof top` with -s keys other than the default,
# in a detached tmux: with -s cpu,comm,sym, hot_a makes one row per CPU
# (two hot programs, one pinned to each of CPUs 0 and 1) and Enter
# expands the row under the cursor only; with -s cpu a row without
# callers or callees says so, and d and t say why they cannot zoom; a
# long object name is cut with a marker.
#
#   top_keys.sh NMIPROF HOT WORKDIR
#
# Exits 77 (skip) when tmux or taskset is missing, the machine has one
# CPU, or it cannot sample.
# shellcheck disable=SC2015
set -u
NMIPROF=$1 HOT=$2 WORK=$3/run.$$
mkdir -p "$WORK"

skip() { echo "SKIP: $*"; exit 77; }
command -v tmux >/dev/null || skip "tmux not installed"
command -v taskset >/dev/null || skip "taskset not installed"
[ "$(getconf _NPROCESSORS_ONLN)" -ge 2 ] || skip "one CPU"
[ -x "$HOT" ] || { echo "FAIL: $HOT not built"; exit 1; }
"$NMIPROF" top --once -d 1 -n 1 >"$WORK/probe.out" 2>"$WORK/probe.err"
case $? in
0) ;;
3|4) skip "no sampling backend usable: $(cat "$WORK/probe.err")" ;;
*) echo "FAIL: top --once: $(cat "$WORK/probe.err")"; exit 1 ;;
esac

# A name of their own: top samples every process, and another test's hot
# (another path, so another object) would make rows of its own.
KHOT=$WORK/topkeys_hot
cp "$HOT" "$KHOT"
taskset -c 0 "$KHOT" 60 >/dev/null 2>&1 &
HOT0=$!
taskset -c 1 "$KHOT" 60 >/dev/null 2>&1 &
HOT1=$!
cleanup() {
	tmux -L "$TMUX_SOCK" kill-server 2>/dev/null
	kill "$HOT0" "$HOT1" 2>/dev/null
	wait "$HOT0" "$HOT1" 2>/dev/null
}
TMUX_SOCK=nmiprof-top-keys-$$
trap cleanup EXIT INT TERM
# shellcheck source=tests/cli/tmux_lib.sh
. "$(dirname "$0")/tmux_lib.sh"
step() { echo "ok   $*"; }
# count REGEX: lines of the screen matching
count() { screen | grep -Ec -- "$1"; }
# until_count REGEX N: until N lines match (10 s)
until_count() {
	i=0
	until [ "$(count "$1")" -eq "$2" ]; do
		i=$((i + 1))
		[ $i -lt 50 ] || { echo "FAIL: not $2 lines /$1/:"; screen; exit 1; }
		sleep 0.2
	done
}

# A server of its own for each top: a new session on the socket of one
# just killed can meet it still exiting ("server exited unexpectedly").
n=0
start() {
	n=$((n + 1))
	TMUX_SOCK=nmiprof-top-keys-$$-$n
	if ! t -f /dev/null new-session -d -s top -x 120 -y 30 "$NMIPROF top -d 1 $*"; then
		[ $n -gt 1 ] || skip "tmux cannot start a session here"
		echo "FAIL: tmux started the first top but not top $n"
		exit 1
	fi
	wait_for '^nmiprof top  backend: ' 10
}

start -s cpu,comm,sym
keys /
keys -l hot_a
keys Enter
wait_for 'search=hot_a'
keys m
keys -l topkeys_hot
keys Enter
wait_for 'comm=topkeys_hot'
wait_for '  0  topkeys_hot  +\[\.\] hot_a$'
wait_for '  1  topkeys_hot  +\[\.\] hot_a$'
keys Home Enter
wait_for '^    callers'
until_count '^    callers' 1
sleep 1.5	# a refresh or two: still only the row under the cursor
until_count '^    callers' 1
step "-s cpu,comm,sym: a row per CPU, Enter expands one of them"
# The two rows may swap places between keys (their counts are close):
# each check follows one key press, whichever row is under the cursor.
keys C
until_count '^    callers' 0
keys E
until_count '^    callers' 2
keys Enter
until_count '^    callers' 1
step "-s cpu,comm,sym: E expands both rows, Enter collapses one of them"
t kill-server

start -s cpu
wait_for '^ +[0-9.]+% +[0-9]+ +[0-9]+    [01]$'
keys Home Enter
wait_for '^    \(no callers, no callees\)'
until_count '^    \(no callers, no callees\)' 1
step "-s cpu: Enter on a row with no callers and no callees says so"
keys d
wait_for 'rows are not per object'
keys t
wait_for 'rows are not per process'
step "-s cpu: d and t say why they cannot zoom"
keys q
t kill-server

# An object name longer than its column ends in the cut marker (..)
LONG=$WORK/hot_program_with_a_long_name
cp "$HOT" "$LONG"
"$LONG" 10 >/dev/null 2>&1 &
LPID=$!
"$NMIPROF" top --once -d 2 -s dso,sym -p "$LPID" >"$WORK/long.out" 2>&1
kill "$LPID" 2>/dev/null
wait "$LPID" 2>/dev/null
grep -Eq '  hot_program_with_a\.\.  \[\.\] hot_a$' "$WORK/long.out" ||
	{ echo "FAIL: a long object name not cut with '..':"; cat "$WORK/long.out"; exit 1; }
step "--stdio: a 28-character object name cut to 20 columns, ending in '..'"
cleanup
rm -rf "$WORK"
