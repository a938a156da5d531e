# No false positives: 45 s of mixed load on 4 CPUs with the watchdog at a
# 4 s threshold (more sensitive than the default, so a stronger test):
# a busy loop per CPU, file I/O with sync, printk bursts, module
# load/unload (a 1 s irqs-off spin each time: a near miss), nmiprof's own
# IPI sampling at 200 Hz sharing the NMI path, and CPUs 1-3 taken offline
# and back in turn.  Before it, CPU 1 spins 8 s with interrupts off but
# calls touch_nmi_watchdog(), which must be honoured.  After it, a real
# 7 s lockup of CPU 2 must still be reported: the watchdog survived the
# hotplug churn.  Any other report fails the run (logcheck).
# @smp 4
# @timeout 200
# @modules nmiprof_lockup
# @files tests/qemu/modules/lockup/lockup_lib.sh:/bench/lockup_lib.sh
# @allow nmiprof: hard LOCKUP on CPU 2,
. /bench/lockup_lib.sh

wd_load watchdog_thresh=4 autostart=1 source=2 freq=200

wd_lockup cpu=1 secs=8 touch=1
if dmesg | grep -q 'nmiprof: hard LOCKUP'; then
	fail "touch_nmi_watchdog() not honoured: a touched CPU was reported"
else
	echo "ok: a CPU touching the NMI watchdog was not reported"
fi

pids=
for c in 1 2 3 4; do
	(while :; do :; done) &
	pids="$pids $!"
done
(while :; do
	dd if=/dev/zero of=/tmp/io bs=64k count=128 2>/dev/null
	sync
	cat /tmp/io >/dev/null
	rm -f /tmp/io
done) &
pids="$pids $!"
(while :; do
	i=0
	while [ $i -lt 300 ]; do
		echo "nmiprof-noise: printk burst line $i" >/dev/kmsg
		i=$((i + 1))
	done
	sleep 1
done) &
pids="$pids $!"

end=$(($(date +%s) + 45))
rounds=0
while [ "$(date +%s)" -lt $end ]; do
	for c in 1 2 3; do
		echo 0 >/sys/devices/system/cpu/cpu$c/online || fail "cpu$c offline"
		usleep 300000
		echo 1 >/sys/devices/system/cpu/cpu$c/online || fail "cpu$c online"
		usleep 300000
	done
	insmod "$MODULES/nmiprof_lockup.ko" cpu=$((rounds % 4)) secs=1 ||
		fail "near-miss spin"
	rmmod nmiprof_lockup
	rounds=$((rounds + 1))
done
kill $pids
wait 2>/dev/null
echo "noise: $rounds rounds of hotplug and module load/unload"
[ $rounds -ge 5 ] || fail "only $rounds rounds of noise"

wd_lockup cpu=2 secs=7
wd_finish
