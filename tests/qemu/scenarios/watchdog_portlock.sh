# The 8250 driver's port lock, which nmiprof's UART writer tries for each
# report line.  First CPU 3 spins 8 s while CPU 2 holds ttyS0's port lock
# in 20 ms pulses and marks each on the port: no line of the report may
# come out inside a pulse, but the report must still be on time (it waits
# at most 100 ms for the lock).  Then CPU 1 spins 6 s holding the port
# lock itself, as a CPU stuck in the serial driver would: the report must
# still get out, whole and on time, written without the lock.  The shell
# keeps quiet meanwhile: its tty write would spin on the lock with
# interrupts off, a real lockup that would be reported too.  Another
# CPU's printk can do the same; the check allows that.
# @smp 4
# @timeout 100
# CPU 2 must pulse while CPU 3 spins.  Under TCG the clocksource watchdog
# may mark the TSC unstable then, and the switch's stop_machine() holds
# CPUs 0-2 until CPU 3 joins (CI, 6.12: 16 pulses, then a silent exit).
# @cmdline tsc=reliable
# @modules nmiprof_lockup
# @files tests/qemu/modules/lockup/lockup_lib.sh:/bench/lockup_lib.sh
# @allow nmiprof: hard LOCKUP on CPU [0-3],
. /bench/lockup_lib.sh

wd_load watchdog_thresh=4
wd_lockup cpu=3 secs=8 pulse_cpu=2
check "port lock pulses" dmesg_has 'nmiprof_lockup: [0-9]+ port lock pulses on CPU 2'
insmod "$MODULES/nmiprof_lockup.ko" cpu=1 secs=6 portlock=1 \
	>"$RESULTS/portlock.log" 2>&1 || fail "insmod nmiprof_lockup portlock=1"
rmmod nmiprof_lockup >>"$RESULTS/portlock.log" 2>&1 ||
	fail "rmmod nmiprof_lockup after portlock=1"
sleep 1
wd_finish
