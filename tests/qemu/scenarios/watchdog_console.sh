# Hard lockup while holding console_lock: CPU 1 takes console_lock, then
# spins 10 s with interrupts off.  The kernel's printk output stays in
# its buffer until release, so only nmiprof's polled UART writer can get
# the report out in time: the host check wants it on the serial port
# before the "console_lock held" line the stuck CPU printed, within
# threshold + one period.  Threshold 4 s (period 1.6 s) keeps the run
# short; nothing in the mechanism depends on its value.
# @smp 2
# @timeout 100
# @modules nmiprof_lockup
# @files tests/qemu/modules/lockup/lockup_lib.sh:/bench/lockup_lib.sh
# @allow nmiprof: hard LOCKUP on CPU 1,
. /bench/lockup_lib.sh

wd_load watchdog_thresh=4
wd_lockup cpu=1 secs=10 console=1
wd_finish
