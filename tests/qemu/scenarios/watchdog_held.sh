# The watchdog's own waits are no lockup (issue 14, section 6): with
# all-CPU backtraces and a threshold of 1 s, CPU 1 spins 2 s with
# interrupts off, and CPU 0's backtrace takes 4 s more, as one queued
# behind other CPUs' reports on a slow port would (nmiprof_slowsample on
# np_report_backtrace).  CPU 1 is reported once and CPU 0 never: before,
# CPU 1's timer found CPU 0 in our NMI past two thresholds and reported
# it as not answering NMIs.
# @smp 2
# @timeout 90
# @modules nmiprof_lockup nmiprof_slowsample
# @files tests/qemu/modules/lockup/lockup_lib.sh:/bench/lockup_lib.sh
# @allow nmiprof: hard LOCKUP on CPU 1,
. /bench/lockup_lib.sh

wd_load watchdog_thresh=1 watchdog_all_cpu_backtrace=1
check "insmod nmiprof_slowsample" insmod "$MODULES/nmiprof_slowsample.ko" \
	func=np_report_backtrace cpu=0 us=4000000
wd_lockup cpu=1 secs=2
wd_wait_dmesg 'nmiprof: end of CPU 0 backtrace' 10
check "CPU 0's backtrace" dmesg_has 'nmiprof: end of CPU 0 backtrace'
# Two thresholds for a late report to come.
sleep 2
check "rmmod nmiprof_slowsample" rmmod nmiprof_slowsample
n0=$(dmesg | grep -c 'nmiprof: hard LOCKUP on CPU 0,')
n1=$(dmesg | grep -c 'nmiprof: hard LOCKUP on CPU 1,')
echo "lockup reports: CPU 0 $n0 (want 0), CPU 1 $n1 (want 1)"
[ "$n0" -eq 0 ] || fail "CPU 0, held in the backtrace NMI, reported $n0 times"
[ "$n1" -eq 1 ] || fail "CPU 1 reported $n1 times, want 1"
check "CPU 1 recovered" dmesg_has 'nmiprof: CPU 1 recovered after'
wd_finish
