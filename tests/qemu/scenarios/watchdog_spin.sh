# Hard lockup at the default threshold (10 s, period 4 s): CPU 1 spins
# 25 s with interrupts off.  Nothing of the kernel's notices in time (no
# PMU under TCG, no buddy detector in 6.1); nmiprof's report must be on
# the serial port within threshold + one period, with the spinning
# function in its backtrace, once, followed by a recovery line.
# nosoftlockup: the kernel's soft-lockup detector (20 s here) would taint
# the kernel when the CPU comes back; RCU's stall warning (21 s) is left on,
# in either form: another CPU reports CPU 1, or CPU 0 reports itself
# because RCU's kthread last ran on CPU 1 and starves (seen in CI on 6.1).
# @smp 2
# @timeout 120
# @cmdline nosoftlockup
# @modules nmiprof_lockup
# @files tests/qemu/modules/lockup/lockup_lib.sh:/bench/lockup_lib.sh
# @allow nmiprof: hard LOCKUP on CPU 1,
# @allow rcu: INFO: rcu_(preempt|sched) (detected stalls on CPUs|self-detected stall on CPU)
. /bench/lockup_lib.sh

wd_load
wd_lockup cpu=1 secs=25
wd_finish
