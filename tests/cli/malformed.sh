#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# Malformed input and bad command lines: every failure is exactly one
# line on stderr starting "nmiprof: CMD: ", with the documented exit
# code, and never a crash (a signal would show as exit >= 128).
#
#   malformed.sh NMIPROF FIXTURE WORKDIR
# "A && B || fail" is meant: fail when either A or B fails.
# shellcheck disable=SC2015
set -u
NMIPROF=$1 FIX=$2 WORK=$3
fail=0
mkdir -p "$WORK"
cd "$WORK" || exit 1

size=$(stat -c %s "$FIX")
: >empty.nmp
printf 'hello, world\n' >text.nmp
head -c 4096 /dev/zero >zeros.nmp
printf 'NMIPSEG\n' >magic-only.nmp
head -c 50 "$FIX" >trunc-header.nmp
head -c 200 "$FIX" >trunc-payload.nmp
# the fixture's first segment with a flipped payload byte, nothing after
head -c 289 "$FIX" >bad-crc.nmp
printf '\377' | dd of=bad-crc.nmp bs=1 seek=150 conv=notrunc 2>/dev/null
mkdir -p adir

# expect EXIT "CMD" ARGS...: exit code EXIT, one stderr line for CMD
expect() {
	want=$1 cmd=$2
	shift 2
	case $1 in
	setpriv) "$@" >out.txt 2>err.txt ;;
	*) "$NMIPROF" "$@" >out.txt 2>err.txt ;;
	esac
	rc=$?
	lines=$(wc -l <err.txt)
	if [ $rc -ge 128 ]; then
		echo "FAIL (crash, exit $rc): nmiprof $*"; fail=1
	elif [ $rc -ne "$want" ]; then
		echo "FAIL (exit $rc, want $want): nmiprof $*: $(cat err.txt)"; fail=1
	elif [ "$lines" -ne 1 ] || ! grep -q "^nmiprof: $cmd: " err.txt; then
		echo "FAIL (stderr not one 'nmiprof: $cmd:' line): nmiprof $*:"
		cat err.txt; fail=1
	else
		echo "ok   $want  nmiprof $*: $(cat err.txt)"
	fi
}

for f in missing.nmp empty.nmp text.nmp zeros.nmp magic-only.nmp \
	 trunc-header.nmp trunc-payload.nmp bad-crc.nmp adir; do
	expect 5 report report -i "$f"
	expect 5 export export -i "$f" --format folded
	expect 5 export export -i "$f" --format pprof -o out.pb
	expect 5 export export -i "$f" --format svg
done
# bad input must not leave a half-written output behind
[ -e out.pb ] && { echo "FAIL: export left out.pb after an error"; fail=1; }

# A damaged tail: what is readable is reported, with one warning line.
head -c $((size - 1)) "$FIX" >trunc-tail.nmp
"$NMIPROF" report -i trunc-tail.nmp >out.txt 2>err.txt
rc=$?
if [ $rc -ne 0 ] || [ "$(wc -l <err.txt)" -ne 1 ] || ! grep -q warning err.txt ||
   ! grep -q compute out.txt; then
	echo "FAIL: damaged tail: exit $rc: $(cat err.txt)"; fail=1
else
	echo "ok   0  damaged tail keeps the first segment: $(cat err.txt)"
fi

