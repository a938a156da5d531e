# Benchmark (issue 13), not a test: what the table walk from NMI costs.
# One guest, TCG with instruction counting (@icount: guest ns are
# instructions), nmiprof.ko with its watchdog off, 1 kHz.
#
#  (a) handler cost per sample, nmi:nmi_handler tracepoint filtered to
#      our handler (tests/bench/kmod_cost.sh), under `nmiprof record -C 0
#      --backend kmod` of a 40-frame-deep job on CPU 0:
#        fp        deep (frame pointers), unwind_tables=0: frame-pointer walks
#        table     deep, tables on: table walks of the same stacks
#        table_nofp  deep_nofp (-fomit-frame-pointer), tables on
#      and the folded stacks of each run (frames per sample).  record
#      samples all of CPU 0 there (-a -C 0): a followed process is
#      sampled from its CPU's own timer, not by NMI.
#  (b) bytes per sample and slowdown of a fixed job (deep_nofp 40 on
#      CPU 0; span from start to end in guest time) alone, under
#      `nmiprof record --backend kmod`, `perf record -g` and `perf record
#      --call-graph dwarf`, all -F 1000, interleaved rounds; and under the
#      module with nmiprof_ringcheck as its reader (no tables: leaf-only
#      stacks, every task on both CPUs), the module's sampling itself.
#      record follows the job (follow_pid): other tasks and the idle CPU
#      are not sampled, as perf samples the job's tasks only.
# bench_kmod_unwind.check.py prints the figures and the ratios.
# @label bench
# @smp 2
# @mem 1024
# @icount 0
# @timeout 900
# @progs tests/progs/deep tests/progs/deep_nofp tests/progs/nmiprof_ringcheck perf
# @files tests/bench/kmod_cost.sh:/bench/kmod_cost.sh
# @cmdline maxcpus=1

ROUNDS=250	# work units of the job in (b): ~1.5 s of guest time
REPS=3		# interleaved rounds in (b)

. /bench/kmod_cost.sh
# Booted with one CPU, the other comes up by hotplug (see bench_kmod.sh).
for c in /sys/devices/system/cpu/cpu[1-9]*/online; do
	[ -e "$c" ] && echo 1 >"$c"
done
[ "$(nproc)" = "$BENCH_SMP" ] || fail "only $(nproc) of $BENCH_SMP CPUs online"
check "insmod nmiprof.ko watchdog=0" insmod "$NMIPROF_KO" watchdog=0
export NMIPROF_UNWIND_CACHE=/tmp/uwcache
P=/sys/module/nmiprof/parameters/unwind_tables
[ -w $P ] || fail "no $P"
nmiprof_ringcheck -F 1 >"$RESULTS/sample_format.txt" 2>&1

# Compile deep's, deep_nofp's and libc's tables into the cache first.
for p in deep deep_nofp; do
	nmiprof record -o /tmp/warm.prof --backend kmod -F 1000 -- $p 40 30 \
		>/dev/null 2>"$RESULTS/warm.$p.txt" || fail "warm-up record of $p"
done

# (a) cost NAME PROG TABLES: the handler's cost per call on CPU 0 while
# PROG runs there (3.6 s of guest time: the first few dozen samples,
# taken before its mapping set reaches the module, are leaf-only and
# stay out of the median).
walks() { nmiprof status 2>/dev/null | sed -n 's/^unwind: *\([0-9]*\) walks.*/\1/p'; }
cost() {
	echo "$3" >$P
	_w0=$(walks)
	kmod_trace_start
	# CPU 0 whole, not the job followed: a followed process is sampled
	# from its own CPU's timer, not by NMI (kmod/source_ipi.c).  record
	# runs on CPU 0 too: CPU 1 paces CPU 0's NMIs, and QEMU 7.2's
	# single-threaded icount TCG starves a vCPU that has that timer
	# while the other is busy (its round robin gives each vCPU the time
	# to the next deadline: QEMU 8.1 splits it).  There record's drain
	# stalled for seconds, and the job's mapping set came after it.
	taskset -c 0 nmiprof record -o /tmp/c.prof --backend kmod -F 1000 -a -C 0 \
		>/dev/null 2>"$RESULTS/cost_$1.rec" &
	_rp=$!
	sleep 1
	taskset -c 0 $2 40 600 >/dev/null
	kill -INT $_rp
	wait $_rp || fail "record ($1): $(tail -n 1 "$RESULTS/cost_$1.rec")"
	kmod_trace_save "cost_$1"
	echo "walks $_w0 $(walks)" >"$RESULTS/cost_$1.walks"
	nmiprof status >"$RESULTS/cost_$1.status" 2>&1
	nmiprof export -i /tmp/c.prof --user -f folded -o "$RESULTS/cost_$1.folded" ||
		fail "export ($1)"
	echo 1 >$P
}
cost fp deep 0
cost table deep 1
cost table_nofp deep_nofp 1
cost fp2 deep 0

