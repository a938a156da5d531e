# Benchmark (issue 3), not a test: prints figures and fails only when a
# measurement did not happen.  One guest, TCG with instruction counting
# (@icount: guest time = instructions executed, 2^SHIFT ns each, so the
# figures do not depend on how busy the shared host is).  No PMU in TCG:
# nmiprof samples through NMI IPIs, perf through cpu-clock (an hrtimer,
# blind to irqs-off code).  The module's own watchdog is off (watchdog=0).
#
#  (a) handler cost per sample with 32-frame kernel and user stacks
#      (tests/bench/kmod_cost.sh): the module's own stats, and the kernel's
#      nmi:nmi_handler tracepoint filtered to our handler (exact per call,
#      unlike the module's log2 histogram).  Here in icount ns, i.e.
#      instructions; bench_kmod_cost measures it in plain TCG wall time.
#  (b) slowdown of a fixed CPU-bound job (deep, one copy per vCPU; the
#      span from the first start to the last end) at 1 kHz per CPU, in
#      interleaved rounds:
#      alone; under `nmiprof record -a` (module + the CLI draining the
#      rings, symbolizing and writing its profile file); under the module
#      with the minimal raw ring consumer (nmiprof_ringcheck, no file),
#      with the default stacks (64 frames each), with user stacks only
#      (-k 0) and with no stacks at all (-k 0 -U: the floor of timer, IPI,
#      NMI entry/exit and a bare record); and under `perf record -F 1000
#      -a` without and with -g (writing perf.data).  The host divides each
#      extra span by the samples taken: instructions per sample, all in.
# The guest writes raw figures to $RESULTS; bench_kmod.check.py computes
# medians, spreads and percentiles on the host and prints the RESULTS block.
# Run: tests/qemu/bench.py run --build-dir build bench_kmod  (or
# ctest -L bench -R kmod -V).
# @label bench
# @smp 2
# @icount 0
# @timeout 900
# @modules nmiprof_deepstack
# @progs tests/progs/deep tests/progs/nmiprof_ringcheck perf
# @files tests/bench/kmod_cost.sh:/bench/kmod_cost.sh
# @cmdline maxcpus=1

ROUNDS=150	# work units per copy of deep in (b)
REPS=4		# interleaved rounds in (b): icount spreads are ~0.05 %
RAW_T=

. /bench/kmod_cost.sh
# Booted with one CPU, the others come up by hotplug: under icount, 6.1's
# boot-time SMP bring-up never finishes (CPU 1 spins in cpu_init() waiting
# for the boot CPU's go-ahead); onlining it later works, on both kernels.
for c in /sys/devices/system/cpu/cpu[1-9]*/online; do
	[ -e "$c" ] && echo 1 >"$c"
done
[ "$(nproc)" = "$BENCH_SMP" ] || fail "only $(nproc) of $BENCH_SMP CPUs online"
echo "clocksource $(cat /sys/devices/system/clocksource/clocksource0/current_clocksource)" \
	>"$RESULTS/guest.txt"
dmesg | grep -Ei 'tsc|sched_clock' | tail -n 5 >>"$RESULTS/guest.txt"
check "insmod nmiprof.ko watchdog=0" insmod "$NMIPROF_KO" watchdog=0

# (a) handler cost (tests/bench/kmod_cost.sh), in icount ns: instructions.
kmod_cost_run cost_module
kmod_cost_run cost_trace trace

# (b) slowdown: the job's span, from before the first copy of deep
# starts to after the last ends, in guest time (CLOCK_MONOTONIC, read from
# /proc/timer_list: busybox date has no ns).  Under icount that span is
# the instructions both vCPUs executed meanwhile, the job's and every
# profiler's (handlers, timers, its process); a profiler's start-up and
# shutdown fall outside it.  (Each copy's own time is kept in runs.txt;
# it depends on how the copies happened to overlap.)
cat >/tmp/job.sh <<EOF
awk '/^now at/ { print \$3; exit }' /proc/timer_list >/tmp/t0
deep 40 $ROUNDS >/tmp/j1 &
deep 40 $ROUNDS >/tmp/j2
wait
awk '/^now at/ { print \$3; exit }' /proc/timer_list >/tmp/t1
EOF
span() { [ -s /tmp/t0 ] && [ -s /tmp/t1 ] && echo $(($(cat /tmp/t1) - $(cat /tmp/t0))); }
# record TOOL ROUND [note]: the job's span in this run, one line in runs.txt
record() {
	t=$(span)
	[ -n "$t" ] || { fail "$1 run $2: the job left no times"; return; }
	echo "run $1 $2 $(awk -v t="$t" 'BEGIN { printf "%.6f", t / 1e9 }') \
copies $(cut -d' ' -f3 /tmp/j1 /tmp/j2 | tr '\n' ' ')$3" | tee -a "$RESULTS/runs.txt"
}

