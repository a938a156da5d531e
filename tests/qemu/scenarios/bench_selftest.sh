# The bench's own test, independent of nmiprof.ko: a trivial module
# (tests/qemu/modules/bench_hello) loads and unloads, QMP-injected NMIs
# reach CPU 0 and are counted, and the results come back to the host
# (bench_selftest.check.py compares the counts there).
# @kmod optional
# @modules bench_hello
# @smp 2
# @timeout 90
# @nmi 50 2

check "insmod bench_hello.ko" insmod "$MODULES/bench_hello.ko"
check "bench_hello in /proc/modules" module_loaded bench_hello
check "bench_hello load line" dmesg_has 'bench_hello: loaded'
check "rmmod bench_hello" rmmod bench_hello
check "bench_hello unload line" dmesg_has 'bench_hello: unloaded'

cpu0_nmis() { awk '$1 == "NMI:" { print $2 }' /proc/interrupts; }
before=$(cpu0_nmis)
nmi_start
nmi_wait
after=$(cpu0_nmis)
echo "NMIs: host sent $NMI_SENT, CPU 0 counted $((after - before))"
echo "$NMI_SENT $((after - before))" >"$RESULTS/nmi-counts"
