# Reports go to a UART again once its driver is bound again (issue 14):
# with reports on ttyS2 (the host's control port, unused here), its
# driver is unbound (output stops) and bound again (output must resume;
# it stayed off until the module was reloaded).  Nobody has ttyS2 open
# after that, so nmiprof_uartcons can put it in loopback: the report of
# a 2 s lockup must come back there.
# @smp 2
# @timeout 90
# @modules nmiprof_lockup nmiprof_uartcons
# @files tests/qemu/modules/lockup/lockup_lib.sh:/bench/lockup_lib.sh
# @allow nmiprof: hard LOCKUP on CPU 1,
# @allow nmiprof_uartcons: [0-9]+ bytes were sent to the UART
. /bench/lockup_lib.sh

wd_load watchdog_thresh=1 uart_line=2
check "reports go to ttyS2" dmesg_has 'nmiprof: lockup reports go to ttyS2 directly'
io=$(cat /sys/class/tty/ttyS2/port)
wd_uart_dev 2
drv=$(readlink -f "$dev/driver")
save ttyS2_driver echo "$drv"
check "unbind ttyS2's driver" sh -c "echo ${dev##*/} >$drv/unbind"
check "nmiprof stopped writing to ttyS2" \
	dmesg_has "nmiprof: ttyS2's driver unbinds: no more direct UART output"
check "bind ttyS2's driver again" sh -c "echo ${dev##*/} >$drv/bind"
check "nmiprof writes to ttyS2 again" \
	dmesg_has "nmiprof: ttyS2's driver is bound again: direct UART output again"
check "insmod nmiprof_uartcons loop_io=$io" \
	insmod "$MODULES/nmiprof_uartcons.ko" loop_io=$io
wd_lockup cpu=1 secs=2
check "rmmod nmiprof_uartcons loop_io=$io" rmmod nmiprof_uartcons
check "the report reached ttyS2" \
	dmesg_has 'nmiprof_uartcons: [1-9][0-9]* bytes were sent to the UART at'
wd_finish
