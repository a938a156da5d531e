#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Fleet profiles end to end, on loopback: two real ClickHouse servers
# (two shards, Distributed tables), two nmiprofd (libperf backend, host
# labels web-1 and db-1, 1 s slices) shipping to them while
# tests/progs/hot runs.
#
#   1. `report/export --cluster` equal the union of the two local stores,
#      stack for stack and sample for sample, per host and in total;
#      --sort host, --host globs and --label select the right hosts
#   2. server 1 killed for two slices, restarted: both daemons catch up,
#      totals exact, no slice committed twice
#   3. kill -9 of a daemon in the middle of a catch-up, and a cursor one
#      slice behind the server (the crash between an insert and the cursor
#      write): the same
#   4. a server that answers errors, hangs, or closes the connection mid-
#      insert (tests/fleet/fake_ch.py, switched to by SIGHUP): the daemon
#      keeps sampling, logs one line for the failure and one for the
#      recovery, backs off, its memory stays flat; back on the real server
#      it sends everything
#   5. another database: by SIGHUP, the daemon sends the new one its whole
#      store, not only what comes after the old one's cursor; restarted
#      back on the first, it sends what that one missed, nothing twice
#   6. a database of the first schema (stacks with their frames inline):
#      report/export --cluster read it, before and after `cluster init`
#   7. frames without build_id and samples without comm_hash (the second
#      schema): the daemon still sends everything, the queries read it;
#      `cluster init` adds the columns (idempotent), and the daemon then
#      sends each frame's build-id
#   export --cluster -f pprof: hot's Mapping carries its build-id (1, 7)
#   lockups (gen_fixture's, in web-1's store) reach the server with their
#   flags (1); without lockups.flags, before `cluster init` adds it (7)
#   8. nmiprof-cluster.service's commands (packaging/systemd) as systemd
#      runs them: retention drops old days only
#   `cluster rollup`: per-day rollups, read while they cover a (host,
#      day) whole, the same results (1); left when slices come (2)
#
#   fleet.sh NMIPROF NMIPROFD HOT WORKDIR GEN_FIXTURE
# Exits 77 (skip) where clickhouse-server is not installed or the daemon
# cannot sample.
set -u
NMIPROF=$1 NMIPROFD=$2 HOT=$3 WORK=$4/run.$$ GEN_FIXTURE=$5
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/ch_lib.sh"
T0=$(date +%s.%N)

ch_available || {
	echo "SKIP: $CH_SERVER not installed (scripts/setup-deps.sh installs clickhouse-server)"
	exit 77
}
mkdir -p "$WORK"
ch_pick_ports || { echo "FAIL: no free loopback ports"; exit 1; }
U1="http://127.0.0.1:$CH_HTTP1/?database=nmiprof"
U2="http://127.0.0.1:$CH_HTTP2/?database=nmiprof"
FAKE_PORT=$((CH_HTTP1 + 6))
DPID1= DPID2= HPID= FPID=

cleanup() {
	for p in $DPID1 $DPID2 $HPID $FPID; do
		kill -KILL "$p" 2>/dev/null
		wait "$p" 2>/dev/null
	done
	ch_stop 1
	ch_stop 2
	# ~100 MB a run: kept only when a check failed
	[ -n "$PASSED" ] && rm -rf "$WORK"
}
PASSED=
trap cleanup EXIT INT TERM

