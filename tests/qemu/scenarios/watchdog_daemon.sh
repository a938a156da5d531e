# End to end: the NMIPROF_REC_LOCKUP record the stuck CPU writes to its
# ring from NMI reaches nmiprofd, which stores it at once, and
# `nmiprof lockups` lists it (CPU, task, stuck time) with the recovery
# record after it, and shows its stack down to kthread.  Threshold 4 s.
# @smp 2
# @timeout 120
# @modules nmiprof_lockup
# @files tests/qemu/modules/lockup/lockup_lib.sh:/bench/lockup_lib.sh
# @allow nmiprof: hard LOCKUP on CPU 1,
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

wd_lockup cpu=1 secs=7
wd_lockups_list /tmp/store 1
# ID, EP, date, time, CPU, PID, COMM, STUCK, FLAGS
id=$(awk '$1 != "ID" && $5 == 1 && $7 == "np_lockup/1" && $NF == "hard" {
	print $1; exit }' $RESULTS/lockups.txt)
if [ -z "$id" ]; then
	fail "no hard lockup of CPU 1 by np_lockup/1 in 'nmiprof lockups list'"
else
	echo "ok: lockup $id stored"
	save lockup.txt nmiprof lockups --store /tmp/store show "$id"
	check "stored report: task" grep -q 'task:  np_lockup/1 pid' $RESULTS/lockup.txt
	check "stored report: registers" grep -q 'orig_ax' $RESULTS/lockup.txt
	check "stored report: stack down to kthread" \
		grep -q 'kthread+' $RESULTS/lockup.txt
fi
check "recovery record stored" \
	awk '$5 == 1 && $NF == "hard,recovered" { f = 1 } END { exit !f }' \
	$RESULTS/lockups.txt
kill $npd
wait $npd
cp /tmp/nmiprofd.log $RESULTS/
wd_finish
