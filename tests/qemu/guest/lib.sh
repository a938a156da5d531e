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
# nmi_wait: wait until the host reports the injection over, and set
# NMI_SENT to the number of NMIs QEMU acknowledged. Returns 1 (NMI_SENT
# empty) if no report came within DURATION + 60 s.
nmi_start() {
	[ "${BENCH_NMI_RATE:-0}" -gt 0 ] || { fail "nmi_start without @nmi RATE DURATION"; return 1; }
	echo "@@NMIPROF-BENCH-NMI-START@@" >/dev/console
}
nmi_wait() {
	NMI_SENT=
	[ "${BENCH_NMI_RATE:-0}" -gt 0 ] || return 1
	while read -r -t $((BENCH_NMI_DURATION + 60)) _l <&3; do
		case $_l in
		*@@NMIPROF-NMI-DONE@@*)
			NMI_SENT=${_l##*sent=}
			NMI_SENT=${NMI_SENT%%[!0-9]*}
			return 0
			;;
		esac
	done
	fail "no end-of-injection report from the host"
	return 1
}

# Save a file or a command's output as a result: save NAME CMD...
save() {
	_n=$1
	shift
	"$@" >"$RESULTS/$_n" 2>&1
}

# send_results STATUS: the end state and $RESULTS, as a base64 tar.gz on
# ttyS1 (the host decodes the first such block).
send_results() {
	cat /proc/sys/kernel/tainted >"$RESULTS/tainted"
	cat /proc/modules >"$RESULTS/modules.end"
	dmesg >"$RESULTS/dmesg.txt"
	echo "$1" >"$RESULTS/status"
	{
		echo "@@NMIPROF-RESULTS-BEGIN@@"
		tar -C "$RESULTS" -c . | gzip -1 | base64
		echo "@@NMIPROF-RESULTS-END@@"
	} >/dev/ttyS1
}

# expect_panic: what follows must panic the kernel ("@panic REGEX"): the
# results go to the host now, then a mark on the console; the run passes
# only if a panic matching REGEX comes after the mark.
expect_panic() {
	_rc=0
	[ -s "$RESULTS/failures" ] && _rc=1
	send_results $_rc
	echo "@@NMIPROF-BENCH-PANIC-ARMED@@" >/dev/console
}