expect 1 report report --bogus
expect 1 report report -i
expect 1 report report -i "$FIX" --since 1h
expect 1 report report --since yesterday-ish
expect 1 report report -i "$FIX" --sort nonsense
expect 1 report report -i "$FIX" --percent-limit 200
expect 1 report report -i "$FIX" --pid abc
expect 1 report report -i "$FIX" stray
expect 1 export export -i "$FIX" --format png
expect 1 export export -i "$FIX" --freq 0
expect 1 top top --delay 0 --once
expect 1 top top -F 0 --once
expect 1 top top --backend nope --once
expect 1 record record -F 99
expect 1 record record -o x.nmp -p 1 -- true
# a process or CPU that is not there, conflicting flags: usage errors
expect 1 record record -p 999999 -d 1 -o x.nmp
expect 1 record record -C 0-a -d 1 -o x.nmp
expect 1 record record -C 1023 -d 1 -o x.nmp
expect 1 top top -p 999999 --once
expect 1 top top -C 1023 --once
expect 1 top top --kernel --user --once
expect 1 report report -i "$FIX" -K -U
expect 1 export export -i "$FIX" --user --kernel
expect 1 report report --since 1h --until 2h
expect 1 export export --since 1h --until 2h
[ ! -e x.nmp ] || { echo "FAIL: a record that failed left x.nmp"; fail=1; }
expect 1 lockups lockups show
expect 1 lockups lockups frobnicate
expect 5 lockups lockups --store "$WORK" show no-such-lockup
# a store that is not there is an error, not "no lockups recorded"
expect 5 lockups lockups --store "$WORK/no-such-store" list
expect 5 lockups lockups --store "$WORK/no-such-store"
expect 5 lockups lockups --store "$WORK/no-such-store" show x
expect 5 lockups lockups --store "$FIX" list
expect 1 status status --bogus
expect 2 top top --daemon --socket "$WORK/no-such.sock" --once
expect 1 top top --daemon -F 99 --once
expect 1 top top --window 5 --once
"$NMIPROF" nosuchcmd >/dev/null 2>err.txt
[ $? -eq 1 ] && [ "$(wc -l <err.txt)" -eq 1 ] || { echo "FAIL: unknown command"; fail=1; }
"$NMIPROF" lockups --store "$WORK" list >out.txt 2>err.txt ||
	{ echo "FAIL: lockups list on an empty store: $(cat err.txt)"; fail=1; }

# No permission to sample: exit 3, one line (the symbolizer's warning
# must not come first).  Needs root to drop to nobody, and a paranoid
# setting that refuses unprivileged system-wide sampling.
paranoid=$(cat /proc/sys/kernel/perf_event_paranoid 2>/dev/null || echo -1)
if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null && [ "$paranoid" -ge 0 ] &&
   [ ! -e /dev/nmiprof ]; then
	# a copy nobody can reach, whatever the build tree's modes
	pdir=$(mktemp -d /tmp/nmiprof-perm.XXXXXX) && chmod 755 "$pdir" &&
	cp "$NMIPROF" "$pdir/nmiprof" && chmod 755 "$pdir/nmiprof"
	expect 3 top setpriv --reuid=65534 --regid=65534 --clear-groups \
		"$pdir/nmiprof" top --once -d 1
	expect 3 record setpriv --reuid=65534 --regid=65534 --clear-groups \
		"$pdir/nmiprof" record -o /dev/null -d 1
	rm -rf "$pdir"
else
	echo "skip permission check (needs root, setpriv, perf_event_paranoid >= 0, no /dev/nmiprof)"
fi

# Every command has --help, 'help CMD' and a man page.
MAN=$(dirname "$FIX")/../../docs/man
for c in top record report export lockups status; do
	"$NMIPROF" "$c" --help >out.txt 2>err.txt && grep -q "^Usage: nmiprof $c" out.txt &&
		[ ! -s err.txt ] || { echo "FAIL: nmiprof $c --help"; fail=1; }
	"$NMIPROF" help "$c" | cmp -s - out.txt || { echo "FAIL: nmiprof help $c"; fail=1; }
	[ -f "$MAN/nmiprof-$c.1" ] || { echo "FAIL: no man page nmiprof-$c.1"; fail=1; }
done
"$NMIPROF" help | grep -q '^  5  bad input' || { echo "FAIL: help lacks exit codes"; fail=1; }
"$NMIPROF" --version | grep -Eq '^nmiprof [0-9]+\.[0-9]+' || { echo "FAIL: --version"; fail=1; }
grep -q '^\.SH EXIT STATUS' "$MAN/nmiprof.1" || { echo "FAIL: nmiprof.1 lacks EXIT STATUS"; fail=1; }
[ $fail -eq 0 ] && echo "ok   --help, help CMD, man pages, --version"
exit $fail
