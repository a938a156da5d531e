# A CPU that answered our NMI and is still writing its report, or waiting
# for another CPU's report to end, must not also be reported as deaf to
# NMIs.  Threshold 1 s: CPUs 1-3 spin 6 s at once while CPU 0, the one
# left to check them, holds ttyS0's port lock in 20 ms pulses, so every
# report line waits for it and the three reports, one after another,
# take longer than the two thresholds after which a CPU that never
# answered is reported without registers.
# @smp 4
# @timeout 100
# @modules nmiprof_lockup
# @files tests/qemu/modules/lockup/lockup_lib.sh:/bench/lockup_lib.sh
# @allow nmiprof: hard LOCKUP on CPU [1-3],
. /bench/lockup_lib.sh

wd_load watchdog_thresh=1
wd_lockup cpu=1 all=1 pulse_cpu=0 secs=6
wd_finish
