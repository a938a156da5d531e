# Suspend and resume: the pm notifier stops the watchdog before the
# system sleeps and starts it afresh after, so time asleep is never taken
# for a lockup: a pm_test "devices" suspend (notifiers, freezer, device
# suspend, then the kernel busy-waits 5 s, longer than the 4 s threshold,
# and resumes).  A real suspend-to-idle is not used: under TCG the guest
# did not wake from it (RTC alarm).  Then per-CPU enable:
# reloaded with watchdog_cpus=0, a 6 s lockup of CPU 1 goes unreported.
# Reloaded with all CPUs, a real lockup must be reported.
# @smp 2
# @timeout 120
# @modules nmiprof_lockup
# @files tests/qemu/modules/lockup/lockup_lib.sh:/bench/lockup_lib.sh
# @allow nmiprof: hard LOCKUP on CPU 1,
. /bench/lockup_lib.sh

wd_load watchdog_thresh=4

check "pm_test devices" sh -c 'echo devices >/sys/power/pm_test'
check "test suspend" sh -c 'echo freeze >/sys/power/state'
check "pm_test off" sh -c 'echo none >/sys/power/pm_test'

n=$(dmesg | grep -c 'nmiprof: watchdog on')
[ "$n" -eq 2 ] || fail "watchdog started $n times, want 2 (load, resume)"
n=$(dmesg | grep -c 'nmiprof: watchdog off')
[ "$n" -eq 1 ] || fail "watchdog stopped $n times, want 1 (suspend)"
if dmesg | grep -q 'nmiprof: hard LOCKUP'; then
	fail "a lockup was reported across suspend"
fi

check "rmmod nmiprof" rmmod nmiprof
check "insmod nmiprof.ko watchdog_cpus=0" \
	insmod "$NMIPROF_KO" watchdog_thresh=4 watchdog_cpus=0
check "watching CPU 0 only" dmesg_has 'nmiprof: watchdog on: threshold 4 s, CPUs 0$'
wd_lockup cpu=1 secs=6
if dmesg | grep -q 'nmiprof: hard LOCKUP'; then
	fail "CPU 1 reported although not watched"
else
	echo "ok: unwatched CPU 1 not reported"
fi
check "rmmod nmiprof" rmmod nmiprof

wd_load watchdog_thresh=4

wd_lockup cpu=1 secs=7
wd_finish
