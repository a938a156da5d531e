# nmiprof.ko ring overflow exactness: a consumer that never reads during
# the run (64 KiB rings, 5 kHz, 2 KiB raw user stack per sample) must lose
# records, and afterwards every seq of every CPU is accounted for exactly
# once: consumed samples + LOST records == seqs issued == ctrl produced +
# ctrl lost == the module's attempt count.  A second, consuming run on the
# same rings must then lose nothing at a modest rate.
# @smp 2
# @timeout 120
# @progs tests/progs/nmiprof_ringcheck

ringcheck() {
	_n=$1
	shift
	nmiprof_ringcheck "$@" >"$RESULTS/$_n.txt" 2>&1
	_rc=$?
	grep -vE '^  ' "$RESULTS/$_n.txt"
	[ $_rc -eq 0 ] || fail "ringcheck $_n: $(tail -n 1 "$RESULTS/$_n.txt")"
}

check "insmod nmiprof.ko ring_kb=64" insmod "$NMIPROF_KO" ring_kb=64
ringcheck stalled -t 3 -f 5000 -S -R 2048 -w
grep -q 'total: samples [0-9]* lost [1-9]' "$RESULTS/stalled.txt" || fail "stalled run lost nothing"
ringcheck consuming -t 3 -f 500 -n 100
grep -q 'total: samples [0-9]* lost 0 ' "$RESULTS/consuming.txt" || fail "consuming run lost records"
check "rmmod nmiprof" rmmod nmiprof
