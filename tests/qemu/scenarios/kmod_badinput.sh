# nmiprof.ko bad input: unprivileged open, ioctls before HELLO, wrong
# magic/ABI, wrong sizes, out-of-range and garbage-pointer arguments, bad
# mmap offsets/sizes/protections, double START, garbage consumer tails;
# the watchdog ioctls: GET/SET round trips (and the watchdog restarting
# with what was set), refused bad input that changes nothing, SET refused
# without CAP_SYS_ADMIN; the lockup queue's READ/ACK with bad pointers,
# sizes and ids, on a record a 2 s lockup (threshold 1 s) queued first
# (nmiprof_ringcheck -B lists each check); rmmod refused while a reader
# has the device open; and load/unload 20x while sampling at 20 kHz.
# @smp 2
# @timeout 150
# @progs tests/progs/nmiprof_ringcheck
# @modules nmiprof_lockup
# @allow nmiprof: hard LOCKUP on CPU 1,

check "insmod nmiprof.ko" insmod "$NMIPROF_KO" watchdog_thresh=1
check "insmod nmiprof_lockup" insmod "$MODULES/nmiprof_lockup.ko" cpu=1 secs=2
check "rmmod nmiprof_lockup" rmmod nmiprof_lockup
nmiprof_ringcheck -B >"$RESULTS/badinput.txt" 2>&1 || fail "bad input: $(tail -n 1 "$RESULTS/badinput.txt")"
cat "$RESULTS/badinput.txt"
# SET_WATCHDOG restarted it with the new settings, and restored them.
check "watchdog restarted as set" dmesg_has 'nmiprof: watchdog on: threshold 7 s, CPUs 1$'
check "watchdog stopped as set" dmesg_has 'nmiprof: watchdog off'
check "watchdog restored" sh -c "dmesg | grep 'nmiprof: watchdog on:' | tail -n 1 | grep -q 'threshold 1 s, CPUs 0-1$'"

nmiprof_ringcheck -t 4 -f 2000 >"$RESULTS/busy.txt" 2>&1 &
reader=$!
sleep 2
if rmmod nmiprof 2>/dev/null; then fail "rmmod succeeded while a reader had the rings mapped"; else echo "ok: rmmod refused while in use"; fi
wait $reader || fail "reader during rmmod attempt: $(tail -n 1 "$RESULTS/busy.txt")"
check "rmmod nmiprof" rmmod nmiprof

i=0
while [ $i -lt 20 ]; do
	i=$((i + 1))
	insmod "$NMIPROF_KO" autostart=1 freq=20000 || { fail "insmod $i"; break; }
	sleep 0.2
	rmmod nmiprof || { fail "rmmod $i"; break; }
done
echo "load/unload while sampling: $i rounds"
n=$(dmesg | grep -c 'nmiprof: sampling at 20000 Hz')
[ "$n" -eq 20 ] || fail "autostart sampled in $n of 20 loads"
