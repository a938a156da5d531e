# Bad unwind tables (issue 13): truncated, overlapping, self-referencing
# (CFA = rsp + 0), huge offsets or row counts are refused with EINVAL;
# a process whose mapping set names a dropped table (a file that was
# replaced) still gets whole frame-pointer stacks; one whose set names a
# valid table for other code (rows of every kind) is walked within its
# depth, with the walks counted and no oops; a set for a process whose
# leader exited while a thread runs on is accepted.  nmiprof_ringcheck -T
# (tests/progs) drives the ioctls and checks the records.
# @smp 2
# @timeout 90
# @progs tests/progs/nmiprof_ringcheck

ringcheck() {
	_n=$1
	shift
	nmiprof_ringcheck "$@" >"$RESULTS/$_n.txt" 2>&1
	_rc=$?
	grep -vE '^  ' "$RESULTS/$_n.txt"
	[ $_rc -eq 0 ] || fail "ringcheck $_n: $(tail -n 1 "$RESULTS/$_n.txt")"
}

check "insmod nmiprof.ko" insmod "$NMIPROF_KO"
ringcheck dropped -t 3 -f 1000 -w -n 500 -T dropped
ringcheck wrong -t 3 -f 1000 -w -n 500 -T wrong
ringcheck wrong_deep -t 2 -f 1000 -w -n 300 -u 127 -T wrong
check "rmmod nmiprof" rmmod nmiprof
