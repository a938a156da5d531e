# SET_WATCHDOG, killing `nmiprof record -a` and starting nmiprofd wait
# for no CPU (issue 14, section 4): while CPU 1 spins 12 s with
# interrupts off (over the 10 s threshold, reported only after the
# restart), nmiprof_wdset turns the watchdog off, then on with a 2 s
# threshold, each call within 2 s.  `nmiprof record -a`, killed 1 s into
# the spin, must be gone within 2 s, and nmiprofd, started then, must be
# sampling before the spin ends.  record's side-band perf events are
# bound to each CPU: opening or closing one is a cross call that CPU must
# take, so before ABI 1.7 both waited for the spin's end.  A 60 s spin
# changes nothing: all of this happens in its first seconds, and nothing
# waits for its end any more.  CPU 1 is watched again at once, stuck as
# it is: it is reported during the spin, a threshold after the restart
# (before, only once it was back), and recovers.  Its time stuck is
# counted from the restart, so both lines say "at least", and so does
# `nmiprof lockups list` (">=") once nmiprofd, started during the spin,
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
# A fork or exit by a process that ever ran on CPU 1 sends it a TLB
# flush and waits: the scenario runs on CPU 0 only.  busybox's background
# jobs ignore SIGINT: the recorder is signalled itself.
if [ -z "$SETSTUCK_PINNED" ]; then
	export SETSTUCK_PINNED=1
	exec taskset 1 sh -c 'cd /tmp && . /bench/lib.sh && . /bench/scenario.sh'
fi
. /bench/lockup_lib.sh

# Milliseconds of uptime into $ms, without a fork (slow under TCG).
now_ms() {
	read -r _up _idle </proc/uptime
	ms=$((${_up%.*}${_up#*.} * 10))
}
size() { wc -c <"$1" 2>/dev/null || echo 0; }

if ! command -v nmiprofd >/dev/null || ! command -v nmiprof >/dev/null; then
	fail "nmiprofd or nmiprof not in the initramfs: build them first"
	exit 1
fi
wd_load
nmiprof record -o /tmp/rec.prof --backend kmod -F 19 -a \
	>$RESULTS/record.txt 2>&1 &
rec=$!
# Up and running: its first segment written after the empty one.  Until
# then it is busy with what it found at start (unwind tables of every
# process, seconds under TCG), which would delay its exit too.
_i=0
while [ ! -s /tmp/rec.prof ] && [ $_i -lt 300 ]; do
	sleep 0.1
	_i=$((_i + 1))
done
s0=$(size /tmp/rec.prof)
_i=0
while [ "$(size /tmp/rec.prof)" -le "$s0" ] && [ $_i -lt 300 ]; do
	sleep 0.1
	_i=$((_i + 1))
done
# Started, and past exec, before the spin: see nmiprof_wdset.c.
nmiprof_wdset -r /tmp/wdset.ready -w 'nmiprof_lockup: spinning now' \
	1000 0:10 1:2 >$RESULTS/wdset.txt 2>&1 &
ws=$!
_i=0
while [ ! -e /tmp/wdset.ready ] && [ $_i -lt 300 ]; do
	sleep 0.1
	_i=$((_i + 1))
done
check "insmod nmiprof_lockup cpu=1 secs=12" \
	insmod "$MODULES/nmiprof_lockup.ko" cpu=1 secs=12 delay_ms=1000
wd_wait_dmesg 'nmiprof_lockup: spinning now' 10
sleep 1
now_ms
t0=$ms
kill -INT $rec
wait $rec
st=$?
now_ms
echo "record exited $((ms - t0)) ms after SIGINT, status $st" | tee $RESULTS/record_exit.txt
dmesg_has 'nmiprof_lockup: done' &&
	fail "nmiprof record exited only after the spin ended"
[ $((ms - t0)) -le 2000 ] ||
	fail "nmiprof record took $((ms - t0)) ms to exit after SIGINT, want <= 2000"
mkdir -p /tmp/store
nmiprofd -b kmod -s /tmp/store -S /tmp/nmiprofd.sock -F 19 \
	>/tmp/nmiprofd.log 2>&1 &
npd=$!
# its side-band: on CPU 0 only while CPU 1 spins
perf_fds() { ls -l /proc/$npd/fd 2>/dev/null | grep -c 'perf_event'; }
_i=0
while [ "$(dmesg | grep -c 'nmiprof: sampling at')" -lt 2 ] &&
	! dmesg_has 'nmiprof_lockup: done' && [ $_i -lt 200 ]; do
	sleep 0.1
	_i=$((_i + 1))
done
echo "nmiprofd perf events during the spin: $(perf_fds)" >$RESULTS/sideband.txt
check "rmmod nmiprof_lockup" rmmod nmiprof_lockup
sleep 1
wait $ws || fail "nmiprof_wdset failed"
cat $RESULTS/wdset.txt

# In the kernel's log order: both calls and nmiprofd's session, between
# the spin's start and end.
dmesg >$RESULTS/dmesg_spin.txt
awk '
/nmiprof_lockup: spinning now/ { spin = 1 }
/nmiprof_lockup: done/ { spin = 0 }
/nmiprof: sampling at/ && ++sessions == 2 {
	if (spin) print "ok: nmiprofd sampling during the spin: " $0
	else { print "FAIL: nmiprofd sampling only after the spin: " $0; bad = 1 }
}
/nmiprof_wdset: SET_WATCHDOG/ {
	n++
	ms = $NF == "ms" ? $(NF - 1) : -1
	if (!spin) { print "FAIL: returned after the spin ended: " $0; bad = 1 }
	else if ($0 !~ /: done after/ || ms > 2000) { print "FAIL: " $0; bad = 1 }
	else print "ok: during the spin: " $0
}
END { if (n != 2) { print "FAIL: " n " nmiprof_wdset lines, want 2"; bad = 1 }
      if (sessions < 2) { print "FAIL: nmiprofd never sampled"; bad = 1 }
      exit bad }' $RESULTS/dmesg_spin.txt ||
	fail "SET_WATCHDOG or nmiprofd's start waited for the CPU with interrupts off"

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
# nmiprofd's side-band on CPU 1 too once it answers (asked once a second)
_i=0
while [ "$(perf_fds)" -lt 2 ] && [ $_i -lt 10 ]; do
	sleep 1
	_i=$((_i + 1))
done
echo "nmiprofd perf events after the spin: $(perf_fds)" >>$RESULTS/sideband.txt
cat $RESULTS/sideband.txt
[ "$(perf_fds)" -eq 2 ] || fail "nmiprofd's side-band not on both CPUs after the spin"
kill $npd
wait $npd
cp /tmp/nmiprofd.log $RESULTS/
wd_finish
