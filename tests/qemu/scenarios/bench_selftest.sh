# The bench's own test: a trivial module (tests/qemu/modules/bench_hello)
# loads and unloads and the results come back, independent of nmiprof.ko.
# @kmod optional
# @modules bench_hello
# @smp 2
# @timeout 60

check "insmod bench_hello.ko" insmod "$MODULES/bench_hello.ko"
check "bench_hello in /proc/modules" module_loaded bench_hello
check "bench_hello load line" dmesg_has 'bench_hello: loaded'
check "rmmod bench_hello" rmmod bench_hello
check "bench_hello unload line" dmesg_has 'bench_hello: unloaded'
save proc-interrupts cat /proc/interrupts