# (b) slowdown: the job's span in guest time (CLOCK_MONOTONIC, from
# /proc/timer_list: busybox date has no ns).
# Outside the span, where its instructions go: the CPU time of the job's
# parent (the tool's reader: record, perf; ringcheck's sh -c) and each
# CPU's timer interrupts and NMIs (/tmp/a0, /tmp/a1).
cat >/tmp/job.sh <<EOF
{ cut -d' ' -f1 /proc/\$PPID/schedstat; grep -E '^ *(NMI|LOC):' /proc/interrupts; } >/tmp/a0
awk '/^now at/ { print \$3; exit }' /proc/timer_list >/tmp/t0
taskset -c 0 deep_nofp 40 $ROUNDS >/tmp/j1
awk '/^now at/ { print \$3; exit }' /proc/timer_list >/tmp/t1
{ cut -d' ' -f1 /proc/\$PPID/schedstat; grep -E '^ *(NMI|LOC):' /proc/interrupts; } >/tmp/a1
EOF
# record TOOL ROUND NOTE: the span, one line in runs.txt
record() {
	if [ -s /tmp/t0 ] && [ -s /tmp/t1 ]; then
		echo "run $1 $2 $(($(cat /tmp/t1) - $(cat /tmp/t0))) $3" |
			tee -a "$RESULTS/runs.txt"
		{ echo "== $1 $2"; cat /tmp/a0 /tmp/a1; } >>"$RESULTS/attrib.txt"
	else
		fail "$1 run $2: the job left no times"
	fi
	rm -f /tmp/t0 /tmp/t1 /tmp/a0 /tmp/a1
}
perf_samples() {
	perf report -i /tmp/perf.data --stats 2>/dev/null |
		awk '/SAMPLE events:/ { print $3; exit }'
}
sh /tmp/job.sh		# warm-up, and the tables of every program in the job
nmiprof record -o /tmp/warm.prof --backend kmod -F 1000 -- sh /tmp/job.sh \
	>/dev/null 2>&1 || fail "warm-up record of the job"
rm -f /tmp/t0 /tmp/t1
r=0
while [ $r -lt $REPS ]; do
	r=$((r + 1))
	sh /tmp/job.sh
	record base $r ""

	nmiprof record -o /tmp/np.prof --backend kmod -F 1000 -- sh /tmp/job.sh \
		>/dev/null 2>"$RESULTS/np.$r.txt" || fail "nmiprof record run $r"
	n=$(sed -n 's/.*: \([0-9]*\) samples,.*/\1/p' "$RESULTS/np.$r.txt")
	nmiprof export -i /tmp/np.prof -f folded -o "$RESULTS/np.$r.folded"
	record nmiprof $r "samples ${n:-0} bytes $(wc -c </tmp/np.prof)"
	rm -f /tmp/np.prof

	# -X: sampling ends with the job
	nmiprof_ringcheck -t 10 -f 1000 -X -r "sh /tmp/job.sh" >"$RESULTS/raw.$r.txt" 2>&1 ||
		fail "ringcheck run $r: $(tail -n 1 "$RESULTS/raw.$r.txt")"
	record raw $r "$(grep -m1 '^total' "$RESULTS/raw.$r.txt")"

	# -B -N: no build-id pass at the end (see bench_kmod.sh)
	perf record -F 1000 -g -B -N -o /tmp/perf.data -- sh /tmp/job.sh \
		>"$RESULTS/perf_g.$r.txt" 2>&1 || fail "perf record -g run $r"
	record perf_g $r "samples $(perf_samples) bytes $(wc -c </tmp/perf.data)"
	rm -f /tmp/perf.data

	perf record -F 1000 --call-graph dwarf -B -N -o /tmp/perf.data -- sh /tmp/job.sh \
		>"$RESULTS/perf_dwarf.$r.txt" 2>&1 || fail "perf record --call-graph dwarf run $r"
	record perf_dwarf $r "samples $(perf_samples) bytes $(wc -c </tmp/perf.data)"
	rm -f /tmp/perf.data
done
save status.txt nmiprof status
check "rmmod nmiprof" rmmod nmiprof
