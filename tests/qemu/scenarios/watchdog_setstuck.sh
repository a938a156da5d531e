# SET_WATCHDOG and stopping a session wait for no CPU (issue 14, section
# 4): while CPU 1 spins 8 s with interrupts off (under the 10 s
# threshold), nmiprof_wdset closes the file that started a sampling
# session (as killing `nmiprof record` does), then turns the watchdog
# off, then on with a 2 s threshold.  Each must return during the spin,
# within 2 s.  CPU 1 is watched again at once, stuck as
# it is: it is reported during the spin, a threshold after the restart
# (before, only once it was back), and recovers.  Its time stuck is
# counted from the restart, so both lines say "at least", and so does
# `nmiprof lockups list` (">=") once nmiprofd, started after the spin,
# has stored them.  A 4 s lockup afterwards is reported too, its time
# measured from a heartbeat: exact, in the log and in the list.
# The spin starts 1 s after its insmod: insmod waits for every CPU
# (TLB flushes) with preemption off, and would hold CPU 0 for the spin.
# @smp 2
# @timeout 120
# @modules nmiprof_lockup
# @progs tests/progs/nmiprof_wdset
# @files tests/qemu/modules/lockup/lockup_lib.sh:/bench/lockup_lib.sh
# @allow nmiprof: hard LOCKUP on CPU 1,
. /bench/lockup_lib.sh

if ! command -v nmiprofd >/dev/null || ! command -v nmiprof >/dev/null; then
	fail "nmiprofd or nmiprof not in the initramfs: build them first"
	exit 1
fi
wd_load
# Started, and past exec, before the spin: see nmiprof_wdset.c.
nmiprof_wdset -s -r /tmp/wdset.ready -w 'nmiprof_lockup: spinning now' \
	1000 0:10 1:2 >$RESULTS/wdset.txt 2>&1 &
ws=$!
_i=0
while [ ! -e /tmp/wdset.ready ] && [ $_i -lt 300 ]; do
	sleep 0.1
	_i=$((_i + 1))
done
wd_lockup cpu=1 secs=8 delay_ms=1000
wait $ws || fail "nmiprof_wdset failed"
cat $RESULTS/wdset.txt

# In the kernel's log order: the three calls between the spin's start
# and end.
dmesg >$RESULTS/dmesg_spin.txt
awk '
/nmiprof_lockup: spinning now/ { spin = 1 }
/nmiprof_lockup: done/ { spin = 0 }
/nmiprof_wdset: (SET_WATCHDOG|close)/ {
	n++
	ms = $NF == "ms" ? $(NF - 1) : -1
	if (!spin) { print "FAIL: returned after the spin ended: " $0; bad = 1 }
	else if ($0 !~ /: done after/ || ms > 2000) { print "FAIL: " $0; bad = 1 }
	else print "ok: during the spin: " $0
}
END { if (n != 3) { print "FAIL: " n " nmiprof_wdset lines, want 3"; bad = 1 }
      exit bad }' $RESULTS/dmesg_spin.txt ||
	fail "SET_WATCHDOG or the session's stop waited for the CPU with interrupts off"

check "watchdog on at 2 s" dmesg_has 'nmiprof: watchdog on: threshold 2 s'
# Stuck across the restart: reported after it, before the spin's end.
awk '
/nmiprof: watchdog on: threshold 2 s/ { on = 1 }
/nmiprof_lockup: done/ { exit }
on && /nmiprof: hard LOCKUP on CPU 1,/ { n++ }
END { print "reports of CPU 1 after the restart, during the spin: " n + 0
      exit n != 1 }' $RESULTS/dmesg_spin.txt ||
	fail "CPU 1, stuck across the restart, not reported once during the spin"
check "report counts from the restart: at least" dmesg_has \
	'nmiprof: hard LOCKUP on CPU 1, no timer interrupt for at least [0-9]+\.[0-9]{3} s$'
check "CPU 1 recovered after at least" dmesg_has \
	'nmiprof: CPU 1 recovered after at least [0-9]+\.[0-9]{3} s$'
mkdir -p /tmp/store
nmiprofd -b kmod -s /tmp/store -S /tmp/nmiprofd.sock -F 19 \
	>/tmp/nmiprofd.log 2>&1 &
npd=$!
# Its session is the second: nmiprof_wdset's was the first.
_i=0
while [ "$(dmesg | grep -c 'nmiprof: sampling at')" -lt 2 ] && [ $_i -lt 30 ]; do
	sleep 1
	_i=$((_i + 1))
done
wd_lockup cpu=1 secs=4
n=$(dmesg | grep -c 'nmiprof: hard LOCKUP on CPU 1,')
[ "$n" -eq 2 ] || fail "CPU 1 reported $n times after the restart, want 2"
n=$(dmesg | grep -cE 'nmiprof: (hard LOCKUP on CPU 1,|CPU 1 recovered) .*at least')
[ "$n" -eq 2 ] || fail "$n lines of CPU 1 say 'at least', want 2 (the spin across the restart)"

# ID, EP, date, time, CPU, PID, COMM, STUCK, FLAGS: the first spin's
# report and recovery are lower bounds, the 4 s lockup's are not.
wd_lockups_list /tmp/store 2
cat $RESULTS/lockups.txt
awk '$1 != "ID" && $5 == 1 {
	if (++n <= 2 ? $8 !~ /^>=[0-9]+\.[0-9][0-9]s$/ : $8 !~ /^[0-9]+\.[0-9][0-9]s$/) {
		print "FAIL: " $0; bad = 1
	}
}
END { if (n != 4) { print "FAIL: " n " records of CPU 1, want 4"; bad = 1 }
      exit bad }' $RESULTS/lockups.txt ||
	fail "nmiprof lockups list: the spin across the restart not shown as at least"
kill $npd
wait $npd
cp /tmp/nmiprofd.log $RESULTS/
wd_finish
