#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# `nmiprof export --format pprof` read by pprof itself (github.com/google/
# pprof, Debian's golang-github-google-pprof-dev built with Debian's Go
# into the build tree): pprof parses the file and checks it
# (profile.CheckValid: sample value counts against sample types, every
# location, function and mapping id a sample or location refers to).
# Then its figures must be ours: the sample total and the hot function's
# self count equal `nmiprof report` on the same fixture, the time total is
# the count times the 10 ms period, the hottest stack is the report's, and
# the comm/pid labels come through.
#
#   pprof_reader.sh NMIPROF SRCDIR WORKDIR TOOLDIR
# The reader is built once into TOOLDIR (about 15 s); exits 77 (skip)
# when Go or the pprof sources are not installed (scripts/setup-deps.sh).
# "A && B || fail" is meant: fail when either A or B fails.
# shellcheck disable=SC2015
set -u
NMIPROF=$1 SRC=$2 WORK=$3 TOOLS=$4
export TZ=UTC LC_ALL=C
GOSRC=/usr/share/gocode
PPROF=$TOOLS/pprof

if [ ! -x "$PPROF" ]; then
	command -v go >/dev/null ||
		{ echo "SKIP: go not installed (apt-get install golang-go)"; exit 77; }
	[ -f "$GOSRC/src/github.com/google/pprof/pprof.go" ] ||
		{ echo "SKIP: golang-github-google-pprof-dev not installed"; exit 77; }
	mkdir -p "$TOOLS"
	TOOLS=$(cd "$TOOLS" && pwd)	# go wants absolute paths
	PPROF=$TOOLS/pprof
	start=$(date +%s)
	# GOPATH mode over Debian's packaged sources: no network, no modules.
	GO111MODULE=off GOPATH=$GOSRC GOCACHE=$TOOLS/gocache GOFLAGS='' \
		go build -o "$PPROF.tmp" github.com/google/pprof >"$TOOLS/build.log" 2>&1 ||
		{ echo "FAIL: building pprof:"; cat "$TOOLS/build.log"; exit 1; }
	mv "$PPROF.tmp" "$PPROF"
	echo "note: built pprof in $(( $(date +%s) - start )) s"
fi
mkdir -p "$WORK"
# pprof wants a writable home for its settings; keep it in WORK
export HOME="$WORK" PPROF_TMPDIR="$WORK"

(cd "$SRC" && "$NMIPROF" export -i fixture.nmp --format pprof --freq 100 \
	-o "$WORK/fixture.pb" && "$NMIPROF" report -i fixture.nmp >"$WORK/report.txt") ||
	{ echo "FAIL: export/report exited $?"; exit 1; }

# -raw parses and validates the whole profile, then prints it.
"$PPROF" -raw "$WORK/fixture.pb" >"$WORK/raw.txt" 2>"$WORK/raw.err" ||
	{ echo "FAIL: pprof cannot read the profile: $(cat "$WORK/raw.err")"; exit 1; }
grep -q '^PeriodType: cpu nanoseconds$' "$WORK/raw.txt" &&
	grep -q '^Period: 10000000$' "$WORK/raw.txt" &&
	grep -q '^samples/count cpu/nanoseconds$' "$WORK/raw.txt" ||
	{ echo "FAIL: period or sample types:"; head -n 8 "$WORK/raw.txt"; exit 1; }

# Report's figures: "# samples: N", and the top row's self count and symbol.
total=$(sed -n 's/^# samples: \([0-9]*\) .*/\1/p' "$WORK/report.txt")
hot_self=$(awk '/^Overhead/ { getline; print $2; exit }' "$WORK/report.txt")
hot_sym=$(awk '/^Overhead/ { getline; print $NF; exit }' "$WORK/report.txt")
[ -n "$total" ] && [ -n "$hot_self" ] && [ -n "$hot_sym" ] ||
	{ echo "FAIL: cannot read report's figures:"; cat "$WORK/report.txt"; exit 1; }

# Counts: the sample total and the hottest function (flat) by pprof.
"$PPROF" -top -sample_index=samples "$WORK/fixture.pb" >"$WORK/top.txt" 2>"$WORK/top.err" ||
	{ echo "FAIL: pprof -top: $(cat "$WORK/top.err")"; exit 1; }
grep -q "^Showing nodes accounting for $total, 100% of $total total" "$WORK/top.txt" ||
	{ echo "FAIL: pprof's sample total is not report's $total:"; cat "$WORK/top.txt"; exit 1; }
awk -v self="$hot_self" -v sym="$hot_sym" '
	/flat%/ { getline; ok = ($1 == self && $NF == sym) }
	END { exit !ok }' "$WORK/top.txt" ||
	{ echo "FAIL: pprof's hottest function is not $hot_sym with $hot_self:"; cat "$WORK/top.txt"; exit 1; }
echo "ok   pprof -top: $total samples, hottest $hot_sym flat $hot_self, as report"

# Time: count x 10 ms in the cpu sample type (pprof's default index).
"$PPROF" -top -unit=ms "$WORK/fixture.pb" >"$WORK/top_ms.txt" 2>&1 ||
	{ echo "FAIL: pprof -top (cpu)"; exit 1; }
grep -q "Total samples = $((total * 10))ms" "$WORK/top_ms.txt" ||
	{ echo "FAIL: cpu total is not $((total * 10))ms:"; head -n 5 "$WORK/top_ms.txt"; exit 1; }
echo "ok   pprof cpu total: $((total * 10)) ms at 100 Hz"

# Traces: the heaviest stack leads with the hot function, with its labels.
"$PPROF" -traces -sample_index=samples "$WORK/fixture.pb" >"$WORK/traces.txt" 2>&1 ||
	{ echo "FAIL: pprof -traces"; exit 1; }
awk -v sym="$hot_sym" '
	/^-+\+/ { n++; next }
	n == 1 && /comm:/ { comm = $2 }
	n == 1 && /pid:/ { pid = $2 }
	n == 1 && NF == 2 && $1 ~ /^[0-9]+$/ && !first { first = $2 }
	n >= 1 && NF == 2 && $1 ~ /^[0-9]+$/ { sum += $1 }
	END {
		if (first != sym || comm == "" || pid == "") { print "first " first " comm " comm " pid " pid; exit 1 }
		print sum
	}' "$WORK/traces.txt" >"$WORK/traces.sum" ||
	{ echo "FAIL: the first trace is not $hot_sym with comm/pid labels: $(cat "$WORK/traces.sum")";
	  cat "$WORK/traces.txt"; exit 1; }
[ "$(cat "$WORK/traces.sum")" = "$total" ] ||
	{ echo "FAIL: traces sum to $(cat "$WORK/traces.sum"), not $total"; exit 1; }
echo "ok   pprof -traces: $total samples over the stacks, $hot_sym first with comm/pid"
rm -rf "$WORK"