fail() {
	echo "FAIL: $*"
	for f in "$WORK"/*.log; do [ -f "$f" ] && { echo "== $f"; tail -n 15 "$f"; }; done
	exit 1
}
pass() { echo "ok: $*"; }

ch_start 1 "$WORK/ch1" || fail "server 1"
ch_start 2 "$WORK/ch2" || fail "server 2"
"$NMIPROF" cluster init --name fleet "$U1" "$U2" >"$WORK/init.log" 2>&1 ||
	fail "cluster init"
"$NMIPROF" cluster init --name fleet "$U1" "$U2" >>"$WORK/init.log" 2>&1 ||
	fail "cluster init is not idempotent"
pass "schema on both shards (twice)"

# start_daemon N HOST LABELS: URL from $WORK/dN.conf (SIGHUP changes it)
start_daemon() {
	n=$1
	"$NMIPROFD" -c "$WORK/d$n.conf" -s "$WORK/s$n" -S "$WORK/d$n.sock" \
		-b libperf -F 499 --slice-seconds 1 --host-label "$2" --labels "$3" \
		--clickhouse-timeout "${TIMEOUT:-10}" >>"$WORK/d$n.log" 2>&1 &
	eval DPID$n=$!
	i=0
	until [ -S "$WORK/d$n.sock" ]; do
		eval pid=\$DPID$n
		if ! kill -0 "$pid" 2>/dev/null; then
			if grep -Eq 'Permission denied|not supported|No such device' "$WORK/d$n.log"; then
				echo "SKIP: nmiprofd cannot sample here: $(tail -n 1 "$WORK/d$n.log")"
				exit 77
			fi
			fail "nmiprofd $n exited"
		fi
		i=$((i + 1))
		[ $i -lt 100 ] || fail "nmiprofd $n: no socket after 10 s"
		sleep 0.1
	done
}
stop_daemon() {	# N [SIGNAL]
	eval pid=\$DPID$1
	kill -"${2:-TERM}" "$pid" 2>/dev/null
	wait "$pid" 2>/dev/null
	eval DPID$1=
	rm -f "$WORK/d$1.sock"
}
conf() {	# N URL; no retention by age: the fixture's lockups are old
	printf 'clickhouse_url = %s\nretention_age = 0\n' "$2" >"$WORK/d$1.conf"
}
cursor() {	# N: start_ns of the newest slice the server acknowledged
	sed -n 's/^start_ns=//p' "$WORK/s$1/fleet.cursor" 2>/dev/null || echo 0
}
# Wait (bounded, not failing) until daemon N's cursor is for database DB.
wait_cursor_db() {	# N DB
	i=0
	until grep -q "^server=.* $2\$" "$WORK/s$1/fleet.cursor" 2>/dev/null; do
		i=$((i + 1))
		[ $i -lt 50 ] || { echo "note: daemon $1's cursor names no server $2"; return; }
		sleep 0.1
	done
}
newest_slice() {	# N: start_ns of the newest stored slice
	name=$(ls "$WORK/s$1/profile" | grep '^seg-' | sort | tail -n 1)
	[ -n "$name" ] || { echo 0; return; }
	printf '%d\n' "0x${name:4:16}"
}
# Wait until daemon N sent every slice stored when the wait began (bounded).
wait_synced() {
	target=$(newest_slice "$1")
	i=0
	while [ "$(cursor "$1")" -lt "$target" ]; do
		i=$((i + 1))
		[ $i -lt 600 ] || fail "daemon $1 not caught up after 60 s (cursor $(cursor "$1"), target $target)"
		sleep 0.1
	done
}
# The cursor moves with each slice sent; the recovery line comes after
# the last (and the lockups' insert): wait for it, up to 10 s.
wait_recovered() {	# N WANT: daemon N's log has WANT recovery lines
	i=0
	while [ "$(grep -c 'fleet: export to .* works again' "$WORK/d$1.log")" -lt "$2" ] &&
		[ $i -lt 100 ]; do
		i=$((i + 1))
		sleep 0.1
	done
}
# Folded stacks with their counts summed (the local store has one line
# per pid, the cluster one per comm and stack).
folded() {
	"$NMIPROF" export "$@" | awk '{ c = $NF; $NF = ""; a[$0] += c }
		END { for (k in a) print k a[k] }' | LC_ALL=C sort
}
# Compare every stack each host sent (up to its cursor: the slice a
# daemon writes as it stops is sent at its next start), and both together
# up to the older cursor.
compare() {	# WHAT
	u1=$(( $(cursor 1) / 1000000000 )) u2=$(( $(cursor 2) / 1000000000 ))
	u=$(( u1 < u2 ? u1 : u2 ))
	folded --store "$WORK/s1" --until "@$u1" >"$WORK/l1.folded" || fail "export s1"
	folded --store "$WORK/s2" --until "@$u2" >"$WORK/l2.folded" || fail "export s2"
	folded --cluster "$U1" --host web-1 --until "@$u1" >"$WORK/c1.folded" ||
		fail "export --cluster --host web-1"
	folded --cluster "$U2" --host 'db-?' --until "@$u2" >"$WORK/c2.folded" ||
		fail "export --cluster --host db-?"
	{ folded --store "$WORK/s1" --until "@$u"; folded --store "$WORK/s2" --until "@$u"; } |
		awk '{ c = $NF; $NF = ""; a[$0] += c }
		END { for (k in a) print k a[k] }' | LC_ALL=C sort >"$WORK/lall.folded"
	folded --cluster "$U1" --until "@$u" >"$WORK/call.folded" ||
		fail "export --cluster"
	for h in 1 2 all; do
		cmp -s "$WORK/l$h.folded" "$WORK/c$h.folded" ||
			{ diff "$WORK/l$h.folded" "$WORK/c$h.folded" | head -n 10
			  fail "$1: cluster stacks differ from the local store ($h)"; }
	done
	n1=$(awk '{ s += $NF } END { print s + 0 }' "$WORK/l1.folded")
	n2=$(awk '{ s += $NF } END { print s + 0 }' "$WORK/l2.folded")
	[ "$n1" -gt 100 ] && [ "$n2" -gt 100 ] || fail "$1: too few samples ($n1, $n2)"
	pass "$1: cluster = union of the local stores: $n1 + $n2 samples in $(wc -l <"$WORK/lall.folded") stacks, per host and in total"
}
# The report's table (the server ranks the rows) against each host's local
# store's, sorted and filtered many ways: the same rows, weights, order
# and "shown" total.  The first two lines name the source.
table() { tail -n +3; }
compare_reports() {	# WHAT
	u1=$(( $(cursor 1) / 1000000000 ))
	k=0
	for o in "" "-n 5" "--children" "-K" "-U -n 7" "-s sym" "-s dso" \
		"-s comm" "-s pid,sym --children" "-s comm,pid,dso,sym -n 3" \
		"--comm hot" "-U -s dso,comm --children" "--percent-limit 1"; do
		# shellcheck disable=SC2086
		"$NMIPROF" report --store "$WORK/s1" --until "@$u1" $o | table >"$WORK/rl.txt" ||
			fail "$1: report --store $o"
		# shellcheck disable=SC2086
		"$NMIPROF" report --cluster "$U1" --host web-1 --until "@$u1" $o | table \
			>"$WORK/rc.txt" || fail "$1: report --cluster $o"
		cmp -s "$WORK/rl.txt" "$WORK/rc.txt" ||
			{ diff "$WORK/rl.txt" "$WORK/rc.txt" | head -n 10
			  fail "$1: report --cluster $o differs from the local store's"; }
		k=$((k + $(grep -c . "$WORK/rc.txt")))
	done
	pass "$1: report --cluster = the local store's report, 13 ways ($k lines)"
}
# report --sort host [--symbol S] against the two local stores: a host's
# samples, and those whose innermost shown frame is S (self) or with any
# shown frame S (children), as its folded stacks (-U/-K as given) count them.
compare_hosts() {	# WHAT
	u1=$(( $(cursor 1) / 1000000000 )) u2=$(( $(cursor 2) / 1000000000 ))
	u=$(( u1 < u2 ? u1 : u2 ))
	k=0
	for h in 1 2; do
		for fl in "" -U -K; do
			# shellcheck disable=SC2086
			"$NMIPROF" export --store "$WORK/s$h" --until "@$u" --no-comm $fl \
				>"$WORK/h$h$fl.folded" || fail "$1: export s$h $fl"
		done
	done
	for o in "" "-n 1" "--symbol hot_a" "--symbol main" "--symbol hot_b -U" \
		"--symbol hot_a -K" "--symbol clock_ns -n 1"; do
		sym=$(echo "$o" | sed -n 's/.*--symbol \([^ ]*\).*/\1/p')
		fl=$(echo "$o" | grep -o -- '-[UK]')
		n=$(echo "$o" | sed -n 's/.*-n \([0-9]*\).*/\1/p')
		for h in 1 2; do
			host=web-1; [ $h = 2 ] && host=db-1
			awk -v s="$sym" -v h="$host" '{
				c = $NF; sub(/ [0-9]+$/, ""); n = split($0, f, ";")
				for (i = n; i > 0; i--) if (f[i] == s) { a += c; if (i == n) l += c; break }
			} END { printf "%s %d %d\n", h, l, a }' "$WORK/h$h$fl.folded"
			awk '{ t += $NF } END { print t + 0 }' "$WORK/h$h.folded"
		done | paste - - | awk -v s="$sym" -v n="$n" -v url="$U1" '
			{ h[NR] = $1; l[NR] = $2; a[NR] = $3; t[NR] = $4; all += $4 }
			END {
				printf "# nmiprof report: %s\n# samples: %d  hosts: %d  sort: host%s\n#\n",
					url, all, NR, s != "" ? "  symbol: " s : ""
				if (s != "") printf "%12s %12s %12s  %s\n", "Self", "Children", "Samples", "Host"
				else printf "%8s %12s  %s\n", "Overhead", "Samples", "Host"
				# host_cmp: self (else the total), children, name
				i = 1; j = 2
				ki = l[1] ? l[1] : t[1]; kj = l[2] ? l[2] : t[2]
				if (kj > ki || (kj == ki && (a[2] > a[1] || (a[2] == a[1] && h[2] < h[1])))) { i = 2; j = 1 }
				split(i " " j, ord, " ")
				for (r = 1; r <= 2 && (n == "" || r <= n); r++) {
					x = ord[r]
					if (s != "" && !a[x]) continue
					if (s != "") printf "%12d %12d %12d  %s\n", l[x], a[x], t[x], h[x]
					else printf "%7.2f%% %12d  %s\n", all ? 100 * t[x] / all : 0, t[x], h[x]
				}
			}' >"$WORK/hl.txt"
		# shellcheck disable=SC2086
		"$NMIPROF" report --cluster "$U1" --until "@$u" --sort host $o >"$WORK/hc.txt" ||
			fail "$1: report --sort host $o"
		cmp -s "$WORK/hl.txt" "$WORK/hc.txt" ||
			{ diff "$WORK/hl.txt" "$WORK/hc.txt"; fail "$1: report --sort host $o differs from the local stores'"; }
		k=$((k + $(grep -c . "$WORK/hc.txt")))
	done
	pass "$1: report --cluster --sort host = the local stores', 7 ways ($k lines)"
}
# No (host, slice) committed twice; committed batches' samples are the totals.
check_no_dups() {
	d=$(ch_q 1 "SELECT count() FROM (SELECT host, start, count() AS c FROM nmiprof.slices GROUP BY host, start HAVING c > 1)")
	[ "$d" = 0 ] || fail "$1: $d slice(s) committed twice"
	a=$(ch_q 1 "SELECT sum(samples) FROM nmiprof.slices")
	b=$(ch_q 1 "SELECT sum(count) FROM nmiprof.samples WHERE batch IN (SELECT batch FROM nmiprof.slices_local)")
	[ "$a" = "$b" ] || fail "$1: slices count $a samples, their batches hold $b"
	o=$(ch_q 1 "SELECT count() FROM nmiprof.samples WHERE batch NOT IN (SELECT batch FROM nmiprof.slices_local)")
	pass "$1: no slice committed twice ($a samples; $o row(s) of uncommitted attempts, never counted)"
}

