#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# End to end through real sampling: `nmiprof record -- hot 2`, then
# report and export of the file.  hot measures its own split between
# hot_a and hot_b with its thread CPU clock; the profile must agree
# within 10 points, and hot_a must be the top row.  The pprof export's
# Mappings carry each object's build-id: hot's and libc's as readelf -n
# gives them, the kernel's and the vdso's as perf buildid-list does.
#
#   record.sh NMIPROF HOT WORKDIR SRCDIR
# Exits 77 (skip) when this machine cannot sample.
set -u
NMIPROF=$1 HOT=$2 WORK=$3 SRC=$4
# one directory per run: two runs of this test must not share files
WORK=$WORK/run.$$
mkdir -p "$WORK"
cd "$WORK" || exit 1

"$NMIPROF" record -F 499 -o hot.nmp -- "$HOT" 2 >hot.out 2>record.err
rc=$?
case $rc in
0) ;;
3|4) echo "SKIP: cannot sample here: $(cat record.err)"; exit 77 ;;
*) echo "FAIL: record exited $rc: $(cat record.err)"; exit 1 ;;
esac
grep -q '^nmiprof record: [1-9][0-9]* samples' record.err ||
	{ echo "FAIL: no summary line: $(cat record.err)"; exit 1; }

"$NMIPROF" report -i hot.nmp -n 5 >report.txt 2>report.err ||
	{ echo "FAIL: report: $(cat report.err)"; exit 1; }
cat report.txt
sed -n 6p report.txt | grep -q '\[\.\] hot_a$' ||
	{ echo "FAIL: hot_a is not the top row"; exit 1; }

# hot's own measurement vs the profile's share of hot_a in hot_a + hot_b
want=$(sed -n 's/^hot_a \([0-9.]*\) .*/\1/p' hot.out)
got=$(awk '/\[\.\] hot_a$/ { a = $2 } /\[\.\] hot_b$/ { b = $2 }
	END { if (a + b > 0) printf "%.4f", a / (a + b) }' report.txt)
echo "hot_a share: hot measured $want, profile $got"
awk -v w="$want" -v g="$got" 'BEGIN { d = w - g; if (d < 0) d = -d; exit !(g != "" && d <= 0.10) }' ||
	{ echo "FAIL: profile share $got too far from measured $want"; exit 1; }

"$NMIPROF" export -i hot.nmp >hot.folded 2>export.err ||
	{ echo "FAIL: export: $(cat export.err)"; exit 1; }
grep -q ';main;hot_a [0-9]*$' hot.folded ||
	{ echo "FAIL: folded output lacks ...;main;hot_a"; exit 1; }
echo "ok   record -> report -> export"

"$NMIPROF" export -i hot.nmp -f pprof -o hot.pb 2>export.err ||
	{ echo "FAIL: export -f pprof: $(cat export.err)"; exit 1; }
sh "$SRC/pprof_mappings.sh" hot.pb "$SRC" >maps.txt
case $? in
0) ;;
77) echo "note: protoc not installed: pprof build-ids not checked" ;;
*) echo "FAIL: pprof_mappings.sh"; exit 1 ;;
esac
# objects of hot's process: hot itself and the libc it ran on
for re in '/hot$' '/libc\.so\.6$'; do
	[ -s maps.txt ] || break
	obj=$(awk -v re="$re" '$1 ~ re { print $1; exit }' maps.txt)
	got=$(awk -v re="$re" '$1 ~ re { print $2; exit }' maps.txt)
	want=$(readelf -n "${obj:-/nonexistent}" 2>/dev/null | sed -n 's/^ *Build ID: *//p')
	[ -n "$want" ] && [ "$got" = "$want" ] ||
		{ cat maps.txt; echo "FAIL: pprof Mapping '$obj': build-id '$got', readelf -n '$want'"; exit 1; }
	echo "ok   pprof Mapping $obj: build-id $got"
done
# [kernel.kallsyms] and [vdso] as perf gives them for a run of hot (hot
# reads one clock through a syscall and one through the vdso).
if [ -s maps.txt ] && command -v perf >/dev/null &&
   perf record -q -o perf.data -- "$HOT" 1 >/dev/null 2>perf.err &&
   perf buildid-list -i perf.data >perf_bids.txt 2>>perf.err; then
	for obj in '[kernel.kallsyms]' '[vdso]'; do
		want=$(awk -v f="$obj" '$2 == f { print $1; exit }' perf_bids.txt)
		got=$(awk -v f="$obj" '$1 == f { print $2; exit }' maps.txt)
		if [ -z "$got" ] || [ -z "$want" ]; then
			echo "note: $obj: no frame in the profile or none in perf's ('$got', '$want')"
			continue
		fi
		[ "$got" = "$want" ] ||
			{ cat maps.txt perf_bids.txt; echo "FAIL: pprof Mapping $obj: build-id '$got', perf '$want'"; exit 1; }
		echo "ok   pprof Mapping $obj: build-id $got (perf buildid-list)"
	done
else
	echo "note: no perf here: kernel and vdso build-ids not checked ($(cat perf.err 2>/dev/null))"
fi
rm -rf "$WORK"	# kept only when a check failed
