# nmiprofd end-to-end tests: the real daemon with the libperf backend on
# this machine.  They exit 77 (skipped) where system-wide perf sampling is
# not allowed.  Labels: "daemon" to pick them alone, "unit" so that the
# unit phase of scripts/bootstrap test (CI) runs them, RUN_SERIAL so the
# parallel unit tests are not sampled along (and do not slow them).
add_executable(test_daemon_e2e ${CMAKE_CURRENT_LIST_DIR}/test_daemon_e2e.c)
target_link_libraries(test_daemon_e2e PRIVATE nmiprof_core)
add_test(NAME daemon_e2e
  COMMAND test_daemon_e2e $<TARGET_FILE:nmiprofd> $<TARGET_FILE:prog_hot>)
set_tests_properties(daemon_e2e PROPERTIES
  LABELS "unit;daemon" TIMEOUT 120 SKIP_RETURN_CODE 77 RUN_SERIAL TRUE)

# Unit tests of daemon modules, linked with nmiprofd_core (every daemon
# source but main.c).  Label "unit": fast, no perf events needed.
foreach(_t config live symcache ingest symnames fleet)
  add_executable(test_npd_${_t} ${CMAKE_CURRENT_LIST_DIR}/test_npd_${_t}.c)
  target_link_libraries(test_npd_${_t} PRIVATE nmiprofd_core)
  add_test(NAME test_npd_${_t} COMMAND test_npd_${_t})
  set_tests_properties(test_npd_${_t} PROPERTIES LABELS unit TIMEOUT 60)
endforeach()

# The store on a full 1 MiB tmpfs (issue 15): status, bounded memory,
# space made and writes resumed.  Root only (mount), else skipped.
add_test(NAME daemon_store_full COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/store_full.sh
  $<TARGET_FILE:nmiprof> $<TARGET_FILE:nmiprofd>
  ${CMAKE_CURRENT_BINARY_DIR}/daemon_store_full)
set_tests_properties(daemon_store_full PROPERTIES
  LABELS daemon TIMEOUT 120 SKIP_RETURN_CODE 77 RUN_SERIAL TRUE)
