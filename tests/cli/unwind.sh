#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# Whole user stacks without frame pointers, end to end through the
# libperf backend (user stacks copied and unwound with compiled tables):
#
#   unwind.sh split   NMIPROF PROGS WORK   unwind_split, no frame pointers:
#                                          caller_a/caller_b children split
#                                          within 5 points of its own clock
#   unwind.sh qsort   NMIPROF PROGS WORK   hot code under libc's qsort():
#                                          run_a's share within 5 points of
#                                          its clock, and its distance from
#                                          the clock within 5 points of perf
#                                          --call-graph dwarf's in its run
#   unwind.sh python  NMIPROF PROGS WORK   Debian's python3 in a Python loop:
#                                          Py_RunMain >= 70 % children, and
#                                          within 5 points of perf's dwarf mode
#   unwind.sh dlopen  NMIPROF PROGS WORK   code mapped and unmapped while
#                                          sampled: no frame resolved against
#                                          the library that was not there
#
# Exits 77 (skip) when this machine cannot sample.
set -u
MODE=$1 NMIPROF=$2 PROGS=$3 WORK=$4/$1.$$
mkdir -p "$WORK"
cd "$WORK" || exit 1
# a cache of its own: the first run compiles, as a fresh machine would
export NMIPROF_UNWIND_CACHE="$WORK/cache"

fail() { echo "FAIL: $*"; exit 1; }

record() {
	name=$1
	shift
	"$NMIPROF" record -F 499 -o "$name.nmp" -- "$@" >"$name.out" 2>"$name.err"
	rc=$?
	case $rc in
	0) ;;
	3|4) echo "SKIP: cannot sample here: $(cat "$name.err")"; exit 77 ;;
	*) fail "record exited $rc: $(cat "$name.err")" ;;
	esac
	"$NMIPROF" report -i "$name.nmp" -s children --percent-limit 0 \
		>"$name.report" 2>"$name.rerr" || fail "report: $(cat "$name.rerr")"
}

# children samples of a user symbol in a report (summed over its rows)
children() {
	awk -v s="$2" '$(NF-1) == "[.]" && $NF == s { c += $3 } END { print c + 0 }' "$1"
}
shown() {
	sed -n 's/^# shown: \([0-9]*\) samples.*/\1/p' "$1"
}
ratio() {
	awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.4f", a / b; else print "nan" }'
}
within() {	# |a - b| <= d
	awk -v a="$1" -v b="$2" -v d="$3" 'BEGIN { x = a - b; if (x < 0) x = -x; exit !(a != "nan" && b != "nan" && x <= d) }'
}

# perf's dwarf mode on the same command: the children share of symbol $1
# (perf report --children) among the samples of the command.
perf_share() {
	sym=$1
	shift
	command -v perf >/dev/null || { echo nan; return; }
	# -B -N: no build-id pass, which aborts now and then in perf 6.1 here
	perf record -q -B -N --call-graph dwarf -F 499 -o perf.data -- "$@" >perf.out 2>perf.err ||
		{ echo nan; return; }
	perf report -i perf.data --children --stdio --sort sym --percent-limit 0 2>/dev/null |
		awk -v s="$sym" '$3 == "[.]" && $4 == s { sub("%", "", $1); printf "%.4f", $1 / 100; f = 1; exit }
			END { if (!f) print "nan" }'
}

case $MODE in
split)
	record split "$PROGS/unwind_split" 3
	cat split.report | head -20
	want=$(sed -n 's/^caller_a \([0-9.]*\) .*/\1/p' split.out)
	a=$(children split.report caller_a)
	b=$(children split.report caller_b)
	m=$(children split.report main)
	n=$(shown split.report)
	got=$(ratio "$a" $((a + b)))
	echo "caller_a share: measured $want, nmiprof $got ($a of $((a + b)));" \
	     "main in $m of $n samples"
	within "$got" "$want" 0.05 || fail "caller_a's share $got too far from $want"
	# nearly every sample gets back to main, through work's callers
	[ $((m * 100)) -ge $((n * 90)) ] || fail "main in only $m of $n samples"
	;;
