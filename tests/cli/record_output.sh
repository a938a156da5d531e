#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# What `nmiprof record` does with its output file and exit code, as perf
# record does: an existing profile survives a recording that cannot
# start and is kept as FILE.old by one that does; a profile is created
# 0600, is readable with no samples and after kill -9; `record -- CMD`
# exits with the command's status (255 if it could not be run).
#
#   record_output.sh NMIPROF HOT FIXTURE WORKDIR
# Exits 77 (skip) when this machine cannot sample.
set -u
NMIPROF=$1 HOT=$2 FIX=$3 WORK=$4
WORK=$WORK/run.$$
mkdir -p "$WORK"
cd "$WORK" || exit 1
fail=0
bad() { echo "FAIL: $*"; fail=$((fail + 1)); }
# ok MESSAGE: printed when the section had no failure
last=0
ok() { [ $fail -eq $last ] && echo "ok   $*"; last=$fail; }

"$NMIPROF" record -o probe.nmp -- /bin/true 2>probe.err
case $? in
3|4) echo "SKIP: cannot sample here: $(cat probe.err)"; exit 77 ;;
esac

# 1. a recording that cannot start leaves the file as it was
cp "$FIX" keep.nmp
"$NMIPROF" record -p 999999 -d 1 -o keep.nmp 2>err.txt
rc=$?
[ $rc -ne 0 ] || bad "record -p 999999 exited 0"
cmp -s "$FIX" keep.nmp || bad "record -p 999999 changed keep.nmp ($(stat -c %s keep.nmp) bytes)"
[ ! -e keep.nmp.old ] || bad "a failed record made keep.nmp.old"
[ "$(ls -A | grep -c '\.tmp\.')" -eq 0 ] || bad "a failed record left a temporary file: $(ls -A)"
if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null && [ ! -e /dev/nmiprof ] &&
   [ "$(cat /proc/sys/kernel/perf_event_paranoid)" -ge 1 ]; then
	# system wide is refused to an unprivileged user at paranoid >= 1
	mkdir -p nobody && cp "$FIX" nobody/keep.nmp && chown -R 65534:65534 nobody
	pdir=$(mktemp -d /tmp/nmiprof-rec.XXXXXX) && chmod 755 "$pdir" &&
		cp "$NMIPROF" "$pdir/nmiprof" && chmod 755 "$pdir/nmiprof"
	setpriv --reuid=65534 --regid=65534 --clear-groups \
		"$pdir/nmiprof" record -a -d 1 -o nobody/keep.nmp 2>err.txt
	rc=$?
	[ $rc -ne 0 ] || bad "unprivileged system-wide record exited 0"
	cmp -s "$FIX" nobody/keep.nmp || bad "an unprivileged failed record changed the file"
	rm -rf "$pdir"
fi
ok "a record that cannot start keeps the old file"

# 2. an empty recording is a valid, empty profile
"$NMIPROF" record -o t0.nmp -- /bin/true 2>err.txt || bad "record -- /bin/true: $(cat err.txt)"
"$NMIPROF" report -i t0.nmp >out.txt 2>err.txt || bad "report of an empty profile: $(cat err.txt)"
"$NMIPROF" export -i t0.nmp -o t0.folded 2>err.txt || bad "export of an empty profile: $(cat err.txt)"
"$NMIPROF" export -i t0.nmp -f pprof -o t0.pb 2>err.txt || bad "pprof of an empty profile: $(cat err.txt)"
ok "an empty recording is readable"

"$NMIPROF" record -o - -- /bin/true 2>err.txt | "$NMIPROF" report -i - >out.txt 2>>err.txt ||
	bad "record -o - | report -i -: $(cat err.txt)"
grep -q '^# samples: 0 ' out.txt || bad "record -o - | report -i -: $(cat out.txt)"
ok "record -o - | report -i -"

# 3. the file is 0600; a replaced profile is kept as FILE.old
[ "$(stat -c %a t0.nmp)" = 600 ] || bad "profile mode $(stat -c %a t0.nmp), not 600"
"$NMIPROF" record -o keep.nmp -- /bin/true 2>err.txt || bad "record over keep.nmp: $(cat err.txt)"
cmp -s "$FIX" keep.nmp.old || bad "keep.nmp.old is not the old profile"
"$NMIPROF" report -i keep.nmp >/dev/null 2>err.txt || bad "new keep.nmp unreadable: $(cat err.txt)"
ok "0600, and the replaced profile is FILE.old"

# 4. kill -9 keeps what was recorded so far
"$NMIPROF" record -F 499 -o killed.nmp -- "$HOT" 20 >/dev/null 2>err.txt &
rpid=$!
sleep 5
kill -9 $rpid
wait $rpid 2>/dev/null
pkill -KILL -P $rpid 2>/dev/null	# hot, if it outlived us (children of our own pid only)
sleep 0.2
"$NMIPROF" report -i killed.nmp -n 5 >out.txt 2>err.txt || bad "report after kill -9: $(cat err.txt)"
grep -q 'hot_a$' out.txt || bad "nothing of the first seconds kept after kill -9: $(cat out.txt)"
ok "kill -9 after 5 s keeps the recorded seconds"

# 5. record -- CMD exits as the command did
"$NMIPROF" record -o x.nmp -- /nonexistent/cmd 2>err.txt
rc=$?
[ $rc -eq 255 ] || bad "record -- /nonexistent/cmd exited $rc, perf exits 255"
"$NMIPROF" record -o x.nmp -- sh -c 'exit 7' 2>err.txt
rc=$?
[ $rc -eq 7 ] || bad "record -- sh -c 'exit 7' exited $rc"
"$NMIPROF" record -o x.nmp -- sh -c 'exit 127' 2>err.txt
rc=$?
[ $rc -eq 127 ] || bad "record -- sh -c 'exit 127' exited $rc"
ok "record -- CMD exits with CMD's status"

# 6. the profile carries its sampling period: pprof's CPU time of a
# 1-second single-threaded run at -F 999 is about 1 s, not 10 (99 Hz)
if command -v protoc >/dev/null; then
	"$NMIPROF" record -F 999 -o f999.nmp -- "$HOT" 1 >/dev/null 2>err.txt ||
		bad "record -F 999: $(cat err.txt)"
	"$NMIPROF" export -i f999.nmp -f pprof -o f999.pb 2>err.txt ||
		bad "export -f pprof: $(cat err.txt)"
	protoc -I "$(dirname "$FIX")" --decode=perftools.profiles.Profile profile.proto \
		<f999.pb >f999.txt 2>err.txt || bad "protoc: $(cat err.txt)"
	awk '/^sample \{/ { n = 0 } /^  value:/ { if (++n == 2) ns += $2 }
		/^period:/ { p = $2 }
		END { printf "period %d ns, CPU time %.2f s\n", p, ns / 1e9
		      exit !(p == 1001001 && ns > 0.5e9 && ns < 1.5e9) }' f999.txt ||
		bad "pprof of a -F 999 profile: $(awk '/^period:/' f999.txt)"
	ok "record -F 999 -> pprof period 1001001 ns"
else
	echo "skip pprof period check: protoc not installed"
fi

[ $fail -eq 0 ] && rm -rf "$WORK"
[ $fail -eq 0 ]
