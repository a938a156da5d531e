# Unclaimed NMIs double as a self-check: only CPU 0 is watched
# (watchdog_cpus=0), so it has no buddy and nothing sends it our NMI.  The
# host injects NMIs (QMP inject-nmi, CPU 0) twice a second while CPU 0
# spins 8 s with interrupts off; the first one after the 4 s threshold
# must make CPU 0 report itself.  The injected NMIs are nobody's, so the
# kernel's "unknown reason" notes are expected.
# @smp 2
# @timeout 100
# @nmi 2 14
# @modules nmiprof_lockup
# @files tests/qemu/modules/lockup/lockup_lib.sh:/bench/lockup_lib.sh
# @allow nmiprof: hard LOCKUP on CPU 0,
. /bench/lockup_lib.sh

wd_load watchdog_thresh=4 watchdog_cpus=0
nmi_start
wd_lockup cpu=0 secs=8
nmi_wait
echo "host sent $NMI_SENT NMIs"
wd_finish
