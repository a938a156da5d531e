# `nmiprof status` shows the lockup reports the module's queue dropped
# (issue 14): with lockup_queue=2 and no reader, a first 2 s lockup fills
# the queue (its hard and recovered records), a second one is dropped.
# Threshold 1 s.
# @smp 2
# @timeout 90
# @modules nmiprof_lockup
# @files tests/qemu/modules/lockup/lockup_lib.sh:/bench/lockup_lib.sh
# @allow nmiprof: hard LOCKUP on CPU 1,
. /bench/lockup_lib.sh

if ! command -v nmiprof >/dev/null; then
	fail "nmiprof not in the initramfs: build it first"
	exit 1
fi

# status: the "lockups:" line of `nmiprof status` into $RESULTS/$1.
status() {
	nmiprof status >$RESULTS/$1 2>&1
	grep '^lockups:' $RESULTS/$1
}

wd_load watchdog_thresh=1 lockup_queue=2
[ "$(status status0.txt)" = "lockups:  0 dropped, lockup queue full" ] ||
	fail "status at load: '$(status status0.txt)', want 0 dropped"
wd_lockup cpu=1 secs=2
wd_lockup cpu=1 secs=2
# Every record the watchdog wrote, but the two the queue holds.
n=$(dmesg | grep -cE 'nmiprof: (hard LOCKUP on CPU 1,|CPU 1 recovered after)')
want=$((n - 2))
echo "records written: $n, want $want dropped"
[ "$want" -ge 2 ] || fail "only $n lockup records written"
[ "$(status status.txt)" = "lockups:  $want dropped, lockup queue full" ] ||
	fail "status: '$(status status.txt)', want $want dropped"
cat $RESULTS/status.txt
wd_finish
