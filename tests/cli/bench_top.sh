#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# What a full-screen top costs the machine: `nmiprof top` and `perf top`
# (both with call graphs at -F HZ, system wide, the same refresh period),
# each run for SECS in its own tmux terminal, one after the other; prints
# the CPU seconds each used (utime + stime from /proc) and the ratio.
# A figure, not an assertion.
#
#   bench_top.sh NMIPROF [SECS] [HZ]
set -u
NMIPROF=$1 SECS=${2:-6} HZ=${3:-999}
SOCK=nmiprof-bench-top-$$
command -v tmux >/dev/null || { echo "SKIP: tmux not installed"; exit 77; }
command -v perf >/dev/null || { echo "SKIP: perf not installed"; exit 77; }
trap 'tmux -L "$SOCK" kill-server >/dev/null 2>&1' EXIT INT TERM
TCK=$(getconf CLK_TCK)

# run NAME CMD...: CPU seconds CMD used in SECS seconds of a 160x50 tty
run() {
	name=$1
	shift
	tmux -L "$SOCK" new-session -d -s "$name" -x 160 -y 50 "exec $*" || return 1
	pid=$(tmux -L "$SOCK" list-panes -t "$name" -F '#{pane_pid}')
	sleep "$SECS"
	# fields 14 and 15 of /proc/PID/stat: utime, stime (after "(comm) ")
	ticks=$(sed 's/^.*) //' "/proc/$pid/stat" | awk '{ print $12 + $13 }')
	tmux -L "$SOCK" kill-session -t "$name"
	echo "$ticks"
}

n=$(run nmiprof "$NMIPROF" top -F "$HZ" -d 2) || { echo "SKIP: tmux failed"; exit 77; }
p=$(run perf perf top -F "$HZ" -g -d 2) || { echo "SKIP: tmux failed"; exit 77; }
awk -v n="$n" -v p="$p" -v t="$TCK" -v s="$SECS" -v hz="$HZ" 'BEGIN {
	printf "top for %ds at %d Hz per CPU, system wide, call graphs:\n", s, hz
	printf "  nmiprof top: %.2f s CPU (%.1f%% of one CPU)\n", n / t, 100 * n / t / s
	printf "  perf top:    %.2f s CPU (%.1f%% of one CPU)\n", p / t, 100 * p / t / s
	if (p > 0) printf "  ratio nmiprof/perf: %.2f\n", n / p
}'
