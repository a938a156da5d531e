# Lockups are never lost by the module (issue 14, section 2): a lockup
# with no nmiprofd running, one during START/STOP loops of another
# reader, and one while nmiprofd restarts all reach `nmiprof lockups
# list` once nmiprofd runs, each stored exactly once.  Threshold 1 s,
# 2 s spins.  The rings (1 MiB a CPU) are made by the first session, not
# at load (issue 14, section 7): none while only the watchdog runs.
# @smp 2
# @timeout 120
# @modules nmiprof_lockup
# @progs tests/progs/nmiprof_ringcheck
# @files tests/qemu/modules/lockup/lockup_lib.sh:/bench/lockup_lib.sh
# @allow nmiprof: hard LOCKUP on CPU 1,
. /bench/lockup_lib.sh

if ! command -v nmiprofd >/dev/null || ! command -v nmiprof >/dev/null; then
	fail "nmiprofd or nmiprof not in the initramfs: build them first"
	exit 1
fi

npd_start() {
	nmiprofd -b kmod -s /tmp/store -S /tmp/nmiprofd.sock -F 19 \
		>>/tmp/nmiprofd.log 2>&1 &
	npd=$!
}

# ring_bytes: bytes nmiprof.ko has in vmalloc_user() memory (the rings).
ring_bytes() {
	awk '/\[nmiprof\]/ && / user/ { s += $2 } END { print s + 0 }' \
		/proc/vmallocinfo
}

# npd_wait N: wait (up to 30 s) for N lockups of CPU 1 and N recoveries.
npd_wait() {
	_i=0
	while :; do
		nmiprof lockups --store /tmp/store list >$RESULTS/lockups.txt 2>&1
		hard=$(awk '$5 == 1 && $NF == "hard"' $RESULTS/lockups.txt | wc -l)
		rec=$(awk '$5 == 1 && $NF == "hard,recovered"' $RESULTS/lockups.txt | wc -l)
		[ "$hard" -ge "$1" ] && [ "$rec" -ge "$1" ] && break
		[ $_i -ge 30 ] && break
		sleep 1
		_i=$((_i + 1))
	done
	echo "lockups listed: $hard hard, $rec recovered (want $1 each)"
	[ "$hard" -eq "$1" ] && [ "$rec" -eq "$1" ] ||
		fail "want $1 lockups and $1 recoveries of CPU 1 listed, have $hard and $rec"
}

wd_load watchdog_thresh=1
mkdir -p /tmp/store

# 1. Nobody reads: the module keeps the records, and has no rings.
wd_lockup cpu=1 secs=2
b=$(ring_bytes)
echo "ring memory, watchdog only: $b bytes"
[ "$b" -eq 0 ] || fail "rings allocated with no session: $b bytes"

# 2. Sessions start and stop while CPU 1 reports and recovers.
( while [ ! -e /tmp/stop ]; do
	nmiprof_ringcheck -t 0.1 -f 99 >/dev/null 2>&1
	echo x >>/tmp/sessions
  done ) &
loop=$!
wd_lockup cpu=1 secs=2
touch /tmp/stop
wait $loop
echo "sessions during the lockup: $(wc -l </tmp/sessions)"
b=$(ring_bytes)
n=$(awk -F, '{ for (i = 1; i <= NF; i++) {
	split($i, r, "-"); n += r[2] == "" ? 1 : r[2] - r[1] + 1 } }
	END { print n }' /sys/devices/system/cpu/possible)
echo "ring memory after sessions: $b bytes, $n possible CPUs"
[ "$b" -ge $((n * (1024 + 4) * 1024)) ] ||
	fail "rings of $n CPUs not made by a session: $b bytes"

# 3. nmiprofd, started after both, finds them.
npd_start
npd_wait 2

# 4. A lockup while nmiprofd restarts.
kill $npd
wait $npd
check "insmod nmiprof_lockup" insmod "$MODULES/nmiprof_lockup.ko" cpu=1 secs=2
npd_start
check "rmmod nmiprof_lockup" rmmod nmiprof_lockup
npd_wait 3

kill $npd
wait $npd
cp /tmp/nmiprofd.log $RESULTS/
wd_finish
