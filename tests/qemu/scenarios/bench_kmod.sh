# Benchmark (issue 3), not a test: prints figures, asserts only that every
# step ran.  In one guest (TCG: no PMU, so nmiprof uses NMI IPIs and perf
# uses cpu-clock):
#  (a) the NMI handler's cost per sample from the module's stats (min,
#      avg, max; p50/p99 are upper bounds of the log2 histogram bucket)
#      while tests/progs/deep runs 40 frames deep, stacks capped at 32;
#  (b) the slowdown of a fixed CPU-bound job (deep, one per vCPU) at
#      1 kHz per CPU: alone, under `nmiprof record` (kmod backend) and
#      under `perf record -F 1000 -a -g`.
# Run: tests/qemu/bench.py run --build-dir build bench_kmod  (or
# ctest -L bench); the summary is the BENCH lines of the console.  One
# run each: on a busy shared host the wall times are noisy (repeat it).
# @label bench
# @smp 2
# @timeout 240
# @progs tests/progs/deep tests/progs/nmiprof_ringcheck perf

ROUNDS=300
check "insmod nmiprof.ko" insmod "$NMIPROF_KO"

# (a) handler cost, 32-deep kernel and user stack limits.
nmiprof_ringcheck -t 5 -f 1000 -k 32 -u 32 -r "deep 40 $ROUNDS; deep 40 $ROUNDS" \
	>"$RESULTS/cost.txt" 2>&1 || fail "ringcheck: $(tail -n 1 "$RESULTS/cost.txt")"
grep -E '^cpu [0-9]+: samples' "$RESULTS/cost.txt" | while read -r l; do
	echo "BENCH cost $BENCH_KVER TCG $(echo "$l" | sed -E \
		's/^cpu ([0-9]+): samples ([0-9]+).*avg kframes ([0-9.]+) avg uframes ([0-9.]+).*cost ns min ([0-9]+) avg ([0-9]+) max ([0-9]+) p50< ([0-9]+) p99< ([0-9]+).*/cpu \1 samples \2 kframes \3 uframes \4 min \5 ns avg \6 ns max \7 ns p50<=\8 ns p99<=\9 ns/')"
done

# (b) slowdown: two copies of deep (one per vCPU), wall time of the slower.
job() {
	deep 40 $ROUNDS >/tmp/j1 &
	deep 40 $ROUNDS >/tmp/j2
	wait
	cat /tmp/j1 /tmp/j2 | awk '{ if ($3 > m) m = $3 } END { print m }'
}
base=$(job)
echo "BENCH wall $BENCH_KVER alone $base s"

nmiprof record -o /tmp/np.prof --backend kmod -F 1000 -a >"$RESULTS/np_record.txt" 2>&1 &
rec=$!
sleep 1
np=$(job)
kill -INT $rec
wait $rec
echo "BENCH wall $BENCH_KVER nmiprof $np s ($(tail -n 1 "$RESULTS/np_record.txt"))"

perf record -F 1000 -a -g -o /tmp/perf.data >"$RESULTS/perf_record.txt" 2>&1 &
rec=$!
sleep 1
pf=$(job)
kill -INT $rec
wait $rec
echo "BENCH wall $BENCH_KVER perf $pf s ($(grep -io 'captured and wrote.*' "$RESULTS/perf_record.txt"))"

awk -v b="$base" -v n="$np" -v p="$pf" -v k="$BENCH_KVER" 'BEGIN {
	sn = 100 * (n - b) / b; sp = 100 * (p - b) / b
	r = "n/a"
	if (sp > 0)
		r = sprintf("%.2f", sn / sp)
	printf "BENCH slowdown %s TCG 1kHz/CPU: nmiprof %.1f%% perf(cpu-clock) %.1f%% ratio nmiprof/perf %s\n", k, sn, sp, r
}' | tee "$RESULTS/summary.txt"
[ -n "$base" ] && [ -n "$np" ] && [ -n "$pf" ] || fail "a timed run printed nothing"
check "rmmod nmiprof" rmmod nmiprof
