#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# `nmiprof export --format pprof` decoded by protoc (an independent
# protobuf implementation) against profile.proto, compared with
# golden/export_pprof.txt, and its sample values checked against report.
#
#   pprof.sh NMIPROF SRCDIR WORKDIR [--update]
set -u
NMIPROF=$1 SRC=$2 WORK=$3 UPDATE=${4:-}
export TZ=UTC LC_ALL=C
if ! command -v protoc >/dev/null; then
	echo "SKIP: protoc not installed (apt-get install protobuf-compiler)"
	exit 77
fi
mkdir -p "$WORK"
(cd "$SRC" && "$NMIPROF" export -i fixture.nmp --format pprof --freq 100 \
	-o "$WORK/fixture.pb") || { echo "FAIL: export exited $?"; exit 1; }
protoc --decode_raw <"$WORK/fixture.pb" >/dev/null ||
	{ echo "FAIL: not a protobuf message"; exit 1; }
protoc -I "$SRC" --decode=perftools.profiles.Profile profile.proto \
	<"$WORK/fixture.pb" >"$WORK/pprof.txt" 2>"$WORK/pprof.err" ||
	{ echo "FAIL: protoc: $(cat "$WORK/pprof.err")"; exit 1; }
if [ "$UPDATE" = --update ]; then
	cp "$WORK/pprof.txt" "$SRC/golden/export_pprof.txt"
	echo "updated export_pprof.txt"
fi
diff -u "$SRC/golden/export_pprof.txt" "$WORK/pprof.txt" ||
	{ echo "FAIL: decoded profile differs from golden/export_pprof.txt"; exit 1; }

# Semantics, independent of the golden file: string_table[0] is "", the
# first value of every sample sums to the report's sample count, and the
# second is the first times the 10 ms period of 100 Hz.
awk '
	/^string_table:/ && !seen { seen = 1; if ($0 != "string_table: \"\"") bad = "string_table[0] not empty" }
	/^sample \{/ { in_s = 1; v = 0 }
	in_s && /^  value:/ { v++; if (v == 1) { c = $2; sum += c } else if ($2 != c * 10000000) bad = "ns value != count * period" }
	/^}/ { in_s = 0 }
	/^period:/ { period = $2 }
	END {
		if (sum != 191) bad = "sample sum " sum " != 191"
		if (period != 10000000) bad = "period " period
		if (bad) { print "FAIL: " bad; exit 1 }
		print "ok   pprof: 191 samples, period 10 ms"
	}' "$WORK/pprof.txt"