# raw TOOL ROUND ringcheck-options: the job under the module and
# nmiprof_ringcheck (the bare reader), one line in runs.txt
raw() {
	_t=$1 _r=$2
	shift 2
	rm -f /tmp/j1 /tmp/j2 /tmp/t0 /tmp/t1
	nmiprof_ringcheck -t "$RAW_T" -f 1000 -X "$@" -r "sh /tmp/job.sh" \
		>"$RESULTS/$_t.$_r.txt" 2>&1 || fail "ringcheck $_t run $_r: \
$(tail -n 1 "$RESULTS/$_t.$_r.txt")"
	record "$_t" "$_r" "$(grep -m1 'total' "$RESULTS/$_t.$_r.txt")"
}
# the samples in /tmp/perf.data
perf_samples() {
	echo "$(perf report -D -i /tmp/perf.data 2>/dev/null |
		grep -c 'PERF_RECORD_SAMPLE') samples"
}

sh /tmp/job.sh		# warm-up: page cache, TCG translation
r=0
while [ $r -lt $REPS ]; do
	r=$((r + 1))
	rm -f /tmp/j1 /tmp/j2 /tmp/t0 /tmp/t1
	sh /tmp/job.sh
	record base $r
	# the raw consumer's -t (below): the job alone x 1.3, plus 2 s
	[ -n "$RAW_T" ] || RAW_T=$(awk -v t="$(span)" 'BEGIN { print int(1.3 * t / 1e9 + 2) }')

	# record -a, like perf -a below; the job starts once it samples.
	rm -f /tmp/j1 /tmp/j2 /tmp/t0 /tmp/t1
	nmiprof record -o /tmp/np.prof --backend kmod -F 1000 -a \
		>"$RESULTS/np_record.$r.txt" 2>&1 &
	rec=$!
	i=0
	until nmiprof status 2>/dev/null | grep -q '^source:.*running'; do
		i=$((i + 1))
		[ $i -lt 100 ] || { fail "nmiprof record never started sampling"; break; }
		sleep 0.1
	done
	sh /tmp/job.sh
	kill -INT $rec
	wait $rec || fail "nmiprof record exited with $?"
	record nmiprof $r "$(grep -m1 samples "$RESULTS/np_record.$r.txt")"
	rm -f /tmp/np.prof

	# The module with the minimal consumer: what the kernel side costs,
	# with the default stacks, user stacks only, and none.  -X: sampling
	# ends when the job does, so the samples counted are the job's; -H:
	# where the NMIs land (resolved after the run).
	raw nmiprof_raw $r -H 4
	raw nmiprof_ustack $r -k 0
	raw nmiprof_nostack $r -k 0 -U

	# perf without and with -g.  -B -N: no build-id pass at the end
	# (Debian's perf 6.1 sometimes aborts in it); it runs after the job,
	# so the figure is the same.
	rm -f /tmp/j1 /tmp/j2 /tmp/t0 /tmp/t1
	perf record -F 1000 -a -B -N -o /tmp/perf.data -- sh /tmp/job.sh \
		>"$RESULTS/perf_nog.$r.txt" 2>&1 || fail "perf record (no -g) run $r exited with $?"
	record perf_nog $r "$(perf_samples)"
	rm -f /tmp/perf.data

	rm -f /tmp/j1 /tmp/j2 /tmp/t0 /tmp/t1
	perf record -F 1000 -a -g -B -N -o /tmp/perf.data -- sh /tmp/job.sh \
		>"$RESULTS/perf_record.$r.txt" 2>&1 || fail "perf record run $r exited with $?"
	record perf $r "$(perf_samples)"
	rm -f /tmp/perf.data
done
check "rmmod nmiprof" rmmod nmiprof