# Lockups DB holds of web-1 as "id flags" lines, sorted, against the
# store's ids with gen_fixture's flags (CPU 2's record: hard, at least
# and the unknown bit 0x8000; the others hard) or NULL (not sent).
check_lockups() {	# DB WHAT [WANT_FLAGS]
	ch_q 1 "SELECT DISTINCT id, ifNull(toString(flags), 'NULL') FROM $1.lockups
		WHERE host = 'web-1' ORDER BY id FORMAT TabSeparated" >"$WORK/lk.c.txt" ||
		fail "$2: lockups: $(cat "$WORK/lk.c.txt")"
	"$NMIPROF" lockups list --store "$WORK/s1" | awk -v f="${3:-}" '
		NR > 1 { print $1 "\t" (f == "" ? "NULL" : $1 ~ /-cpu2$/ ? 32777 : 1) }' |
		sort >"$WORK/lk.l.txt"
	[ "$(wc -l <"$WORK/lk.l.txt")" = 3 ] || fail "$2: the store lists $(cat "$WORK/lk.l.txt")"
	cmp -s "$WORK/lk.l.txt" "$WORK/lk.c.txt" ||
		{ diff "$WORK/lk.l.txt" "$WORK/lk.c.txt"; fail "$2: lockups on the server differ"; }
}

