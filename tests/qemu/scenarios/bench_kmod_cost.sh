# Benchmark (issue 3), not a test: the NMI handler's cost per sample with
# 32-frame kernel and user stacks (tests/bench/kmod_cost.sh), in plain TCG
# (MTTCG, host wall-clock ns: inflated and load-dependent, but the TCG
# figure earlier sessions reported).  bench_kmod measures the same under
# icount, where guest ns are instructions.  Figures: the host prints them
# (bench_kmod_cost.check.py).  Fails only if a measurement did not happen.
# @label bench
# @smp 2
# @timeout 240
# @modules nmiprof_deepstack
# @progs tests/progs/deep tests/progs/nmiprof_ringcheck
# @files tests/bench/kmod_cost.sh:/bench/kmod_cost.sh

. /bench/kmod_cost.sh
echo "clocksource $(cat /sys/devices/system/clocksource/clocksource0/current_clocksource)" \
	>"$RESULTS/guest.txt"
check "insmod nmiprof.ko watchdog=0" insmod "$NMIPROF_KO" watchdog=0
kmod_cost_run cost_module
kmod_cost_run cost_trace trace
check "rmmod nmiprof" rmmod nmiprof
