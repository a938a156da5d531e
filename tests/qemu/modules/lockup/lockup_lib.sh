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

# wd_wait_session: wait (up to 30 s) for a sampling session, e.g.
# nmiprofd's, to be on.  A lockup must come after it: START still drops
# lockup records written before it (issue 14, section 2), and nmiprofd
# can take seconds to get there under TCG on a busy host.
wd_wait_session() {
	wd_wait_dmesg 'nmiprof: sampling at'
	check "sampling session on" dmesg_has 'nmiprof: sampling at'
}

# wd_wait_dmesg ERE [SECS]: wait up to SECS (default 30) for a kernel
# log line matching ERE.
wd_wait_dmesg() {
	_i=0
	while ! dmesg_has "$1" && [ $_i -lt "${2:-30}" ]; do
		sleep 1
		_i=$((_i + 1))
	done
}

# wd_lockups_list STORE N: `nmiprof lockups list` of STORE into
# $RESULTS/lockups.txt, once it shows N recovery records (nmiprofd
# drains the rings when it wakes, seconds later under TCG), or after
# 30 s with what it has.
wd_lockups_list() {
	_i=0
	while :; do
		nmiprof lockups --store "$1" list >"$RESULTS/lockups.txt" 2>&1
		[ "$(grep -c 'hard,recovered$' "$RESULTS/lockups.txt")" -ge "$2" ] &&
			return 0
		[ $_i -ge 30 ] && return 1
		sleep 1
		_i=$((_i + 1))
	done
}

# wd_uart_dev LINE: the device ttyS<LINE>'s driver is bound to, into
# $dev (6.12: the serial core's port device, under the hardware's).
wd_uart_dev() {
	dev=$(readlink -f /sys/class/tty/ttyS$1/device)
	while readlink -f "$dev/driver" | grep -q /serial-base/; do
		dev=${dev%/*}
	done
}

# wd_finish: keep the trace, unload nmiprof.ko.
wd_finish() {
	save trace cat /sys/kernel/tracing/trace
	check "rmmod nmiprof" rmmod nmiprof
	check "watchdog off at unload" dmesg_has 'nmiprof: watchdog off'
}
