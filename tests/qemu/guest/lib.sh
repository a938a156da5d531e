# Helpers for QEMU bench scenarios; /init sources this before the scenario.
#
# Environment: BENCH_SCENARIO, BENCH_KVER, BENCH_SMP, BENCH_NMI_RATE and
# BENCH_NMI_DURATION (0 without "@nmi"), RESULTS (directory whose files
# come back to the host), NMIPROF_KO (path of nmiprof.ko, may be absent),
# MODULES (directory of the declared test modules, <name>.ko).

# fail MSG: record a failure; the scenario goes on, the test fails.
fail() {
	echo "FAIL: $*"
	echo "$*" >>"$RESULTS/failures"
}

# check DESCRIPTION CMD...: run CMD, record a failure if it fails.
check() {
	_d=$1
	shift
	if "$@"; then echo "ok: $_d"; else fail "$_d (exit $?)"; fi
}

# dmesg_has ERE: the kernel log has a line matching ERE.
dmesg_has() { dmesg | grep -Eq -- "$1"; }

# module_loaded NAME: NAME is listed in /proc/modules.
module_loaded() { grep -q "^$1 " /proc/modules; }

# nmi_start: ask the host to start injecting NMIs (QMP inject-nmi, CPU 0
# only) at the scenario's "@nmi RATE DURATION"; returns at once.
# nmi_wait: sleep until the injection is over (plus a second of slack).
nmi_start() { echo "@@NMIPROF-BENCH-NMI-START@@" >/dev/console; }
nmi_wait() { sleep $((BENCH_NMI_DURATION + 1)); }

# Save a file or a command's output as a result: save NAME CMD...
save() {
	_n=$1
	shift
	"$@" >"$RESULTS/$_n" 2>&1
}
