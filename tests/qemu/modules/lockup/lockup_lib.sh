# Guest helpers of the watchdog_* scenarios, shipped as /bench/lockup_lib.sh
# by "# @files" and sourced after lib.sh (check, fail, save, dmesg_has).

# wd_load ARGS...: load nmiprof.ko with the watchdog ARGS and turn on the
# nmiprof:lockup trace event.
wd_load() {
	check "insmod nmiprof.ko $*" insmod "$NMIPROF_KO" "$@"
	check "watchdog on" dmesg_has 'nmiprof: watchdog on'
	check "nmiprof:lockup trace event" \
		sh -c 'echo 1 >/sys/kernel/tracing/events/nmiprof/lockup/enable'
}

# wd_lockup ARGS...: one lockup by nmiprof_lockup.ko ARGS (cpu= secs= ...);
# returns when it is over (unload waits for the spin to end).
wd_lockup() {
	check "insmod nmiprof_lockup $*" \
		insmod "$MODULES/nmiprof_lockup.ko" "$@"
	check "rmmod nmiprof_lockup" rmmod nmiprof_lockup
	# The recovery line comes with the CPU's first heartbeat after the
	# spin, at once; leave the console a moment to catch up.
	sleep 1
}

# wd_finish: keep the trace, unload nmiprof.ko.
wd_finish() {
	save trace cat /sys/kernel/tracing/trace
	check "rmmod nmiprof" rmmod nmiprof
	check "watchdog off at unload" dmesg_has 'nmiprof: watchdog off'
}