# `nmiprof lockups --cluster` of web-1 against `lockups --store`: the same
# list (no EP; FLAGS "?" and no lower bound where the server has no
# flags) and, for each, the
# same task and kernel stack (no addresses on the server).
check_lockups_cli() {	# URL WHAT [NOFLAGS]
	"$NMIPROF" lockups list --store "$WORK/s1" | awk -v q="${3:-}" '
		NR > 1 { $2 = "web-1"; if (q != "") { $NF = "?"; sub(/^>=/, "", $(NF - 1)) }
			 print }' | sort >"$WORK/lkl.l.txt"
	"$NMIPROF" lockups list --cluster "$1" --host 'web-*' --label tier=web |
		awk 'NR > 1 { h = $1; $1 = $2; $2 = h; print }' | sort >"$WORK/lkl.c.txt"
	[ "$(wc -l <"$WORK/lkl.l.txt")" = 3 ] && cmp -s "$WORK/lkl.l.txt" "$WORK/lkl.c.txt" ||
		{ diff "$WORK/lkl.l.txt" "$WORK/lkl.c.txt"; fail "$2: lockups list --cluster differs"; }
	for id in $(awk '{ print $1 }' "$WORK/lkl.l.txt"); do
		"$NMIPROF" lockups show --store "$WORK/s1" "$id" | awk '
			/^  (cpu|task):/ { print } /^  #/ { print $1, $3, $4 }' >"$WORK/lks.l.txt"
		# unnamed: "[unknown] DSO+0xOFF" there, "ADDRESS [unknown]" here
		"$NMIPROF" lockups show --cluster "$1" "$id" | awk '
			/^  (cpu|task):/ { print } /^  #/ { print $1, $2, ($2 == "[unknown]" ? "" : $3) }' \
			>"$WORK/lks.c.txt"
		[ -s "$WORK/lks.l.txt" ] && cmp -s "$WORK/lks.l.txt" "$WORK/lks.c.txt" ||
			{ diff "$WORK/lks.l.txt" "$WORK/lks.c.txt"; fail "$2: lockups show --cluster $id differs"; }
	done
	for sel in "--host db-*" "--label tier=db" "--until 2025-12-31"; do
		# shellcheck disable=SC2086
		out=$("$NMIPROF" lockups list --cluster "$1" $sel) &&
			[ "${out#no lockups on }" != "$out" ] || fail "$2: lockups list $sel: $out"
	done
	"$NMIPROF" lockups show --cluster "$1" lockup-0-cpu0 >/dev/null 2>&1
	rc=$?
	[ $rc = 5 ] || fail "$2: lockups show of an unknown id: exit $rc, not 5"
}

# ---- 1. two hosts, two shards -----------------------------------------
mkdir -p "$WORK/s1"
"$GEN_FIXTURE" "$WORK/fixture.nmp" "$WORK/fixture" && cp -r "$WORK/fixture/lockups" "$WORK/s1/" ||
	fail "gen_fixture"
conf 1 "$U1"
conf 2 "$U2"
start_daemon 1 web-1 tier=web,dc=a
start_daemon 2 db-1 tier=db,dc=a
"$HOT" 3 >/dev/null 2>&1
wait_synced 1
wait_synced 2
stop_daemon 1
stop_daemon 2
compare "two hosts"
check_lockups nmiprof "1: lockups" flags
check_lockups_cli "$U1" "1: lockups"
compare_reports "two hosts"
compare_hosts "two hosts"

"$NMIPROF" report --cluster "$U1" --sort host >"$WORK/byhost.txt" || fail "report --sort host"
grep -Eq '^ +[0-9.]+% +[0-9]+ +web-1$' "$WORK/byhost.txt" &&
	grep -Eq '^ +[0-9.]+% +[0-9]+ +db-1$' "$WORK/byhost.txt" ||
	{ cat "$WORK/byhost.txt"; fail "--sort host lacks a host"; }
"$NMIPROF" report --cluster "$U1" --sort host --symbol hot_a >"$WORK/byhost_a.txt" ||
	fail "report --sort host --symbol"
[ "$(grep -Ec ' (web|db)-1$' "$WORK/byhost_a.txt")" = 2 ] ||
	{ cat "$WORK/byhost_a.txt"; fail "hot_a not found on both hosts"; }
"$NMIPROF" report --cluster "$U1" --label tier=db --sort host >"$WORK/label.txt" ||
	fail "report --label"
grep -q ' db-1$' "$WORK/label.txt" && ! grep -q ' web-1$' "$WORK/label.txt" ||
	{ cat "$WORK/label.txt"; fail "--label tier=db selects the wrong hosts"; }
"$NMIPROF" report --cluster "$U1" -n 5 >"$WORK/report.txt" || fail "report --cluster"
grep -q 'hot_a$' "$WORK/report.txt" || { cat "$WORK/report.txt"; fail "hot_a not in the top 5"; }
pass "--sort host, --symbol, --label, top rows"

# Per-day rollups: the queries read them for the (host, day)s they cover
# whole (all the server has: the comparisons above stop a slice short),
# with the same results as without; doubled rows of web-1's show that
# they do.  Section 2 adds slices: the rollups go stale, and its
# comparisons show that the queries then leave them.
snap() {	# DIR: the cluster's answers, whole
	mkdir -p "$WORK/$1"
	k=0
	for o in "--sort host" "" "-U -s pid,sym" "--comm hot -s comm --children" \
		"--host web-1 -K -s dso" "--sort host --symbol hot_a -U" "-g -n 3"; do
		k=$((k + 1))
		# shellcheck disable=SC2086
		"$NMIPROF" report --cluster "$U1" $o >"$WORK/$1/r$k.txt" || fail "$1: report $o"
	done
	folded --cluster "$U1" >"$WORK/$1/all.folded" || fail "$1: export"
}
snap raw
"$NMIPROF" cluster rollup --today "$U1" "$U2" >"$WORK/rollup.log" 2>&1 ||
	fail "cluster rollup"
nr=$(ch_q 1 "SELECT count() FROM nmiprof.rollups")
[ "$nr" -ge 2 ] || { cat "$WORK/rollup.log"; fail "cluster rollup: $nr rollups"; }
"$NMIPROF" cluster rollup --today "$U1" "$U2" | grep -c ': 0 host-day' | grep -qx 2 ||
	fail "cluster rollup again: not idempotent"
