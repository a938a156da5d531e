#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# Golden-output tests of `nmiprof report` and `nmiprof export` on the
# committed fixture (tests/cli/fixture.nmp, made by gen_fixture.c).
#
#   golden.sh NMIPROF GEN_FIXTURE SRCDIR WORKDIR [--update]
#
# --update rewrites tests/cli/golden/*; review the diff before committing.
set -u
NMIPROF=$1 GEN=$2 SRC=$3 WORK=$4 UPDATE=${5:-}
GOLDEN=$SRC/golden
export TZ=UTC LC_ALL=C
fail=0
mkdir -p "$WORK"

# name|args: the fixture is read as "fixture.nmp" from $SRC, so the
# header line is the same wherever the tree lives.
cases='report_default|report -i fixture.nmp
report_children_g|report -i fixture.nmp --sort children -g
report_callee_tree|report -i fixture.nmp -g --graph-limit 0
report_caller_tree|report -i fixture.nmp --sort children -G -n 6
report_tree_pruned|report -i fixture.nmp --sort children -G -n 3 --graph-depth 2 --graph-limit 5
report_chains|report -i fixture.nmp --chains
report_pid|report -i fixture.nmp --pid 200
report_comm_symbol|report -i fixture.nmp --comm app --sort symbol
report_kernel|report -i fixture.nmp --kernel
report_user_cpu1|report -i fixture.nmp --user --cpu 1
report_percent_limit|report -i fixture.nmp --percent-limit 5 -n 3
report_sort_dso_g|report -i fixture.nmp --sort dso -g
report_sort_pid_comm|report -i fixture.nmp -s pid,comm
export_folded|export -i fixture.nmp
export_folded_kernel_nocomm|export -i fixture.nmp --format folded --kernel --no-comm
export_svg|export -i fixture.nmp --format svg --title fixture'

echo "$cases" | while IFS='|' read -r name args; do
	# shellcheck disable=SC2086 # args are split on purpose
	(cd "$SRC" && "$NMIPROF" $args) >"$WORK/$name.out" 2>"$WORK/$name.err"
	rc=$?
	if [ $rc -ne 0 ] || [ -s "$WORK/$name.err" ]; then
		echo "FAIL $name: exit $rc, stderr: $(cat "$WORK/$name.err")"
		echo x >>"$WORK/failed"
		continue
	fi
	if [ "$UPDATE" = --update ]; then
		cp "$WORK/$name.out" "$GOLDEN/$name.txt"
		echo "updated $name"
	elif ! diff -u "$GOLDEN/$name.txt" "$WORK/$name.out"; then
		echo "FAIL $name: output differs from golden/$name.txt"
		echo x >>"$WORK/failed"
	else
		echo "ok   $name"
	fi
done
[ -f "$WORK/failed" ] && fail=1 && rm -f "$WORK/failed"

# The writer of today reads back the same as the committed fixture; the
# same slices in a store directory, read by time range, and a lockup.
rm -rf "$WORK/store"
if "$GEN" "$WORK/regen.nmp" "$WORK/store"; then
	cases2='store_all|report --store store
store_range|report --store store --since @1767225690 --until @1767225700
store_export_range|export --store store --since @1767225690
lockups_list|lockups --store store
lockups_show|lockups --store store show lockup-18867266e2650400-cpu1
lockups_show_at_least|lockups --store store show lockup-18867274daac5c00-cpu2'
	echo "$cases2" | while IFS='|' read -r name args; do
		# shellcheck disable=SC2086
		(cd "$WORK" && "$NMIPROF" $args) >"$WORK/$name.out" 2>"$WORK/$name.err"
		rc=$?
		if [ $rc -ne 0 ] || [ -s "$WORK/$name.err" ]; then
			echo "FAIL $name: exit $rc: $(cat "$WORK/$name.err")"
			echo x >>"$WORK/failed"
		elif [ "$UPDATE" = --update ]; then
			cp "$WORK/$name.out" "$GOLDEN/$name.txt"
			echo "updated $name"
		elif ! diff -u "$GOLDEN/$name.txt" "$WORK/$name.out"; then
			echo "FAIL $name: output differs from golden/$name.txt"
			echo x >>"$WORK/failed"
		else
			echo "ok   $name"
		fi
	done
	[ -f "$WORK/failed" ] && fail=1 && rm -f "$WORK/failed"
	(cd "$WORK" && "$NMIPROF" report -i regen.nmp) | sed 1d >"$WORK/regen.out"
	sed 1d "$GOLDEN/report_default.txt" | diff -u - "$WORK/regen.out" ||
		{ echo "FAIL regenerated fixture reports differently"; fail=1; }
	echo "ok   regenerated fixture reads the same"
