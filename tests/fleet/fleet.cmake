# Fleet profiles (labels daemon, fleet): nmiprofd shipping to real ClickHouse
# servers on loopback (Debian's clickhouse-server, started by the test
# from a config in its work directory).  Skipped (77) where the server is
# not installed.  Benchmark (label "bench"): insert throughput, server
# bytes per sample, a fleet top-50 query, the exporter's CPU (bench_fleet.sh).
add_test(NAME fleet_e2e COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/fleet.sh
  $<TARGET_FILE:nmiprof> $<TARGET_FILE:nmiprofd> ${NMIPROF_PROGS_DIR}/hot
  ${CMAKE_CURRENT_BINARY_DIR}/fleet $<TARGET_FILE:cli_gen_fixture>)
set_tests_properties(fleet_e2e PROPERTIES
  LABELS "daemon;fleet" TIMEOUT 420 SKIP_RETURN_CODE 77 RUN_SERIAL TRUE)
# Benchmark (label bench, run by hand): a synthetic 100-host x 24 h fleet.
add_test(NAME fleet_bench COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/bench_fleet.sh
  $<TARGET_FILE:nmiprof> $<TARGET_FILE:bench_store_size> ${CMAKE_CURRENT_BINARY_DIR}/fleet
  $<TARGET_FILE:bench_daemon_cpu> $<TARGET_FILE:nmiprofd>)
set_tests_properties(fleet_bench PROPERTIES
  LABELS bench TIMEOUT 1800 SKIP_RETURN_CODE 77 RUN_SERIAL TRUE)
