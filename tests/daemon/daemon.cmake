# nmiprofd end-to-end tests (label "daemon"): the real daemon with the
# libperf backend on this machine.  They exit 77 (skipped) where
# system-wide perf sampling is not allowed.
add_executable(test_daemon_e2e ${CMAKE_CURRENT_LIST_DIR}/test_daemon_e2e.c)
target_link_libraries(test_daemon_e2e PRIVATE nmiprof_core)
add_test(NAME daemon_e2e
  COMMAND test_daemon_e2e $<TARGET_FILE:nmiprofd> $<TARGET_FILE:prog_hot>)
set_tests_properties(daemon_e2e PROPERTIES
  LABELS daemon TIMEOUT 120 SKIP_RETURN_CODE 77
  # Samples the whole machine: alone, so other tests' load does not skew it.
  RUN_SERIAL TRUE)
