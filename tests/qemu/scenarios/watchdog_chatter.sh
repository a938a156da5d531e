# Whole lines while others write to the serial port: CPU 3 spins 8 s with
# interrupts off while three shells keep ttyS0 busy, one through printk
# (the console driver writes each record under the port lock) and two
# writing to the tty itself.  nmiprof writes each report line under the
# 8250 driver's port lock, so the host check wants every line of the
# report, and the recovery line, whole: nothing inside them, nothing
# missing.  The chatter forks nothing (shell builtins only), so it
# writes as fast as the shell runs.  A larger printk buffer keeps the
# report in dmesg through the chatter.
# @smp 4
# @cmdline log_buf_len=4M
# @timeout 100
# @modules nmiprof_lockup
# @files tests/qemu/modules/lockup/lockup_lib.sh:/bench/lockup_lib.sh
# @allow nmiprof: hard LOCKUP on CPU 3,
. /bench/lockup_lib.sh

# chatter WHAT OUT: numbered lines to OUT, as fast as the shell goes.
chatter() {
	n=0
	while :; do
		echo "chatter: $1 line $n, keeping the serial port busy" >"$2"
		n=$((n + 1))
	done
}

# The chatter stays off CPU 3: a shell woken there while it spins (a tty
# writer waits for room in the UART's buffer, holding the tty's write
# lock) could not run until the spin ends, and would hold up the others.
wd_load watchdog_thresh=4
chatter printk /dev/kmsg &
pids=$!
chatter tty /dev/console &
pids="$pids $!"
chatter tty2 /dev/console &
pids="$pids $!"
for p in $pids; do
	check "chatter $p on CPUs 0-2" taskset -p -c 0-2 $p
done
wd_lockup cpu=3 secs=8
kill $pids
wait 2>/dev/null
wd_finish
