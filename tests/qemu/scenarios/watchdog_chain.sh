# Two stuck CPUs in a row: CPUs 0 and 1 spin 8 s with interrupts off at
# once.  CPU 0 is CPU 1's checker and checks nobody while it is stuck, so
# CPU 3, which checks CPU 0, must look past it at CPU 1 too: both must be
# reported, each from its own NMI, within threshold + one period.
# @smp 4
# @timeout 100
# @modules nmiprof_lockup
# @files tests/qemu/modules/lockup/lockup_lib.sh:/bench/lockup_lib.sh
# @allow nmiprof: hard LOCKUP on CPU [01],
. /bench/lockup_lib.sh

wd_load watchdog_thresh=4
wd_lockup cpu=1 secs=8 also_cpu=0
wd_finish
