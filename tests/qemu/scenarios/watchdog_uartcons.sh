# The serial port works as before after a report that had to go out
# without the 8250 port lock (issue 14, section 3).  nmiprof_uartcons
# keeps ttyS0's driver busy from the moment CPU 3's lockup report begins:
# 1. a console flushing its backlog (IER cleared in each record, the
#    first one longer than nmiprof waits for the lock) with tty output in
#    progress: afterwards the
#    UART's IER must be the driver's up->ier, and a line written to
#    ttyS0 from here must reach the host (the check reads console.log);
# 2. a set_termios() holding LCR.DLAB set past that wait: the divisor latch
#    must not change;
# 3. with reports going to ttyS2, its driver unbound: no byte may reach
#    that UART (put in loopback, it receives whatever is sent).
# @smp 4
# @timeout 90
# The kthread must run on CPU 2 during the lockup.  Under TCG the kernel
# may mark the TSC unstable at any time; the clocksource switch then
# runs stop_machine(), which holds CPUs 0-2 until the spinning CPU 3
# joins, after the report (seen on 6.12: the NMI waited 5 s in vain).
# @cmdline tsc=reliable
# @modules nmiprof_lockup nmiprof_uartcons
# @files tests/qemu/modules/lockup/lockup_lib.sh:/bench/lockup_lib.sh
# Reports here go out without the port lock while the console writes, so
# their lines may come out mixed with the printk copy's: any hard LOCKUP
# line but the kernel watchdog's own.
# @allow ^(?!.*Watchdog detected hard LOCKUP).*hard LOCKUP

# This shell and all it runs stay on CPUs 0-1, away from the holder (CPU 2)
# and the spinner (CPU 3).  A task leaving CPU 3 for the spinner leaves its
# mm loaded there; its exit then waits, preemption off, for CPU 3 to flush,
# which it does only after the report: from CPU 2 that keeps the holder from
# the port lock (seen once on 6.12: "the report went ahead before CPU 2 held
# ttyS0's port lock", the holder got it 1 ms after the spin ended).
if [ -z "$UARTCONS_PINNED" ]; then
	export UARTCONS_PINNED=1
	exec taskset -c 0-1 sh -c 'cd /tmp && . /bench/lib.sh && . /bench/scenario.sh'
fi
. /bench/lockup_lib.sh

# Bytes ttyS0's driver has transmitted (its interrupt handler counts them).
tx_count() { sed -n 's/^0: .* tx:\([0-9]*\) .*/\1/p' /proc/tty/driver/serial; }

# held N: nmiprof_uartcons's kthread is done with the Nth report, within 10 s.
held() {
	_i=0
	while [ "$(dmesg | grep -c 'nmiprof_uartcons: a report began')" -lt "$1" ] &&
		[ $_i -lt 10 ]; do
		sleep 1
		_i=$((_i + 1))
	done
	[ "$(dmesg | grep -c 'nmiprof_uartcons: a report began')" -ge "$1" ]
}

wd_load watchdog_thresh=2

# 1: a console busy with IER cleared.
check "insmod nmiprof_uartcons" insmod "$MODULES/nmiprof_uartcons.ko" cpu=2
wd_lockup cpu=3 secs=3
check "the console's backlog is over" held 1
check "the report went out without the port lock" dmesg_has 'port lock was not free'
check "IER is the driver's after the report" \
	dmesg_has 'nmiprof_uartcons: after the report: ttyS0 IER .* as the driver has it'
# A line from user space, through the tty layer: the driver sends it from
# its THRE interrupt, so it gets out only if IER lets that through.
marker="@@UARTCONS-READBACK-$BENCH_KVER@@"
tx0=$(tx_count)
echo "$marker" >/dev/ttyS0 &
_i=0
while [ $(($(tx_count) - tx0)) -lt ${#marker} ] && [ $_i -lt 10 ]; do
	sleep 1
	_i=$((_i + 1))
done
[ $(($(tx_count) - tx0)) -ge ${#marker} ] ||
	fail "ttyS0 sent $(($(tx_count) - tx0)) bytes of a ${#marker}-byte line in 10 s"
check "rmmod nmiprof_uartcons" rmmod nmiprof_uartcons
wait

# 2: a set_termios() with LCR.DLAB set.
check "insmod nmiprof_uartcons termios=1" \
	insmod "$MODULES/nmiprof_uartcons.ko" cpu=2 termios=1
wd_lockup cpu=3 secs=3
check "the set_termios() is over" held 2
check "the divisor latch stayed" \
	dmesg_has "nmiprof_uartcons: ttyS0's divisor latch stayed"
check "rmmod nmiprof_uartcons termios=1" rmmod nmiprof_uartcons
wd_finish

# 3: ttyS2 (the host's control port, unused here) without its driver.
wd_load watchdog_thresh=2 uart_line=2
check "reports go to ttyS2" dmesg_has 'nmiprof: lockup reports go to ttyS2 directly'
io=$(cat /sys/class/tty/ttyS2/port)
wd_uart_dev 2
save ttyS2_driver readlink -f "$dev/driver"
check "unbind ttyS2's driver" sh -c "echo ${dev##*/} >$dev/driver/unbind"
check "nmiprof stopped writing to ttyS2" \
	dmesg_has "nmiprof: ttyS2's driver unbinds: no more direct UART output"
check "insmod nmiprof_uartcons loop_io=$io" \
	insmod "$MODULES/nmiprof_uartcons.ko" loop_io=$io
wd_lockup cpu=3 secs=3
check "CPU 3 reported a third time" \
	sh -c "[ \$(dmesg | grep -c 'nmiprof: CPU 3 recovered after') -eq 3 ]"
check "rmmod nmiprof_uartcons loop_io=$io" rmmod nmiprof_uartcons
check "nothing sent to ttyS2 without its driver" \
	dmesg_has 'nmiprof_uartcons: nothing was sent to the UART at'
wd_finish