snap rolled
diff -r "$WORK/raw" "$WORK/rolled" | head -n 20
diff -rq "$WORK/raw" "$WORK/rolled" >/dev/null || fail "rolled up: the answers differ"
s1=$(awk '$NF == "web-1" { print $(NF - 1) }' "$WORK/raw/r1.txt")
ch_q 1 "INSERT INTO nmiprof.samples_day (day, host, rollup, pid, comm, stack, count)
	SELECT day, host, rollup, pid, comm, stack, count FROM nmiprof.samples_day
	WHERE host = 'web-1'" insert_distributed_sync=1 || fail "doubling web-1's rollup"
s2=$("$NMIPROF" report --cluster "$U1" --sort host | awk '$NF == "web-1" { print $(NF - 1) }')
[ "$s2" = $((s1 * 2)) ] || fail "web-1's doubled rollup: $s1 samples, then $s2"
for n in 1 2; do
	for t in samples_day_local rollups_local; do
		for d in $(ch_q $n "SELECT DISTINCT partition FROM system.parts
			WHERE database = 'nmiprof' AND table = '$t' AND active"); do
			ch_q $n "ALTER TABLE nmiprof.$t DROP PARTITION '$d'" || fail "drop $t $d"
		done
	done
done
pass "rolled up: $nr (host, day)s, read, $(cat "$WORK"/raw/* | wc -l) lines of answers the same"
"$NMIPROF" cluster rollup --today "$U1" "$U2" >>"$WORK/rollup.log" 2>&1 ||
	fail "cluster rollup"

# Frames of hot carry hot's build-id (readelf -n), none another one;
# with ANY, frames without one are allowed (sent before the column was).
# This hot by its path: the daemons see every process, and other builds'
# tests may run their own hot meanwhile.
HOT_BID=$(readelf -n "$HOT" | sed -n 's/^ *Build ID: *//p')
HOT_PATH=$(readlink -f "$HOT")
check_bid() {	# DB WHAT [ANY]
	[ -n "$HOT_BID" ] || { echo "note: $HOT has no build-id: not checked"; return; }
	good=$(ch_q 1 "SELECT count() FROM $1.frames WHERE dso = '$HOT_PATH' AND build_id = '$HOT_BID'")
	bad=$(ch_q 1 "SELECT count() FROM $1.frames WHERE dso = '$HOT_PATH'
		AND build_id NOT IN ('$HOT_BID'${3:+, ''})")
	[ "$good" -gt 0 ] && [ "$bad" = 0 ] ||
		fail "$2: frames of hot: $good with its build-id $HOT_BID, $bad with another"
	pass "$2: $good frame(s) of hot carry its build-id $HOT_BID"
}
check_bid nmiprof "1"
# export --cluster -f pprof: hot's Mapping has its build-id (WANT: "-" none)
check_pprof_bid() {	# URL WHAT WANT
	[ -n "$HOT_BID" ] || return
	"$NMIPROF" export --cluster "$1" -f pprof -o "$WORK/c.pb" ||
		fail "$2: export --cluster -f pprof"
	sh "$HERE/../cli/pprof_mappings.sh" "$WORK/c.pb" "$HERE/../cli" >"$WORK/maps.txt"
	case $? in
	0) ;;
	77) echo "note: protoc not installed: pprof build-ids not checked"; return ;;
	*) fail "$2: pprof_mappings.sh" ;;
	esac
	got=$(awk -v f="$HOT_PATH" '$1 == f { print $2 }' "$WORK/maps.txt")
	[ "$got" = "$3" ] ||
		{ cat "$WORK/maps.txt"; fail "$2: pprof Mapping of hot: build-id '$got', want '$3'"; }
	pass "$2: export --cluster -f pprof: hot's Mapping has build-id $got"
}
check_pprof_bid "$U1" "1" "$HOT_BID"

# ---- 2. a server down for two slices -----------------------------------
start_daemon 1 web-1 tier=web,dc=a
start_daemon 2 db-1 tier=db,dc=a
"$HOT" 6 >/dev/null 2>&1 &
HPID=$!
sleep 1
ch_stop 1
sleep 2.5
ch_start 1 "$WORK/ch1" || fail "server 1 restart"
wait "$HPID"; HPID=
wait_synced 1
wait_synced 2
# One line per state change: each failure line has its recovery line
# (a loaded machine may add a timeout; retries add nothing).
nf=$(grep -c 'fleet: export to .* fails' "$WORK/d1.log")
wait_recovered 1 "$nf"
nw=$(grep -c 'fleet: export to .* works again' "$WORK/d1.log")
[ "$nf" -ge 1 ] && [ "$nf" = "$nw" ] ||
	fail "daemon 1: $nf failure and $nw recovery lines"
stop_daemon 1
stop_daemon 2
compare "server down, caught up"
check_no_dups "server down"

# ---- 3. kill -9 mid-export; a cursor one slice behind --------------------
start_daemon 1 web-1 tier=web,dc=a
"$HOT" 5 >/dev/null 2>&1 &
HPID=$!
ch_stop 1			# a backlog builds up
sleep 3
ch_start 1 "$WORK/ch1" || fail "server 1 restart"
sleep 0.3			# catching up
stop_daemon 1 KILL
wait "$HPID"; HPID=
# The crash between an insert and the cursor write: the cursor one slice back.
prev=$(ls "$WORK/s1/profile" | grep '^seg-' | sort | while read -r n; do
	v=$(printf '%d' "0x${n:4:16}"); [ "$v" -lt "$(cursor 1)" ] && echo "$v"; done | tail -n 1)
[ -n "$prev" ] || fail "no slice before the cursor"
sed -i "s/^start_ns=.*/start_ns=$prev/" "$WORK/s1/fleet.cursor"
start_daemon 1 web-1 tier=web,dc=a
start_daemon 2 db-1 tier=db,dc=a
wait_synced 1
wait_synced 2
grep -q 'already on the server' "$WORK/d1.log" ||
	fail "the slice behind the cursor was not recognized as sent"
stop_daemon 1
stop_daemon 2
compare "kill -9 and a stale cursor"
check_no_dups "kill -9 and a stale cursor"

