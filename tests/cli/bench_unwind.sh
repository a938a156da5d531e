#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# Benchmark (label bench): whole user stacks of Debian's python3 in a
# Python loop, at 499 Hz, in one run:
#   - nmiprof record (libperf backend, tables) against perf record -g and
#     perf record --call-graph dwarf: CPU seconds (workload + profiler),
#     slowdown against the bare run, bytes per sample in the output file,
#     and Py_RunMain's children share in each;
#   - bench_unwind: table memory for python3 and its libraries, compile
#     time per MiB of .eh_frame, cold and cached.
# Prints figures; fails only when a run fails.
#
#   bench_unwind.sh NMIPROF BENCH_UNWIND WORKDIR
set -u
NMIPROF=$1 BENCH=$2 WORK=$3/bench_unwind.$$
mkdir -p "$WORK" && cd "$WORK" || exit 1
export NMIPROF_UNWIND_CACHE="$WORK/cache"
py=/usr/bin/python3
prog='import json
d = {"a": [1, 2, 3, {"b": "x" * 50}] * 20}
for i in range(60000):
    json.loads(json.dumps(d))'

# cpu TAG CMD...: user+sys seconds of CMD and its children into $cpu_s.
# Not a $(...): a failing run's exit would end only that subshell, and
# its figures print as 0.00.
cpu() {
	tag=$1
	shift
	/usr/bin/time -f '%U %S' -o "t.$tag" "$@" >/dev/null 2>"err.$tag" ||
		{ echo "FAIL: $*: $(tail -n 3 "err.$tag")"; exit 1; }
	cpu_s=$(awk '{ printf "%.2f", $1 + $2 }' "t.$tag")
}

# warm caches (and the unwind table cache: a daemon's steady state)
$py -c "$prog"
"$NMIPROF" record -F 499 -o warm.nmp -- $py -c "$prog" >/dev/null 2>&1

cpu bare $py -c "$prog"
base=$cpu_s
cpu nmiprof "$NMIPROF" record -F 499 -o py.nmp -- $py -c "$prog"
nmp=$cpu_s
nmp_n=$(sed -n 's/^nmiprof record: \([0-9]*\) samples.*/\1/p' err.nmiprof)
# -B -N: no build-id pass at the end, which aborts perf 6.1 on a newer
# host kernel ("assertion failed at util/build-id.c:1010") after the run.
cpu perf_fp perf record -q -g -B -N -F 499 -o fp.data -- $py -c "$prog"
fp=$cpu_s
cpu perf_dw perf record -q --call-graph dwarf -B -N -F 499 -o dw.data -- $py -c "$prog"
dw=$cpu_s
fp_n=$(perf report -i fp.data --stats 2>/dev/null | awk '/SAMPLE events:/ { print $3; exit }')
dw_n=$(perf report -i dw.data --stats 2>/dev/null | awk '/SAMPLE events:/ { print $3; exit }')
size() { stat -c %s "$1"; }

share_nmp=$("$NMIPROF" report -i py.nmp -s children --percent-limit 0 2>/dev/null |
	awk '/^# shown:/ { n = $3 } $(NF-1) == "[.]" && $NF == "Py_RunMain" { c += $3 }
	     END { if (n) printf "%.1f", 100 * c / n }')
share() { perf report -i "$1" --children --stdio --sort sym --percent-limit 0 2>/dev/null |
	awk '$3 == "[.]" && $4 == "Py_RunMain" { sub("%", "", $1); print $1; f = 1; exit }
	     END { if (!f) print "0 (not on any stack)" }'; }

echo "python3 json loop at 499 Hz, CPU seconds (workload + profiler):"
awk -v b="$base" -v n="$nmp" -v f="$fp" -v d="$dw" 'BEGIN {
	printf "  bare %.2f  nmiprof %.2f (+%.1f%%)  perf -g %.2f (+%.1f%%)  perf dwarf %.2f (+%.1f%%)\n",
	       b, n, 100 * (n - b) / b, f, 100 * (f - b) / b, d, 100 * (d - b) / b
	if (d > b) printf "  nmiprof slowdown / perf dwarf slowdown: %.2f\n", (n - b) / (d - b) }'
echo "bytes per sample in the output file:"
awk -v ns="$(size py.nmp)" -v nn="$nmp_n" -v fs="$(size fp.data)" -v fn="$fp_n" \
    -v ds="$(size dw.data)" -v dn="$dw_n" 'BEGIN {
	printf "  nmiprof %.0f (%d samples)  perf -g %.0f (%d)  perf dwarf %.0f (%d)\n",
	       ns / nn, nn, fs / fn, fn, ds / dn, dn
	printf "  nmiprof / perf dwarf: 1/%.0f\n", (ds / dn) / (ns / nn) }'
echo "  (the libperf backend itself reads ~8.3 KiB per sample from the kernel, as perf dwarf does)"
echo "Py_RunMain children: nmiprof $share_nmp%  perf -g $(share fp.data)%  perf dwarf $(share dw.data)%"
echo
"$BENCH"
rm -rf "$WORK"
