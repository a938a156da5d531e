#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# perf's -m/--mmap-pages on record and top (issue 15, item 8): bad sizes
# are usage errors; the kmod backend refuses it; the perf backend maps
# rings of exactly that size (seen in /proc/PID/maps); and a recording
# whose rings overflow (1 page at 20 kHz) ends with a warning that
# gives the losses, the ring size and a bigger -m.
#
#   mmap_pages.sh NMIPROF HOT WORKDIR
# Exits 77 (skip) when this machine cannot sample.
set -u
NMIPROF=$1 HOT=$2 WORK=$3
WORK=$WORK/run.$$
mkdir -p "$WORK"
cd "$WORK" || exit 1
fail=0
bad() { echo "FAIL: $*"; fail=$((fail + 1)); }

for m in 3 0 abc 16X 2G; do
	"$NMIPROF" record -m $m -o x.nmp -d 1 >out.txt 2>err.txt
	rc=$?
	[ $rc = 1 ] && grep -q "bad -m/--mmap-pages '$m'" err.txt ||
		bad "record -m $m: exit $rc, $(cat err.txt)"
	"$NMIPROF" top --once -m $m >out.txt 2>err.txt
	rc=$?
	[ $rc = 1 ] && grep -q "bad -m/--mmap-pages '$m'" err.txt ||
		bad "top -m $m: exit $rc, $(cat err.txt)"
done
"$NMIPROF" record --backend kmod -m 16 -o x.nmp -- /bin/true >out.txt 2>err.txt
rc=$?
[ $rc = 1 ] && grep -q 'nmiprof.ko sizes its own when loaded: modprobe nmiprof ring_kb=' err.txt ||
	bad "record --backend kmod -m 16: exit $rc, $(cat err.txt)"
"$NMIPROF" top --once --backend kmod -m 16 >out.txt 2>err.txt
rc=$?
[ $rc = 1 ] && grep -q 'ring_kb=' err.txt || bad "top --backend kmod -m 16: exit $rc, $(cat err.txt)"
"$NMIPROF" top --daemon --once -m 16 >out.txt 2>err.txt
rc=$?
[ $rc = 1 ] && grep -q -- '-m and --backend configure a local' err.txt ||
	bad "top --daemon -m 16: exit $rc, $(cat err.txt)"
[ $fail -eq 0 ] && echo "ok   bad sizes, the kmod backend and --daemon refuse -m (exit 1)"

# The size asked for is the size mapped: 512K is 128 data pages + 1.
# The maps are read once the rings are there (a slow start, under ASan on
# a loaded machine, took over the 1.5 s once waited here).
"$NMIPROF" record --backend perf -a -m 512K -d 4 -o ring.nmp >out.txt 2>err.txt &
RPID=$!
i=0
SIZES=
while [ -z "$SIZES" ] && [ $i -lt 35 ] && kill -0 $RPID 2>/dev/null; do
	sleep 0.1
	i=$((i + 1))
	SIZES=$(grep perf_event "/proc/$RPID/maps" 2>/dev/null | cut -d' ' -f1 |
		while IFS=- read -r lo hi; do echo $(((0x$hi - 0x$lo) / 4096)); done |
		sort -u | tr '\n' ' ')
done
wait $RPID
rc=$?
case $rc in
0) ;;
3|4) echo "SKIP: cannot sample here: $(cat err.txt)"; exit 77 ;;
*) bad "record -m 512K exited $rc: $(cat err.txt)" ;;
esac
echo "ring mappings of record -a -m 512K (pages): $SIZES"
echo " $SIZES" | grep -q ' 129 ' || bad "no ring of 128 data pages mapped"
"$NMIPROF" record --backend perf -m 2 -o x.nmp -- "$HOT" 1 >out.txt 2>err.txt
rc=$?
[ $rc = 1 ] && grep -q 'cannot hold one sample with its 8192-byte user stack copy: at least 4 pages' err.txt ||
	bad "record -m 2 of a command (stack copies): exit $rc, $(cat err.txt)"
[ $fail -eq 0 ] && echo "ok   -m 512K maps 128 data pages; a ring too small for a sample is refused"

# Rings that overflow: perf's "lost chunks" warning, with the cure.
"$NMIPROF" record --backend perf -a -m 1 -F 20000 -d 2 -o lost.nmp >out.txt 2>err.txt ||
	bad "record -m 1 -F 20000: exit $?: $(cat err.txt)"
cat err.txt
lost=$(sed -n 's/^nmiprof record: [0-9]* samples, \([0-9]*\) lost.*/\1/p' err.txt)
if [ "${lost:-0}" -gt 0 ]; then
	grep -Eq "warning: lost $lost of [0-9]+ samples \([0-9.]+%\): the rings \(4 KiB per CPU\) overflowed" err.txt &&
		grep -q 'warning: use bigger rings (-m 4) or lower -F' err.txt ||
		bad "no lost-samples warning with the ring size and -m"
else
	bad "no samples lost with 1-page rings at 20 kHz: the check cannot run"
fi
"$NMIPROF" top --backend perf --once -m 1 -F 20000 -d 1 >out.txt 2>err.txt ||
	bad "top --once -m 1: exit $?: $(cat err.txt)"
grep -Eq 'warning: lost [1-9][0-9]* of [0-9]+ samples .*\(4 KiB per CPU\)' err.txt ||
	bad "top: no lost-samples warning: $(cat err.txt)"
[ $fail -eq 0 ] && echo "ok   lost samples: a warning with the ring size and a bigger -m (record, top)"
[ $fail -eq 0 ] && rm -rf "$WORK"
[ $fail -eq 0 ]
