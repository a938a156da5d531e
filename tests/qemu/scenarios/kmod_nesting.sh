# nmiprof.ko nesting stress: kprobes (int3, whose iret re-enables NMIs)
# on copy_from_user_nmi and unwind_next_frame, both called by the NMI
# handler; a child whose user frame pointer points into non-resident pages
# (the user stack read faults inside the NMI); a 75/25 workload; 10 kHz on
# all CPUs for 30 s.  The guest must stay up without a splat, the kprobes
# must have fired, the faults must be flagged and accounting stay exact.
# Nested NMIs are caught by the kernel's entry code (repeat_nmi) and its
# exc_nmi latch before module code runs; the module's own latch guards the
# dispatcher when it runs outside NMI context (the watchdog's hrtimer), so
# latch_selftest=1 also calls it from an hrtimer: NMIs landing inside must
# be latched and replayed (ringcheck -L), never run re-entrantly.
# @smp 2
# @timeout 150
# @progs tests/progs/nmiprof_ringcheck

T=/sys/kernel/tracing
check "insmod nmiprof.ko latch_selftest=1" insmod "$NMIPROF_KO" latch_selftest=1
check "kprobe on copy_from_user_nmi" sh -c "echo 'p:np_cfun copy_from_user_nmi' >>$T/kprobe_events"
check "kprobe on unwind_next_frame" sh -c "echo 'p:np_unw unwind_next_frame' >>$T/kprobe_events"
check "enable kprobes" sh -c "echo 1 >$T/events/kprobes/enable"

nmiprof_ringcheck -t 30 -f 10000 -P -w -L -n 1000 >"$RESULTS/nesting.txt" 2>&1 ||
	fail "ringcheck nesting: $(tail -n 1 "$RESULTS/nesting.txt")"
grep -vE '^  ' "$RESULTS/nesting.txt"

save kprobe_profile cat $T/kprobe_profile
cat "$RESULTS/kprobe_profile"
for p in np_cfun np_unw; do
	hits=$(awk -v p=$p '$1 == p { print $2 }' "$RESULTS/kprobe_profile")
	[ "${hits:-0}" -gt 0 ] || fail "kprobe $p never hit"
done
echo 0 >$T/events/kprobes/enable
echo >$T/kprobe_events
grep NMI /proc/interrupts
check "rmmod nmiprof" rmmod nmiprof
