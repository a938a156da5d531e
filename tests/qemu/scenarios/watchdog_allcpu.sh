# All-CPU backtrace mode on 4 CPUs: CPU 2 takes console_lock and spins 8 s
# with interrupts off; after its own report every other CPU is sent an
# NMI and appends its backtrace, serialised on the serial port, all while
# the console is locked.  Threshold 4 s.
# @smp 4
# @timeout 100
# @modules nmiprof_lockup
# @files tests/qemu/modules/lockup/lockup_lib.sh:/bench/lockup_lib.sh
# @allow nmiprof: hard LOCKUP on CPU 2,
. /bench/lockup_lib.sh

wd_load watchdog_thresh=4 watchdog_all_cpu_backtrace=1
wd_lockup cpu=2 secs=8 console=1
wd_finish
