# The handler-cost measurement of the bench_kmod* scenarios, sourced by
# them in the guest (@files tests/bench/kmod_cost.sh:/bench/kmod_cost.sh).
#
# CPU 0 runs tests/progs/deep (user code 40 frames deep), CPU 1 the
# nmiprof_deepstack kthread (kernel code 40 frames deep), both sampled at
# 1 kHz by nmiprof_ringcheck with stacks capped at 32 frames (-k 32 -u 32).
# The module's own stats give min/avg/max and a log2 histogram per CPU.
# With "trace", the kernel's nmi:nmi_handler tracepoint (nmi_handle() in
# arch/x86/kernel/nmi.c: sched_clock() around each handler call) is on,
# filtered to our handler: the exact time of every call, written to
# $RESULTS/NAME.ns as "cpu delta_ns handled timestamp".  The event is
# recorded after the timed window, so its own cost is not in delta_ns
# (it is in the NMI's total time).
#
#   kmod_cost_run NAME [trace]     nmiprof.ko loaded, watchdog off
#   kmod_trace_start; ...; kmod_trace_save NAME   the tracepoint alone

KMOD_COST_HANDLER=np_ipi_nmi	# kmod/source_ipi.c: our NMI_LOCAL handler
TR=/sys/kernel/tracing

# kmod_trace_start: the nmi:nmi_handler tracepoint on, filtered to our
# handler; kmod_trace_save NAME: off, its events into $RESULTS/NAME.ns.
kmod_trace_start() {
	_h=$(awk -v h="$KMOD_COST_HANDLER" '$3 == h { print $1; exit }' /proc/kallsyms)
	if [ -z "$_h" ]; then
		fail "$KMOD_COST_HANDLER not in /proc/kallsyms (renamed in kmod/?)"
		return 1
	fi
	echo >$TR/trace
	echo "handler == 0x$_h" >$TR/events/nmi/nmi_handler/filter ||
		fail "tracepoint filter on handler 0x$_h"
	echo 1 >$TR/events/nmi/nmi_handler/enable
}

kmod_trace_save() {
	echo 0 >$TR/events/nmi/nmi_handler/enable
	# "<idle>-0 [001] d.Z.. 12.345678: nmi_handler: np_ipi_nmi [nmiprof]()
	#  delta_ns: 1234 handled: 1"
	awk -v h="nmi_handler: $KMOD_COST_HANDLER" 'index($0, h) {
		match($0, /\[[0-9]+\]/)
		cpu = substr($0, RSTART + 1, RLENGTH - 2) + 0
		match($0, /[0-9]+\.[0-9]+: nmi_handler/)
		ts = substr($0, RSTART, RLENGTH - 13)
		match($0, /delta_ns: -?[0-9]+/)
		print cpu, substr($0, RSTART + 10, RLENGTH - 10), $NF, ts
	}' $TR/trace >"$RESULTS/$1.ns"
	awk '/^overrun/ { n += $2 } END { print "lost " n + 0 }' \
		$TR/per_cpu/cpu*/stats >"$RESULTS/$1.ns.info"
	echo >$TR/trace
	echo 0 >$TR/events/nmi/nmi_handler/filter
}

kmod_cost_run() {
	if [ "$2" = trace ]; then
		kmod_trace_start || return
	fi
	nmiprof_ringcheck -t 3 -f 1000 -k 32 -u 32 -H 4 -r "insmod $MODULES/nmiprof_deepstack.ko \
cpu=1 depth=40 secs=4 && (timeout 4 taskset -c 0 deep 40 100000 >/dev/null || true)" \
		>"$RESULTS/$1.txt" 2>&1 || fail "ringcheck ($1): $(tail -n 1 "$RESULTS/$1.txt")"
	[ "$2" = trace ] && kmod_trace_save "$1"
	# the kthread spins 4 s; rmmod waits for it
	check "rmmod nmiprof_deepstack ($1)" rmmod nmiprof_deepstack
}
