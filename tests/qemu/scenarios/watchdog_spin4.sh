# Hard lockup on 4 CPUs: CPU 3 (whose buddy is CPU 0, the wrap-around)
# spins 10 s with interrupts off.  Threshold 4 s (period 1.6 s) keeps the
# run short; watchdog_spin covers the default threshold.  The UART is
# given by I/O port (uart_io=0x3f8, ttyS0) instead of found through the
# 8250 driver.
# @smp 4
# @timeout 100
# @modules nmiprof_lockup
# @files tests/qemu/modules/lockup/lockup_lib.sh:/bench/lockup_lib.sh
# @allow nmiprof: hard LOCKUP on CPU 3,
. /bench/lockup_lib.sh

wd_load watchdog_thresh=4 uart_io=0x3f8
check "UART by I/O port" dmesg_has 'lockup reports go to the UART at I/O port 0x3f8'
wd_lockup cpu=3 secs=10
wd_finish
