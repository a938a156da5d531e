# nohz_full CPUs are not watched unless asked for, as with the kernel's
# own watchdog: our heartbeat hrtimer would give them a tick.  Booted
# with nohz_full=1, the watchdog watches CPU 0 alone and has no timer on
# CPU 1; watchdog_cpus= still picks CPUs explicitly.
# @smp 2
# @timeout 90
# @cmdline nohz_full=1

# np_timers CPU: our heartbeat timers queued on CPU in /proc/timer_list.
np_timers() {
	awk -v c="$1" '/^cpu: / { cpu = $2 } cpu == c && /np_wd_timer_fn/ { n++ }
		END { print n + 0 }' /proc/timer_list
}

check "nohz_full=1 in effect" grep -qx 1 /sys/devices/system/cpu/nohz_full
check "insmod nmiprof.ko" insmod "$NMIPROF_KO"
check "watching CPU 0 only" dmesg_has 'nmiprof: watchdog on: threshold 10 s, CPUs 0$'
sleep 1
save timer_list cat /proc/timer_list
[ "$(np_timers 0)" -ge 1 ] || fail "no heartbeat timer on CPU 0"
[ "$(np_timers 1)" -eq 0 ] || fail "a heartbeat timer on nohz_full CPU 1"
check "rmmod nmiprof" rmmod nmiprof
check "insmod nmiprof.ko watchdog_cpus=0-1" insmod "$NMIPROF_KO" watchdog_cpus=0-1
check "watching CPUs 0-1 when asked" dmesg_has 'nmiprof: watchdog on: threshold 10 s, CPUs 0-1$'
check "rmmod nmiprof" rmmod nmiprof
