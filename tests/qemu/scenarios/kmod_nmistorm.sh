# nmiprof.ko under an NMI storm: QMP inject-nmi at 1 kHz for 30 s (CPU 0
# only) while the IPI source runs at its maximum rate with external
# sampling on, so unclaimed NMIs are sampled (NMIPROF_RF_EXTERNAL) rather
# than reported as unknown.  The guest must stay up, accounting exact,
# and sysrq-l (NMI backtrace of all CPUs, another NMI_LOCAL user) must
# still work while nmiprof is loaded.
# @smp 2
# @timeout 180
# @nmi 1000 30
# @progs tests/progs/nmiprof_ringcheck

# No CPU-time limit: the IPI source runs as fast as it can.
check "insmod nmiprof.ko cpu_time_max_percent=0" insmod "$NMIPROF_KO" cpu_time_max_percent=0
# Inject once the reader has started sampling (external claim in place).
nmiprof_ringcheck -t 34 -s ipi -e -f 100000 -E -n 1000 >"$RESULTS/storm.txt" 2>&1 &
reader=$!
sleep 3
nmi_start
nmi_wait
wait $reader || fail "ringcheck storm: $(tail -n 1 "$RESULTS/storm.txt")"
grep -vE '^  ' "$RESULTS/storm.txt"
echo "host injected $NMI_SENT NMIs"
echo "$NMI_SENT" >"$RESULTS/nmi-sent"

# Sampling again (no external claim now), then sysrq-l.
nmiprof_ringcheck -t 4 -s ipi -f 1000 >"$RESULTS/after.txt" 2>&1 &
reader=$!
sleep 1
echo l >/proc/sysrq-trigger
sleep 1
wait $reader || fail "ringcheck after: $(tail -n 1 "$RESULTS/after.txt")"
check "sysrq-l backtrace printed" dmesg_has 'NMI backtrace for cpu 1'
check "rmmod nmiprof" rmmod nmiprof
