#!/bin/sh
# verify.sh MODEL.pml WORKDIR pass|bug [-DMACRO...]
#
# Generate the verifier with SPIN, build it, search the whole state space
# for assertion violations and invalid end states.
#   pass: fails on any error, and on a search that did not complete.
#   bug:  the model built with the -D macros (a deliberate bug) must give
#         an error; prints the counterexample trail.
set -u
model=$1 work=$2 want=$3
shift 3

command -v spin >/dev/null 2>&1 || {
	echo "SKIP: spin is not installed (scripts/setup-deps.sh installs it)"
	exit 77
}
name=$(basename "$model" .pml)
rm -rf "$work" && mkdir -p "$work" && cp "$model" "$work/" && cd "$work" || exit 1

t0=$(date +%s.%N)
spin "$@" -a "$name.pml" >spin.log 2>&1 || { cat spin.log; exit 1; }
# SAFETY: no cycle checks (safety properties only); COLLAPSE keeps memory
# low.  -O0: these searches take seconds, and -O2 triples the compile time
# (ring.pml: 2 s to compile and 6 s to search at -O0, 13 s and 7 s at -O2).
${CC:-cc} -O0 -DSAFETY -DCOLLAPSE -o pan pan.c >cc.log 2>&1 || { cat cc.log; exit 1; }
./pan -m1000000 >pan.log 2>&1
t1=$(date +%s.%N)

errors=$(sed -n 's/.*errors: \([0-9][0-9]*\).*/\1/p' pan.log)
states=$(sed -n 's/^ *\([0-9e.+]*\) states, stored.*/\1/p' pan.log)
depth=$(sed -n 's/.*depth reached \([0-9]*\).*/\1/p' pan.log)
secs=$(echo "$t1 $t0" | awk '{ printf "%.1f", $1 - $2 }')
echo "$name $* ($want): errors ${errors:-?}, ${states:-?} states stored, depth ${depth:-?}, ${secs} s (spin, cc, pan)"

case $want in
pass)
	if [ "${errors:-1}" != 0 ] || grep -q 'Search not completed\|max search depth too small' pan.log; then
		cat pan.log
		[ -e "$name.pml.trail" ] && spin "$@" -t -p "$name.pml" | tail -n 60
		echo "FAIL: $name: SPIN found an error, or did not finish the search"
		exit 1
	fi
	# The model's own check of what it covered (unreached code is fine
	# only where the model says so): show it for the log.
	sed -n '/^unreached/,$p' pan.log | grep -v '^pan:' | head -n 40
	;;
bug)
	if [ "${errors:-0}" = 0 ] || [ ! -e "$name.pml.trail" ]; then
		cat pan.log
		echo "FAIL: $name with $*: SPIN did not find the deliberate bug"
		exit 1
	fi
	grep -m1 'pan:1:\|invalid end state' pan.log
	echo "counterexample ($name.pml.trail, $(wc -l <"$name.pml.trail") steps):"
	spin "$@" -t -p -g "$name.pml" >trail.txt 2>&1
	grep -E '^ *[0-9]+:.*proc' trail.txt | tail -n 40
	tail -n 15 trail.txt | grep -v '^ *[0-9]*:.*proc  *[0-9]'
	;;
*)
	echo "usage: verify.sh MODEL WORKDIR pass|bug [-DMACRO...]" >&2
	exit 2
	;;
esac
exit 0
