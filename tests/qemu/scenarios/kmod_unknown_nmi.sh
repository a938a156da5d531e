# NMIs that are not nmiprof.ko's are never claimed by it: CPU 0 alone is
# sampled by the IPI source at its highest rate (100 kHz: it cannot keep
# up under TCG, so its requests pile up), with deep user and kernel
# stacks, external sampling off, while the host injects NMIs (QMP, CPU 0)
# at 50/s for 10 s.  Each must reach the kernel's unknown-NMI path ("NMI
# received for unknown reason"), which also reads the reason port and
# honours unknown_nmi_panic: as many as NMIs sent.
# @smp 2
# @timeout 120
# @nmi 50 10
# @progs tests/progs/deep tests/progs/nmiprof_ringcheck

# The kernel rate-limits its report (6.12), so NMIs that reached the
# unknown stage unclaimed are counted through the nmi:nmi_handler
# tracepoint: the runs of the watchdog's NMI_UNKNOWN handler, the only
# one there, that returned 0.
T=/sys/kernel/tracing
unknown() { grep -c 'handled: 0' $T/trace; }

check "insmod nmiprof.ko" insmod "$NMIPROF_KO"
addr=$(awk '$3 == "np_wd_unknown_nmi" { print $1; exit }' /proc/kallsyms)
check "np_wd_unknown_nmi in kallsyms" [ -n "$addr" ]
check "nmi_handler filter" sh -c "echo 'handler == 0x$addr' >$T/events/nmi/nmi_handler/filter"
check "nmi_handler on" sh -c "echo 1 >$T/events/nmi/nmi_handler/enable"
taskset -c 0 deep 60 1000000 >/dev/null &
job=$!
before=$(unknown)
nmiprof_ringcheck -c 0 -t 15 -s ipi -f 100000 -k 127 -u 127 >"$RESULTS/ringcheck.txt" 2>&1 &
reader=$!
sleep 2
nmi_start
nmi_wait
wait $reader || fail "ringcheck: $(tail -n 1 "$RESULTS/ringcheck.txt")"
grep -vE '^  ' "$RESULTS/ringcheck.txt"
kill $job
got=$(( $(unknown) - before ))
echo 0 >$T/events/nmi/nmi_handler/enable
echo "host sent $NMI_SENT NMIs; $got reached the kernel's unknown stage unclaimed"
echo "dmesg: $(dmesg | grep -c 'NMI received for unknown reason') unknown-NMI reports (rate-limited on 6.12)"
[ -n "$NMI_SENT" ] && [ "$NMI_SENT" -gt 0 ] || fail "no NMIs injected"
[ "$got" = "$NMI_SENT" ] ||
	fail "$got unclaimed for $NMI_SENT injected NMIs: $((NMI_SENT - got)) claimed that were nobody's"
check "rmmod nmiprof" rmmod nmiprof
