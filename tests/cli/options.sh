#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# The command line as a perf user types it, without sampling:
# - every long option a subcommand's parser accepts (its struct option
#   table in cli/cmd_NAME.c) is in its --help and its man page;
# - `nmiprof help help` is the general help;
# - perf's spellings: report --stdio, --children, --no-children, and
#   '-' for standard input and output (-i -, -o -).
#
#   options.sh NMIPROF SRCDIR FIXTURE WORKDIR
set -u
NMIPROF=$1 SRC=$2 FIX=$3 WORK=$4
FIX=$(cd "$(dirname "$FIX")" && pwd)/$(basename "$FIX")
mkdir -p "$WORK"
cd "$WORK" || exit 1
fail=0
bad() { echo "FAIL: $*"; fail=$((fail + 1)); }

for c in top record report export lockups status; do
	"$NMIPROF" "$c" --help >help.txt 2>&1 || bad "$c --help exited $?"
	man=$SRC/docs/man/nmiprof-$c.1
	# '{ "name", ...' lines of the option table; the older spellings kept
	# for compatibility are in the man page only
	for o in $(sed -n 's/^[[:space:]]*{ "\([a-z-]*\)",.*/\1/p' "$SRC/cli/cmd_$c.c"); do
		case $o in
		kernel-only|user-only) ;;
		*) grep -q -- "--$o\\b" help.txt || bad "$c --help lacks --$o" ;;
		esac
		[ "$o" = help ] && continue
		grep -q -- "$(echo "--$o" | sed 's/-/\\\\-/g')" "$man" ||
			bad "nmiprof-$c.1 lacks --$o"
	done
done
[ $fail -eq 0 ] && echo "ok   every parsed option is in --help and the man page"

"$NMIPROF" help help >out.txt 2>err.txt && grep -q '^Usage: nmiprof ' out.txt ||
	bad "nmiprof help help: $(cat err.txt)"
"$NMIPROF" export --help | head -1 | grep -q -- '--format [a-z]' &&
	bad "export --help shows --format as required (folded is the default)"

"$NMIPROF" report -i "$FIX" >plain.txt 2>&1 || bad "report -i fixture"
"$NMIPROF" report --stdio -i "$FIX" >stdio.txt 2>&1 || bad "report --stdio: $(cat stdio.txt)"
cmp -s plain.txt stdio.txt || bad "report --stdio differs from report"
"$NMIPROF" report -s children -i "$FIX" >want.txt 2>&1
"$NMIPROF" report --children -i "$FIX" >got.txt 2>&1 || bad "report --children: $(cat got.txt)"
cmp -s want.txt got.txt || bad "report --children is not -s children"
"$NMIPROF" report --children --no-children -i "$FIX" >got.txt 2>&1 ||
	bad "report --no-children: $(cat got.txt)"
cmp -s plain.txt got.txt || bad "report --no-children is not -s self"
"$NMIPROF" report -i - <"$FIX" >got.txt 2>err.txt || bad "report -i -: $(cat err.txt)"
# the first line names the input
[ "$(sed 1d got.txt)" = "$(sed 1d plain.txt)" ] || bad "report -i - differs from -i FILE"
"$NMIPROF" export -i "$FIX" >want.txt 2>&1
"$NMIPROF" export -i - -o - <"$FIX" >got.txt 2>err.txt || bad "export -i - -o -: $(cat err.txt)"
cmp -s want.txt got.txt || bad "export -i - -o - differs from export -i FILE"
[ $fail -eq 0 ] && echo "ok   help help, --stdio, --children, --no-children, -i -, -o -"
"$NMIPROF" lockups --host 'web-*' >out.txt 2>&1
[ $? -eq 1 ] && grep -q 'need --cluster' out.txt || bad "lockups --host without --cluster: $(cat out.txt)"
"$NMIPROF" lockups --cluster http://127.0.0.1:1/ --store . >out.txt 2>&1
[ $? -eq 1 ] && grep -q 'excludes --store' out.txt || bad "lockups --cluster --store: $(cat out.txt)"
[ $fail -eq 0 ] && echo "ok   lockups: filters need --cluster, --cluster excludes --store"
[ $fail -eq 0 ]
