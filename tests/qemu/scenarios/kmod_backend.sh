# The real userspace stack on the real module (issue 3): libnmiprof's kmod
# backend (HELLO, the format text parsed by libtraceevent, CONFIGURE, the
# mmapped rings) under `nmiprof top`, `nmiprof record`/`report` and
# nmiprofd + `nmiprof status`.  The guest's outputs are checked by
# kmod_backend.check.py: backend kmod with source ipi (TCG has no PMU),
# hot_a/hot_b ~75/25 of tests/progs/hot's samples as [.] frames, the
# irqs-off spin as [k] nmiprof_spin_loop on its CPU, lost counts shown,
# status showing the module, the nested-NMI-safe entry and handler cost.
# @smp 2
# @timeout 150
# @modules nmiprof_spin
# @progs tests/progs/hot

if ! command -v nmiprofd >/dev/null || ! command -v nmiprof >/dev/null; then
	fail "nmiprofd or nmiprof not in the initramfs: build them first"
	exit 1
fi
check "insmod nmiprof.ko" insmod "$NMIPROF_KO"
check "nested-NMI safe entry found" dmesg_has 'nmiprof: loaded.*nested-NMI safe entry found'

# stamp NAME: wall-clock seconds since boot, for the per-step timings.
stamp() { echo "$1 $(cut -d' ' -f1 /proc/uptime)" >>"$RESULTS/steps.txt"; }

# 1. top, one process: hot uses 6 s of CPU, top samples 4 s of it.
stamp top_pid
hot 6 >"$RESULTS/hot_top.txt" &
hotpid=$!
sleep 0.5
nmiprof top --stdio --once --backend kmod -F 1000 -d 4 -n 15 -p $hotpid \
	>"$RESULTS/top_pid.txt" 2>"$RESULTS/top_pid.err"
echo "top rc $?" >>"$RESULTS/top_pid.err"
wait $hotpid

# 2. CPU 1 spins 4 s with interrupts off inside an 8 s system-wide
# recording.  Only the other CPU's timer can NMI it, so the session must
# run before the spin starts (starting one needs every CPU's interrupts).
stamp record_spin
nmiprof record -o /tmp/spin.prof --backend kmod -F 1000 -a -d 8 \
	>"$RESULTS/record_spin.txt" 2>&1 &
rec=$!
i=0
until nmiprof status 2>/dev/null | grep -q '^source:.*running'; do
	i=$((i + 1))
	[ $i -lt 50 ] || break
	sleep 0.2
done
stamp spin_start
check "insmod nmiprof_spin" insmod "$MODULES/nmiprof_spin.ko" cpu=1 secs=4
wait $rec
echo "record rc $?" >>"$RESULTS/record_spin.txt"
stamp spin_recorded
check "rmmod nmiprof_spin" rmmod nmiprof_spin
nmiprof report -i /tmp/spin.prof --cpu 1 -n 10 >"$RESULTS/report_spin.txt" 2>&1
echo "report rc $?" >>"$RESULTS/report_spin.txt"

# 3. record a command, then report it.  hot is a child of the command
# ("; true" keeps sh from exec'ing it): the backend follows descendants.
stamp record
nmiprof record -o /tmp/hot.prof --backend kmod -F 1000 -- sh -c 'hot 3; true' \
	>"$RESULTS/record.txt" 2>&1
echo "record rc $?" >>"$RESULTS/record.txt"
nmiprof report -i /tmp/hot.prof -n 15 >"$RESULTS/report.txt" 2>&1
echo "report rc $?" >>"$RESULTS/report.txt"

# 4. nmiprofd on the kmod backend, and status.
stamp daemon
mkdir -p /tmp/store
nmiprofd -b kmod -s /tmp/store -S /tmp/nmiprofd.sock -F 1000 \
	>/tmp/nmiprofd.log 2>&1 &
npd=$!
hot 3 >/dev/null
check "nmiprofd running" kill -0 $npd
nmiprof status --socket /tmp/nmiprofd.sock >"$RESULTS/status.txt" 2>&1
echo "status rc $?" >>"$RESULTS/status.txt"
kill $npd
wait $npd
cp /tmp/nmiprofd.log "$RESULTS/"
stamp end

check "rmmod nmiprof" rmmod nmiprof
cat "$RESULTS/top_pid.txt" "$RESULTS/top_pid.err" "$RESULTS/hot_top.txt" \
	"$RESULTS/record_spin.txt" "$RESULTS/report_spin.txt" "$RESULTS/record.txt" \
	"$RESULTS/report.txt" "$RESULTS/status.txt"