else
	echo "FAIL gen_fixture"; fail=1
fi

# Folded output, parsed as flamegraph.pl does: "stack count", the count
# after the last space; frames non-empty; counts add up to the samples.
total=$(sed -n 's/^# samples: \([0-9]*\) .*/\1/p' "$WORK/report_default.out")
awk -v want="$total" '
	{ n = split($0, w, " "); c = w[n]; s = substr($0, 1, length($0) - length(c) - 1) }
	c !~ /^[0-9]+$/ { print "bad count on line " NR ": " $0; bad = 1 }
	{ k = split(s, f, ";"); for (i = 1; i <= k; i++) if (f[i] == "") { print "empty frame, line " NR; bad = 1 } }
	{ sum += c }
	END { if (sum != want) { print "folded sum " sum " != samples " want; bad = 1 } exit bad }
' "$WORK/export_folded.out" || { echo "FAIL folded parse"; fail=1; }

# Call-graph trees (-g, -G), independent of the golden files: each row's
# root is its children share; a node's branches never add up to more than
# the node (the rest ended or was sampled there); with --graph-limit 0 and
# no depth limit, a callee tree's leaves are outermost frames, so every
# callee tree of a user function ends in __libc_start_main, and the
# compute tree matches the fixture: 110 samples via work, 6 via parse.
for name in report_callee_tree report_caller_tree report_tree_pruned report_children_g; do
	awk -v total="$total" -v name="$name" '
	function close_to(d) {
		while (top >= d) {
			if (sum[top] > w[top] + 0.015 * (n[top] + 1)) {
				print name ": branches of line " at[top] " add up to " sum[top] " > " w[top]; bad = 1
			}
			top--
		}
	}
	/^ *[0-9.]+% +[0-9]+ +[0-9]+ / { close_to(0); children = $3; next }
	/^             *[0-9.]+%  \[/ {
		close_to(0); top = 0; w[0] = $1 + 0; sum[0] = 0; n[0] = 0; at[0] = NR
		want = sprintf("%.2f", 100 * children / total)
		if ($1 != want "%") { print name ": root " $1 " at line " NR " is not children " want "%"; bad = 1 }
		next
	}
	/^            [|` -]*--/ && top >= 0 {
		i = index($0, "--"); d = (i - 14) / 3 + 1
		p = substr($0, i + 2); sub(/^ +/, "", p); v = p + 0
		close_to(d); sum[d - 1] += v; n[d - 1]++
		top = d; w[d] = v; sum[d] = 0; n[d] = 0; at[d] = NR
		next
	}
	/^$/ { close_to(0); top = -1 }
	END { close_to(0); exit bad }' "$WORK/$name.out" || { echo "FAIL $name: tree does not add up"; fail=1; }
done
awk '
	/^ *[0-9.]+% +[0-9]+ +[0-9]+ / { row = $NF; kernel = ($(NF-1) == "[k]") }
	/^            [|` ]*`-- / && !kernel && row != "__libc_start_main" && row != "app+0x4f2a" && row != "std::vector<int>::push_back" { last[row] = $NF }
	/^$/ && row != "" && !kernel && row != "__libc_start_main" && row in last && last[row] != "__libc_start_main" {
		print "callee tree of " row " ends in " last[row]; bad = 1 }
	/^            \|-- 57.59%  \[\.\] work$/ && row == "compute" { via_work = 1 }
	/^            `--  3.14%  \[\.\] parse$/ && row == "compute" { via_parse = 1 }
	END { if (!via_work || !via_parse) { print "compute: not 110 via work and 6 via parse"; bad = 1 } exit bad }
' "$WORK/report_callee_tree.out" || { echo "FAIL report_callee_tree semantics"; fail=1; }
echo "ok   call-graph trees add up; compute's callers match the fixture"

# The svg is well-formed xml with one <g class="f"> per drawn frame.
if command -v python3 >/dev/null; then
	python3 - "$WORK/export_svg.out" <<'PY' || { echo "FAIL svg xml"; fail=1; }
import sys, xml.etree.ElementTree as ET
root = ET.parse(sys.argv[1]).getroot()
ns = "{http://www.w3.org/2000/svg}"
frames = [g for g in root.iter(ns + "g") if g.get("class") == "f"]
titles = [g.find(ns + "title").text for g in frames]
assert any(t.startswith("std::vector<int>::push_back ") for t in titles), titles
assert titles[0] == "all (191 samples, 100.00%)", titles[0]
assert root.find(ns + "script") is not None
print("ok   svg parses,", len(frames), "frames")
PY
fi
exit $fail
