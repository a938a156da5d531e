# watchdog_allstuck on 4 CPUs, with CPU 2 holding console_lock, and
# nmiprofd running: after the spins, `nmiprof lockups list` shows the
# four reports as one episode (and the recoveries in it).
# @smp 4
# @timeout 120
# @nmi 2 16
# @modules nmiprof_lockup
# @files tests/qemu/modules/lockup/lockup_lib.sh:/bench/lockup_lib.sh
# @allow nmiprof: hard LOCKUP on CPU [0-3],
. /bench/lockup_lib.sh

if ! command -v nmiprofd >/dev/null || ! command -v nmiprof >/dev/null; then
	fail "nmiprofd or nmiprof not in the initramfs: build them first"
	exit 1
fi
wd_load watchdog_thresh=4
mkdir -p /tmp/store
nmiprofd -b kmod -s /tmp/store -S /tmp/nmiprofd.sock -F 19 \
	>/tmp/nmiprofd.log 2>&1 &
npd=$!
wd_wait_session
check "nmiprofd running" kill -0 $npd
nmi_start
wd_lockup cpu=2 all=1 secs=8 console=1
nmi_wait
echo "host sent $NMI_SENT NMIs"
wd_lockups_list /tmp/store "$BENCH_SMP"
# ID, EP, date, time, CPU, PID, COMM, STUCK, FLAGS: one episode, every
# CPU's hard report in it.
check "one episode with every CPU" awk -v n="$BENCH_SMP" '
	$1 == "ID" { next }
	{ ep[$2] = 1 }
	$NF == "hard" && $7 ~ /^np_lockup\// { cpu[$5] = 1 }
	END { for (e in ep) ne++; for (c in cpu) nc++; exit !(ne == 1 && nc == n) }
' "$RESULTS/lockups.txt"
kill $npd
wait $npd
cp /tmp/nmiprofd.log "$RESULTS/"
wd_finish
