# Smoke test: nmiprof.ko loads and unloads cleanly on this kernel.
# @smp 2
# @timeout 90

[ -f "$NMIPROF_KO" ] || { fail "no $NMIPROF_KO in the initramfs"; exit 1; }

check "insmod nmiprof.ko" insmod "$NMIPROF_KO"
check "nmiprof listed in /proc/modules" module_loaded nmiprof
check "load line in the kernel log" dmesg_has 'nmiprof: loaded'
save modules.loaded cat /proc/modules

check "rmmod nmiprof" rmmod nmiprof
if module_loaded nmiprof; then fail "nmiprof still in /proc/modules after rmmod"; else echo "ok: nmiprof gone from /proc/modules"; fi
check "unload line in the kernel log" dmesg_has 'nmiprof: unloaded'
