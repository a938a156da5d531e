# nmiprof.ko sampling a single CPU with the IPI source: the CPU that paces
# it (sends its NMI IPIs from an hrtimer) must be another online CPU, or
# an irqs-off spin on it is never sampled (its own timer cannot fire) and
# its samples land in its own timer code.  Only CPU 1 is sampled:
#  1. CPU 1 spins 2 s with interrupts off: >= 90% of CPU 1's samples in
#     that window are in nmiprof_spin_loop, and CPUs 0 and 2 (not named
#     by -c) have no samples at all (nmiprof_ringcheck checks that).
#  2. CPU 1's pacer (CPU 2, the next online CPU) goes offline for 4 s:
#     CPU 0 must take over, so CPU 1 never goes 2 s without a sample.
# @smp 3
# @timeout 150
# @modules nmiprof_spin
# @progs tests/progs/nmiprof_ringcheck

# ringcheck NAME ARGS...: run the checker, keep its output as a result.
ringcheck() {
	_n=$1
	shift
	nmiprof_ringcheck "$@" >"$RESULTS/$_n.txt" 2>&1
	_rc=$?
	grep -vE '^  ' "$RESULTS/$_n.txt"
	[ $_rc -eq 0 ] || fail "ringcheck $_n: $(tail -n 1 "$RESULTS/$_n.txt")"
}

check "insmod nmiprof.ko" insmod "$NMIPROF_KO"

ringcheck spin -c 1 -t 4 -f 1000 -U -s ipi -x nmiprof_spin_loop:90@1 \
	-r "sleep 0.5; insmod $MODULES/nmiprof_spin.ko cpu=1 secs=2"
check "spin module ran" dmesg_has 'nmiprof_spin: cpu 1 spun 2 s with irqs off'
check "rmmod nmiprof_spin" rmmod nmiprof_spin
check "one CPU sampled, source ipi" dmesg_has 'nmiprof: sampling at 1000 Hz on 1 CPUs, source ipi'

ONLINE=/sys/devices/system/cpu/cpu2/online
if [ -w $ONLINE ]; then
	nmiprof_ringcheck -c 1 -t 9 -f 1000 -U -s ipi -G 1:2000 \
		>"$RESULTS/pacer_offline.txt" 2>&1 &
	reader=$!
	sleep 2
	check "cpu2 offline" sh -c "echo 0 >$ONLINE"
	sleep 4
	check "cpu2 online" sh -c "echo 1 >$ONLINE"
	wait $reader || fail "ringcheck pacer_offline: $(tail -n 1 "$RESULTS/pacer_offline.txt")"
	grep -vE '^  ' "$RESULTS/pacer_offline.txt"
else
	fail "cpu2 cannot be offlined here"
fi
if dmesg_has 'paces itself'; then fail "a CPU paced itself with others online"; fi
check "rmmod nmiprof" rmmod nmiprof
