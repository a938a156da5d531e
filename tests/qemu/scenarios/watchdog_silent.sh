# A CPU that cannot answer the watchdog's NMI: CPU 1 spins 12 s inside an
# NMI handler, so NMIs stay blocked.  Its buddy must say so itself (no
# registers: only the stuck CPU could read them) once the NMI went
# unanswered for another threshold, and CPU 1 must not report the old
# episode when the latched NMI finally arrives.  Threshold 4 s.
# @smp 2
# @timeout 100
# @modules nmiprof_lockup
# @files tests/qemu/modules/lockup/lockup_lib.sh:/bench/lockup_lib.sh
# @allow nmiprof: hard LOCKUP on CPU 1,
. /bench/lockup_lib.sh

wd_load watchdog_thresh=4
wd_lockup cpu=1 secs=12 nmi=1
wd_finish