# ---- 4. a server that errors, hangs, closes mid-insert --------------------
rss() { awk '/^VmRSS:/ { print $2 }' "/proc/$DPID1/status"; }
# RSS (kB) less what the daemon accounts to its live view, current slice,
# store dictionary and symbols: those grow with the workload (a new
# process's stacks and symbols), with or without an exporter; a leak in
# the exporter shows in the rest.
unaccounted() {
	"$NMIPROF" status --socket "$WORK/d1.sock" 2>/dev/null | awk '/^memory:/ {
		gsub(/[,;]/, " "); print int(($3 - $7 - $10 - $13 - $15) * 1024) }'
}
samples() { "$NMIPROF" status --socket "$WORK/d1.sock" 2>/dev/null | sed -n 's/^samples: *\([0-9]*\).*/\1/p'; }
: >"$WORK/fake.req"
fails0=$(grep -c 'fleet: export to .* fails' "$WORK/d1.log")
works0=$(grep -c 'fleet: export to .* works again' "$WORK/d1.log")
TIMEOUT=2 start_daemon 1 web-1 tier=web,dc=a
wait_synced 1
"$HOT" 16 >/dev/null 2>&1 &
HPID=$!
p=0
for mode in error hang close; do
	port=$((FAKE_PORT + p)); p=$((p + 1))
	python3 "$HERE/fake_ch.py" "$mode" "$port" "$WORK/fake.req" 6 &
	FPID=$!
	sleep 0.3
	conf 1 "http://127.0.0.1:$port/?database=nmiprof"
	kill -HUP "$DPID1"
	[ $mode = error ] && { sleep 1; s0=$(samples); r0=$(rss); u0=$(unaccounted); }
	sleep 4.5
	kill -0 "$DPID1" || fail "$mode: the daemon died"
	wait "$FPID"; FPID=
done
s1=$(samples); r1=$(rss); u1=$(unaccounted)
req=$(grep -c . "$WORK/fake.req")
fails=$(( $(grep -c 'fleet: export to .* fails' "$WORK/d1.log") - fails0 ))
echo "fake servers: $req request(s) in ~15 s of 1 s slices; samples $s0 -> $s1; RSS $r0 -> $r1 kB, not accounted to live view, slice, store, symbols $u0 -> $u1 kB"
[ "$fails" = 1 ] || fail "errors, hangs and resets should log one failure line, not $fails"
[ "$s1" -gt "$s0" ] || fail "sampling stopped while the server failed"
[ "$req" -ge 3 ] && [ "$req" -le 12 ] || fail "$req requests: no retries, or no backoff"
for mode in error hang close; do
	grep -q "^$mode\$" "$WORK/fake.req" || fail "the $mode server was never tried"
done
# ASan's quarantine holds freed memory back: RSS says nothing there
case ${ASAN_OPTIONS:-} in
'') [ -n "$u0" ] && [ -n "$u1" ] || fail "no memory line in the status"
    [ $((u1 - u0)) -lt 4096 ] || fail "memory grew by $((u1 - u0)) kB while failing" ;;
*) echo "memory: not checked under ASan (its quarantine keeps freed blocks)" ;;
esac
conf 1 "$U1"
kill -HUP "$DPID1"
wait "$HPID"; HPID=
wait_synced 1
wait_recovered 1 $((works0 + 1))
[ $(( $(grep -c 'fleet: export to .* works again' "$WORK/d1.log") - works0 )) = 1 ] ||
	fail "the recovery from the fake servers was not logged once"
# A slice a second: one may be on its way as status asks (bounded retry).
i=0
until "$NMIPROF" status --socket "$WORK/d1.sock" >"$WORK/status.txt" &&
	grep -q '^fleet: *ok to http://127.0.0.1:[0-9]*/ as web-1; .* 0 waiting; lost to retention before sent: 0 slice' \
	"$WORK/status.txt"; do
	i=$((i + 1))
	[ $i -lt 20 ] || { cat "$WORK/status.txt"; fail "status: fleet line"; }
	sleep 0.1
done
stop_daemon 1
compare "after the failing servers"
check_no_dups "after the failing servers"
pass "failing servers: one log line each way, backoff, flat memory, then caught up"

# ---- 5. another database: the cursor was the old one's -------------------
# Daemon 1's whole store (up to its cursor) against what DB holds of web-1:
# the same slices, the same stacks.
compare_db() {	# WHAT URL DB
	c=$(cursor 1)
	folded --store "$WORK/s1" --until "@$((c / 1000000000))" >"$WORK/l1.folded" ||
		fail "export s1"
	folded --cluster "$2" --host web-1 --until "@$((c / 1000000000))" >"$WORK/c1.folded" ||
		fail "export --cluster $3"
	nl=$(ls "$WORK/s1/profile" | grep '^seg-' | while read -r n; do
		[ "$(printf '%d' "0x${n:4:16}")" -le "$c" ] && echo; done | wc -l)
	ns=$(ch_q 1 "SELECT uniqExact(start) FROM $3.slices WHERE host = 'web-1' AND start <= $c")
	[ "$nl" = "$ns" ] || fail "$1: $ns slice(s) of web-1 in $3, $nl in the store"
	cmp -s "$WORK/l1.folded" "$WORK/c1.folded" ||
		{ diff "$WORK/l1.folded" "$WORK/c1.folded" | head -n 10
		  fail "$1: $3's stacks differ from the local store"; }
	pass "$1: $3 holds the whole store: $nl slices, $(awk '{ s += $NF } END { print s + 0 }' "$WORK/l1.folded") samples"
}
B1="${U1%=*}=nmiprof_b"
"$NMIPROF" cluster init --name fleet "$B1" "${U2%=*}=nmiprof_b" \
	>>"$WORK/init.log" 2>&1 || fail "cluster init of nmiprof_b"
