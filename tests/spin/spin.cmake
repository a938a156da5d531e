# SPIN models of kmod/'s lock-free protocols (tests/spin/*.pml, Debian's
# spin): each model is searched exhaustively and must hold; each
# deliberate bug (a -D macro) must be found, so these tests can fail.
set(NMIPROF_SPIN_DIR ${CMAKE_CURRENT_LIST_DIR})
function(nmiprof_spin name model want)
  add_test(NAME ${name} COMMAND sh ${NMIPROF_SPIN_DIR}/verify.sh
    ${NMIPROF_SPIN_DIR}/${model} ${CMAKE_CURRENT_BINARY_DIR}/spin/${name}
    ${want} ${ARGN})
  set_tests_properties(${name} PROPERTIES LABELS "unit;spin" TIMEOUT 300
    SKIP_RETURN_CODE 77)
endfunction()
nmiprof_spin(spin_latch latch.pml pass)
nmiprof_spin(spin_latch_bug_split_dec latch.pml bug -DBUG_SPLIT_DEC)
nmiprof_spin(spin_ring ring.pml pass)
nmiprof_spin(spin_ring_two_samples ring.pml pass -DNMI_RUNS=2 -DNO_NESTED)
nmiprof_spin(spin_ring_bug_no_recheck ring.pml bug -DBUG_NO_RECHECK)
nmiprof_spin(spin_ring_bug_early_head ring.pml bug -DBUG_EARLY_HEAD)
nmiprof_spin(spin_ring_bug_trim_store ring.pml bug -DBUG_TRIM_STORE)
# Issue 14: the LOST record written by nested writers too, and STOP's
# flush while the watchdog still writes the rings.
nmiprof_spin(spin_ring_bug_nested_lost ring.pml bug -DBUG_NESTED_LOST)
nmiprof_spin(spin_ring_bug_stop_race ring.pml bug -DSTOP_RACE)
# What the compiler could do before (E) sat at publish's retry label.
nmiprof_spin(spin_ring_bug_hoist_head ring.pml bug -DBUG_HOIST_HEAD -DNMI_RUNS=2
  -DNO_NESTED)
nmiprof_spin(spin_watchdog watchdog.pml pass)
nmiprof_spin(spin_watchdog_bug_split_xchg watchdog.pml bug -DBUG_SPLIT_XCHG)
# A report that outlasts the threshold (issue 14, section 6) is reported
# once; when REPORTING was no answer, it was reported twice.
nmiprof_spin(spin_watchdog_slow_report watchdog.pml pass -DREPORT_MAX=4)
nmiprof_spin(spin_watchdog_bug_reporting_silent watchdog.pml bug
  -DREPORT_MAX=4 -DBUG_REPORTING_SILENT)