qsort)
	record qsort "$PROGS/unwind_qsort" 3
	want=$(sed -n 's/^run_a \([0-9.]*\) .*/\1/p' qsort.out)
	a=$(children qsort.report run_a)
	b=$(children qsort.report run_b)
	q=$(children qsort.report qsort_r)
	n=$(shown qsort.report)
	got=$(ratio "$a" $((a + b)))
	# perf's share of run_a among all samples; ours the same way
	ours=$(ratio "$a" "$n")
	perf=$(perf_share run_a "$PROGS/unwind_qsort" 3)
	# perf samples another run, whose split differs on a busy machine:
	# each tool is compared with the clock of its own run.
	wantp=$(sed -n 's/^run_a \([0-9.]*\) .*/\1/p' perf.out 2>/dev/null)
	echo "run_a share of run_a + run_b: measured $want, nmiprof $got;" \
	     "of all samples: nmiprof $ours, perf --call-graph dwarf $perf" \
	     "(its run measured ${wantp:-?}); qsort_r in $q of $n"
	within "$got" "$want" 0.05 || fail "run_a's share $got too far from $want"
	[ $(((a + b) * 100)) -ge $((q * 90)) ] ||
		fail "only $((a + b)) of $q samples in qsort_r reach run_a or run_b"
	if [ "$perf" != nan ] && [ -n "$wantp" ]; then
		dours=$(awk -v a="$ours" -v b="$want" 'BEGIN { printf "%.4f", a - b }')
		dperf=$(awk -v a="$perf" -v b="$wantp" 'BEGIN { printf "%.4f", a - b }')
		within "$dours" "$dperf" 0.05 ||
			fail "run_a $ours ($dours from its clock) vs perf's $perf ($dperf from its clock)"
	else
		echo "(perf --call-graph dwarf did not run: $(tail -n 1 perf.err 2>/dev/null))"
	fi
	;;
python)
	py=/usr/bin/python3	# Debian's, whatever else is first in PATH
	[ -x $py ] || { echo "SKIP: no $py"; exit 77; }
	prog='import json
d = {"a": [1, 2, 3, {"b": "x" * 50}] * 20}
for i in range(40000):
    json.loads(json.dumps(d))'
	record py $py -c "$prog"
	head -16 py.report
	r=$(children py.report Py_RunMain)
	n=$(shown py.report)
	got=$(ratio "$r" "$n")
	perf=$(perf_share Py_RunMain $py -c "$prog")
	echo "Py_RunMain children: nmiprof $got ($r of $n), perf --call-graph dwarf $perf"
	grep '\[unwind' py.report || true
	within "$got" 1 0.30 || fail "Py_RunMain in only $got of the samples"
	if [ "$perf" != nan ]; then
		within "$got" "$perf" 0.05 || fail "Py_RunMain $got vs perf's $perf"
	fi
	;;
dlopen)
	record dl "$PROGS/unwind_dlopen" 3 "$PROGS"
	"$NMIPROF" export -i dl.nmp >dl.folded 2>dl.xerr || fail "export: $(cat dl.xerr)"
	# hot_in_X only ever runs under call_X -> call
	good=$(grep -cE ';call_a;call;hot_in_a( |;)|;call_b;call;hot_in_b( |;)' dl.folded)
	# a walk cut short (marker frame) is no misattribution
	bad=$(grep -E 'hot_in_[ab]' dl.folded | grep -v '\[unwind: ' | grep -cvE ';call_a;call;hot_in_a( |;)|;call_b;call;hot_in_b( |;)')
	echo "stacks under the loaded library: $good right, $bad other"
	grep -E 'hot_in_[ab]' dl.folded | grep -vE ';call_a;call;hot_in_a( |;)|;call_b;call;hot_in_b( |;)' | head -5
	[ "$good" -ge 2 ] || fail "no stack through hot_in_a or hot_in_b"
	[ "$bad" -eq 0 ] || fail "$bad stacks resolved against the wrong library"
	;;
*)
	fail "unknown mode $MODE"
	;;
esac
echo "ok   unwind $MODE"
rm -rf "$WORK"	# kept only when a check failed