start_daemon 1 web-1 tier=web,dc=a
wait_synced 1
conf 1 "$B1"
kill -HUP "$DPID1"
wait_cursor_db 1 nmiprof_b
wait_synced 1
stop_daemon 1
compare_db "new database by SIGHUP" "$B1" nmiprof_b
# Back to the first by a restart: it lacks the slices nmiprof_b got.
held0=$(grep -c 'were already on the server' "$WORK/d1.log")
conf 1 "$U1"
start_daemon 1 web-1 tier=web,dc=a
wait_cursor_db 1 nmiprof
wait_synced 1
stop_daemon 1
[ "$(grep -c 'were already on the server' "$WORK/d1.log")" -gt "$held0" ] ||
	fail "back on the first database: the slices it had were not recognized"
compare_db "back to the first database by a restart" "$U1" nmiprof
check_no_dups "back to the first database by a restart"

# ---- 6. a server made by the first schema -------------------------------
# Its stacks hold their frames inline (stacks, no frame dictionary); the
# queries read them there, before and after `cluster init` adds the
# dictionary's tables.  The same slices as nmiprof, frames looked up.
ch_do() {	# N SQL: fail on any reply
	r=$(ch_q "$@" 2>&1)
	[ -z "$r" ] || fail "6: $r"
}
V1="${U1%=*}=nmiprof_v1"
for n in 1 2; do
	ch_do $n "CREATE DATABASE nmiprof_v1"
	ch_do $n "CREATE TABLE nmiprof_v1.samples_local AS nmiprof.samples_local"
	ch_do $n "CREATE TABLE nmiprof_v1.slices_local AS nmiprof.slices_local"
	ch_do $n "CREATE TABLE nmiprof_v1.stacks_local (day Date DEFAULT toDate(time),
		time DateTime, stack UInt64, kernel Array(UInt8), dsos Array(String),
		funcs Array(String), offsets Array(UInt64))
		ENGINE = ReplacingMergeTree PARTITION BY day ORDER BY stack"
	for t in samples:'cityHash64(host)' slices:'cityHash64(host)' stacks:stack; do
		ch_do $n "CREATE TABLE nmiprof_v1.${t%%:*} AS nmiprof_v1.${t%%:*}_local
			ENGINE = Distributed(fleet, nmiprof_v1, ${t%%:*}_local, ${t#*:})"
	done
	ch_do $n "INSERT INTO nmiprof_v1.samples_local SELECT * FROM nmiprof.samples_local"
	ch_do $n "INSERT INTO nmiprof_v1.slices_local SELECT * FROM nmiprof.slices_local"
done
ch_do 1 "INSERT INTO nmiprof_v1.stacks (time, stack, kernel, dsos, funcs, offsets)
SELECT t, stack, arrayMap(x -> tupleElement(x, 2), s), arrayMap(x -> tupleElement(x, 3), s),
  arrayMap(x -> tupleElement(x, 4), s), arrayMap(x -> tupleElement(x, 5), s)
FROM (SELECT stack, any(t) AS t, arraySort(groupArray((n, kernel, dso, func, off))) AS s
  FROM (SELECT stack, t, f, n FROM (SELECT stack, min(time) AS t, any(frames) AS frames
      FROM nmiprof.stack_frames GROUP BY stack)
    ARRAY JOIN frames AS f, arrayEnumerate(frames) AS n)
  GLOBAL ANY LEFT JOIN (SELECT frame AS f, kernel, dso, func, off FROM nmiprof.frames) USING f
  GROUP BY stack)" insert_distributed_sync=1
folded --cluster "$U1" >"$WORK/dict.folded" || fail "6: export --cluster"
folded --cluster "$V1" >"$WORK/v1.folded" || fail "6: export --cluster of the first schema"
# The first schema's rows come from its stacks (the client sums them), the
# frame dictionary's from the server: the same table.
for o in "" "-K --children" "-s pid,dso -n 4"; do
	# shellcheck disable=SC2086
	"$NMIPROF" report --cluster "$V1" $o | tail -n +2 >"$WORK/rv1.txt" || fail "6: report $o"
	# shellcheck disable=SC2086
	"$NMIPROF" report --cluster "$U1" $o | tail -n +2 >"$WORK/rdict.txt" || fail "6: report $o"
	cmp -s "$WORK/rv1.txt" "$WORK/rdict.txt" ||
		{ diff "$WORK/rv1.txt" "$WORK/rdict.txt" | head; fail "6: report $o: the server's rows differ"; }
done
cmp -s "$WORK/dict.folded" "$WORK/v1.folded" ||
	{ diff "$WORK/dict.folded" "$WORK/v1.folded" | head; fail "6: the first schema's stacks differ"; }
"$NMIPROF" cluster init --name fleet "$V1" "${U2%=*}=nmiprof_v1" \
	>>"$WORK/init.log" 2>&1 || fail "6: cluster init over the first schema"
[ "$(ch_q 2 "SELECT count() FROM system.tables WHERE database = 'nmiprof_v1'
	AND name IN ('stacks', 'stack_frames', 'frames')")" = 3 ] || fail "6: tables after init"
folded --cluster "$V1" >"$WORK/v1.folded" || fail "6: export --cluster after init"
cmp -s "$WORK/dict.folded" "$WORK/v1.folded" ||
	{ diff "$WORK/dict.folded" "$WORK/v1.folded" | head; fail "6: stacks differ after init"; }
pass "6: a server of the first schema, before and after cluster init: $(wc -l <"$WORK/v1.folded") stacks as with the frame dictionary"

# ---- 7. frames without build_id, samples without comm_hash ------------
V2="${U1%=*}=nmiprof_v2" V2B="${U2%=*}=nmiprof_v2"
"$NMIPROF" cluster init --name fleet "$V2" "$V2B" >>"$WORK/init.log" 2>&1 ||
	fail "7: cluster init"
for n in 1 2; do
	ch_do $n "ALTER TABLE nmiprof_v2.frames DROP COLUMN build_id"
	ch_do $n "ALTER TABLE nmiprof_v2.frames_local DROP COLUMN build_id"
	ch_do $n "ALTER TABLE nmiprof_v2.samples DROP COLUMN comm_hash"
	ch_do $n "ALTER TABLE nmiprof_v2.samples_local DROP COLUMN comm_hash"
	ch_do $n "ALTER TABLE nmiprof_v2.lockups DROP COLUMN flags"
	ch_do $n "ALTER TABLE nmiprof_v2.lockups_local DROP COLUMN flags"
done
bid_cols() {	# the three columns in both tables: 6
	ch_q "$1" "SELECT count() FROM system.columns WHERE database = 'nmiprof_v2'
		AND (table IN ('frames', 'frames_local') AND name = 'build_id'
		  OR table IN ('samples', 'samples_local') AND name = 'comm_hash'
		  OR table IN ('lockups', 'lockups_local') AND name = 'flags')"
}
[ "$(bid_cols 1)" = 0 ] && [ "$(bid_cols 2)" = 0 ] ||
	fail "7: the second schema's columns: $(bid_cols 1) and $(bid_cols 2) of 0"
report_v2() {	# WHAT: the top rows from the local store and the server
	"$NMIPROF" report --store "$WORK/s1" --until "@$(($(cursor 1) / 1000000000))" -n 20 |
		table >"$WORK/v2.l.txt" || fail "$1: report --store"
	"$NMIPROF" report --cluster "$V2" --host web-1 --until "@$(($(cursor 1) / 1000000000))" -n 20 |
		table >"$WORK/v2.c.txt" || fail "$1: report --cluster"
	cmp -s "$WORK/v2.l.txt" "$WORK/v2.c.txt" ||
		{ diff "$WORK/v2.l.txt" "$WORK/v2.c.txt" | head; fail "$1: the top rows differ"; }
}
conf 1 "$V2"
start_daemon 1 web-1 tier=web,dc=a
"$HOT" 1 >/dev/null 2>&1
wait_cursor_db 1 nmiprof_v2
wait_synced 1
stop_daemon 1
compare_db "7: frames without build_id" "$V2" nmiprof_v2
check_pprof_bid "$V2" "7: frames without build_id" -
report_v2 "7: samples without comm_hash"
n=$(ch_q 1 "SELECT count(DISTINCT id) FROM nmiprof_v2.lockups WHERE host = 'web-1'")
[ "$n" = 3 ] || fail "7: lockups without flags: $n of 3 on the server"
check_lockups_cli "$V2" "7: lockups without flags" noflags
for i in 1 2; do
	"$NMIPROF" cluster init --name fleet "$V2" "$V2B" >>"$WORK/init.log" 2>&1 ||
		fail "7: cluster init adding build_id ($i)"
done
[ "$(bid_cols 1)" = 6 ] && [ "$(bid_cols 2)" = 6 ] ||
	fail "7: columns after cluster init: $(bid_cols 1) and $(bid_cols 2) of 6"
report_v2 "7: comm_hash added, older parts"
check_lockups nmiprof_v2 "7: lockups sent before flags"
start_daemon 1 web-1 tier=web,dc=a
"$HOT" 1 >/dev/null 2>&1
wait_synced 1
stop_daemon 1
compare_db "7: after cluster init added build_id" "$V2" nmiprof_v2
report_v2 "7: comm_hash added, older and newer parts"
check_bid nmiprof_v2 "7: after cluster init" any
check_pprof_bid "$V2" "7: after cluster init" "$HOT_BID"
pass "7: the second schema, then cluster init adds build_id, comm_hash and flags on both shards"

# ---- 8. the packaged upkeep: nmiprof-cluster.service's commands ------
# As systemd runs them: ExecCondition and each ExecStart of the unit,
# with cluster.conf's keys (the shipped file, then this cluster's URLs).
# Prune drops the day of gen_fixture's lockups (2026-01-01), not today's
# samples.
UNIT=$HERE/../../packaging/systemd/nmiprof-cluster.service
unit_run() {	# KEY CONF: run the unit's KEY= lines, their output in unit.log
	(set -f -a; . "$2"; set +a
	 sed -n "s|^$1=||p" "$UNIT" | sed "s|/usr/bin/nmiprof |$NMIPROF |" |
		while read -r line; do eval "$line" || exit 1; done) >"$WORK/unit.log" 2>&1
}
unit_run ExecCondition "$HERE/../../docs/cluster.conf.example" &&
	fail "8: the service runs with no shards named"
sed "s|^NMIPROF_CLUSTER_URLS=.*|NMIPROF_CLUSTER_URLS=\"$U1 $U2\"|" \
	"$HERE/../../docs/cluster.conf.example" >"$WORK/cluster.conf"
unit_run ExecCondition "$WORK/cluster.conf" || fail "8: ExecCondition with shards: $(cat "$WORK/unit.log")"
tot() { ch_q 1 "SELECT sum(count) FROM nmiprof.samples"; }
before=$(tot)
unit_run ExecStart "$WORK/cluster.conf" || fail "8: ExecStart: $(cat "$WORK/unit.log")"
[ "$(grep -c 'host-day(s) rolled up' "$WORK/unit.log")" = 2 ] &&
	[ "$(grep -c 'partition(s) dropped' "$WORK/unit.log")" = 2 ] ||
	fail "8: the unit's commands on both shards: $(cat "$WORK/unit.log")"
n=$(ch_q 1 "SELECT count() FROM nmiprof.lockups")
[ "$n" = 0 ] && [ "$(tot)" = "$before" ] ||
	fail "8: after the upkeep: $n lockups of 2026-01-01 left, samples $before -> $(tot)"
pass "8: nmiprof-cluster.service: nothing without shards; with them, rollups run and the 2026-01-01 lockups pruned, today's $before samples kept"

PASSED=1
echo "fleet: all checks passed in $(echo "$(date +%s.%N) - $T0" | bc) s"
