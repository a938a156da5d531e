# A CPU stuck in a hard interrupt (issue 14, section 6): CPU 1 spins 6 s
# in an hrtimer callback, over nmiprof_lockup's kthread.  The report must
# say the CPU is in hardirq and name the kthread as the task it
# interrupted, not as what is stuck, and group the trace by stack as the
# kernel's own dumps do: the timer interrupt's frames in <IRQ> .. </IRQ>,
# the kthread's in <TASK> .. </TASK>.  Threshold 2 s (period 0.8 s).
# Loaded without uart_line=, the module writes to the console's port.
# @smp 2
# @timeout 90
# @cmdline nosoftlockup
# @modules nmiprof_lockup
# @files tests/qemu/modules/lockup/lockup_lib.sh:/bench/lockup_lib.sh
# @allow nmiprof: hard LOCKUP on CPU 1,
. /bench/lockup_lib.sh

wd_load watchdog_thresh=2
check "reports on the console's port" \
	dmesg_has 'nmiprof: lockup reports go to ttyS0 directly'
wd_lockup cpu=1 secs=6 irq=1
wd_finish
