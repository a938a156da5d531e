# Every CPU stuck: both CPUs spin 8 s with interrupts off at once, so no
# timer checks anyone and only the host's NMIs (QMP inject-nmi, CPU 0,
# twice a second) get in.  Each CPU must report itself, once, whole,
# within threshold + 2 s of its spin's start: CPU 0 on a host NMI, CPU 1
# on the NMI CPU 0 then sends it.  Then again with CPU 1 holding
# console_lock, so only the polled UART writer gets anything out.
# Threshold 4 s.  The host's NMIs are nobody's: "unknown reason" notes.
# @smp 2
# @timeout 120
# @nmi 2 26
# @modules nmiprof_lockup
# @files tests/qemu/modules/lockup/lockup_lib.sh:/bench/lockup_lib.sh
# @allow nmiprof: hard LOCKUP on CPU [01],
. /bench/lockup_lib.sh

wd_load watchdog_thresh=4
nmi_start
wd_lockup cpu=0 all=1 secs=8
wd_lockup cpu=1 all=1 secs=8 console=1
nmi_wait
echo "host sent $NMI_SENT NMIs"
wd_finish
