#!/bin/sh
# An ordinary user at perf_event_paranoid=2 (Debian's default) profiles
# their own command and process, as `perf record -g` lets them (issue 15,
# item 7): record -- CMD, record -p and top -p, kernel frames left out,
# said in one line.  Runs as nobody (setpriv); the sysctl is restored.
# usage: unprivileged.sh NMIPROF HOT WORKDIR
NMIPROF=$1 HOT=$2 WORK=$3
[ "$(id -u)" = 0 ] && command -v setpriv >/dev/null && [ ! -e /dev/nmiprof ] ||
	{ echo "SKIP: needs root, setpriv and no /dev/nmiprof"; exit 77; }
old=$(cat /proc/sys/kernel/perf_event_paranoid)
echo 2 >/proc/sys/kernel/perf_event_paranoid 2>/dev/null ||
	{ echo "SKIP: cannot set perf_event_paranoid"; exit 77; }
pdir=$(mktemp -d /tmp/nmiprof-unpriv.XXXXXX)
pid=
cleanup() {
	[ -n "$pid" ] && kill "$pid" 2>/dev/null
	echo "$old" >/proc/sys/kernel/perf_event_paranoid
	rm -rf "$pdir"
}
trap cleanup EXIT
trap 'exit 1' INT TERM
rm -rf "$WORK" && mkdir -p "$WORK" && cd "$WORK" || exit 1
# copies nobody can reach, whatever the build tree's modes
cp "$NMIPROF" "$pdir/nmiprof" && cp "$HOT" "$pdir/hot" && chmod 755 "$pdir"/* &&
	chmod 777 "$pdir" || exit 1
fail=0
bad() { echo "FAIL: $*"; fail=1; }
# the unwind cache and HOME of the user, not root's
as_user() {
	setpriv --reuid=65534 --regid=65534 --clear-groups \
		env HOME="$pdir" NMIPROF_UNWIND_CACHE="$pdir/cache" "$@"
}
one_note() {	# $1: stderr file, $2: what ran
	n=$(grep -c "note: kernel frames left out: perf_event_paranoid" "$1")
	[ "$n" = 1 ] || bad "$2: not one line saying kernel frames are left out: $(cat "$1")"
	[ "$(grep -c -v "^nmiprof record: [0-9]* samples" "$1")" -le 1 ] ||
		bad "$2: more than that one line: $(cat "$1")"
}

as_user "$pdir/nmiprof" record -F 499 -o "$pdir/cmd.nmp" -- "$pdir/hot" 1 \
	>out.txt 2>err.txt
rc=$?
[ $rc -eq 0 ] || bad "record -- CMD as nobody exited $rc: $(cat err.txt)"
one_note err.txt "record -- CMD"
"$NMIPROF" report -i "$pdir/cmd.nmp" >rep.txt 2>&1 && grep -q "hot_a" rep.txt ||
	bad "record -- CMD as nobody: hot_a not in the report: $(head -12 rep.txt)"
! grep -q "\[k\]" rep.txt || bad "record -- CMD as nobody has kernel frames"

# not through as_user: $! would be the subshell running it, root's
setpriv --reuid=65534 --regid=65534 --clear-groups "$pdir/hot" 30 >/dev/null &
pid=$!
sleep 0.3
as_user "$pdir/nmiprof" record -F 499 -d 1 -p "$pid" -o "$pdir/pid.nmp" \
	>out.txt 2>err.txt
rc=$?
[ $rc -eq 0 ] || bad "record -p own process as nobody exited $rc: $(cat err.txt)"
one_note err.txt "record -p"
"$NMIPROF" report -i "$pdir/pid.nmp" >rep.txt 2>&1 && grep -q "hot_a" rep.txt ||
	bad "record -p as nobody: hot_a not in the report: $(head -12 rep.txt)"

as_user "$pdir/nmiprof" top --once -d 1 -F 499 -p "$pid" >out.txt 2>err.txt
rc=$?
[ $rc -eq 0 ] || bad "top -p own process as nobody exited $rc: $(cat err.txt)"
one_note err.txt "top -p"
grep -q "hot_a" out.txt || bad "top -p as nobody: no hot_a: $(head -12 out.txt)"

# another user's process stays refused, with the permission exit code
as_user "$pdir/nmiprof" record -d 1 -p $$ -o "$pdir/other.nmp" >out.txt 2>err.txt
rc=$?
[ $rc -eq 3 ] || bad "record -p of root's process as nobody exited $rc, want 3"

[ $fail -eq 0 ] && echo "ok: an ordinary user records their own command and process"
exit $fail
