# Benchmark (issue 3), not a test: prints figures, asserts only that every
# step ran.  In one guest (TCG: no PMU, so nmiprof uses NMI IPIs and perf
# uses cpu-clock):
#  (a) the NMI handler's cost per sample from the module's stats (min,
#      avg, max; p50/p99 are upper bounds of the log2 histogram bucket),
#      stacks capped at 32 frames, while CPU 0 runs tests/progs/deep (user
#      code 40 frames deep) and CPU 1 the nmiprof_deepstack kthread (kernel
#      code 40 frames deep): every sample walks a full 32-frame stack;
#  (b) the slowdown of a fixed CPU-bound job (deep, one copy per vCPU, the
#      wall time of the slower) at 1 kHz per CPU: alone, under `nmiprof
#      record -a` (kmod backend; the job starts once it samples) and
#      `perf record -F 1000 -a -g -- job`.
#      After a warm-up, REPS rounds alternate the three; the minimum of
#      each is reported (the least disturbed by the shared host).
# Run: tests/qemu/bench.py run --build-dir build bench_kmod  (or
# ctest -L bench); the summary is the BENCH lines of the console.
# @label bench
# @smp 2
# @timeout 240
# @modules nmiprof_deepstack
# @progs tests/progs/deep tests/progs/nmiprof_ringcheck perf

ROUNDS=500	# work units per copy of deep in (b): 2-3 s under TCG
REPS=3
check "insmod nmiprof.ko" insmod "$NMIPROF_KO"

# (a) handler cost with 32-deep kernel and user stacks.
nmiprof_ringcheck -t 4 -f 1000 -k 32 -u 32 -r "insmod $MODULES/nmiprof_deepstack.ko \
cpu=1 depth=40 secs=5 && (timeout 5 taskset -c 0 deep 40 100000 || true)" \
	>"$RESULTS/cost.txt" 2>&1 || fail "ringcheck: $(tail -n 1 "$RESULTS/cost.txt")"
check "rmmod nmiprof_deepstack" rmmod nmiprof_deepstack
grep -E '^cpu [0-9]+: samples' "$RESULTS/cost.txt" | while read -r l; do
	echo "BENCH cost $BENCH_KVER TCG $(echo "$l" | sed -E \
		's/^cpu ([0-9]+): samples ([0-9]+).*avg kframes ([0-9.]+) avg uframes ([0-9.]+).*cost ns min ([0-9]+) avg ([0-9]+) max ([0-9]+) p50< ([0-9]+) p99< ([0-9]+).*/cpu \1 samples \2 avg kframes \3 uframes \4: min \5 ns avg \6 ns max \7 ns p50<=\8 ns p99<=\9 ns/')"
done

# (b) slowdown.  The job starts once the profiler samples (perf's
# start-up under TCG takes seconds), and deep times its own work only.
cat >/tmp/job.sh <<EOF
deep 40 $ROUNDS >/tmp/j1 &
deep 40 $ROUNDS >/tmp/j2
wait
EOF
slower() { cat /tmp/j1 /tmp/j2 | awk '{ if ($3 > m) m = $3 } END { print m }'; }
min() { awk -v a="$1" -v b="$2" 'BEGIN { print (a == "" || b < a) ? b : a }'; }

sh /tmp/job.sh		# warm-up: page cache, TCG translation
base='' np='' pf=''
r=0
while [ $r -lt $REPS ]; do
	r=$((r + 1))
	rm -f /tmp/j1 /tmp/j2
	sh /tmp/job.sh
	t=$(slower)
	echo "BENCH run $BENCH_KVER $r alone $t s"
	base=$(min "$base" "$t")

	# record -a, like perf -a below (record -- CMD would drop the other
	# processes' samples unprocessed); the job starts once it samples.
	rm -f /tmp/j1 /tmp/j2
	nmiprof record -o /tmp/np.prof --backend kmod -F 1000 -a \
		>"$RESULTS/np_record.$r.txt" 2>&1 &
	rec=$!
	i=0
	until nmiprof status 2>/dev/null | grep -q '^source:.*running'; do
		i=$((i + 1))
		[ $i -lt 50 ] || break
		sleep 0.2
	done
	sh /tmp/job.sh
	kill -INT $rec
	wait $rec
	t=$(slower)
	echo "BENCH run $BENCH_KVER $r nmiprof $t s ($(grep samples "$RESULTS/np_record.$r.txt"))"
	np=$(min "$np" "$t")

	rm -f /tmp/j1 /tmp/j2
	perf record -F 1000 -a -g -o /tmp/perf.data -- sh /tmp/job.sh \
		>"$RESULTS/perf_record.$r.txt" 2>&1
	t=$(slower)
	echo "BENCH run $BENCH_KVER $r perf $t s ($(grep -io 'captured and wrote.*' \
		"$RESULTS/perf_record.$r.txt"))"
	pf=$(min "$pf" "$t")
done

[ -n "$base" ] && [ -n "$np" ] && [ -n "$pf" ] || fail "a timed run printed nothing"
awk -v b="$base" -v n="$np" -v p="$pf" -v k="$BENCH_KVER" 'BEGIN {
	sn = 100 * (n - b) / b; sp = 100 * (p - b) / b
	r = "n/a"
	if (sp > 0)
		r = sprintf("%.2f", sn / sp)
	printf "BENCH slowdown %s TCG 1kHz/CPU (min of runs): alone %.3f s, nmiprof %+.1f%%, perf(cpu-clock) %+.1f%%, ratio nmiprof/perf %s\n", k, b, sn, sp, r
}' | tee "$RESULTS/summary.txt"
check "rmmod nmiprof" rmmod nmiprof
