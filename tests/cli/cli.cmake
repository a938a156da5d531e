# CLI tests (label "cli"): golden outputs of report/export on the committed
# fixture, pprof decoded by protoc and read by pprof, malformed input, and
# `nmiprof top` driven through tmux.  Included from tests/CMakeLists.txt.
set(NMIPROF_CLI_TESTS ${CMAKE_CURRENT_LIST_DIR})
set(NMIPROF_CLI_WORK ${CMAKE_CURRENT_BINARY_DIR}/cli)

# The fixture's generator (tests/cli/fixture.nmp was written by it).
add_executable(cli_gen_fixture ${NMIPROF_CLI_TESTS}/gen_fixture.c)
target_link_libraries(cli_gen_fixture PRIVATE nmiprof_core)

add_test(NAME cli_golden COMMAND sh ${NMIPROF_CLI_TESTS}/golden.sh
  $<TARGET_FILE:nmiprof> $<TARGET_FILE:cli_gen_fixture>
  ${NMIPROF_CLI_TESTS} ${NMIPROF_CLI_WORK}/golden)
add_test(NAME cli_pprof COMMAND sh ${NMIPROF_CLI_TESTS}/pprof.sh
  $<TARGET_FILE:nmiprof> ${NMIPROF_CLI_TESTS} ${NMIPROF_CLI_WORK}/pprof)
# The pprof file read by pprof itself, built from Debian's sources into
# the build tree on first use (tests/cli/pprof_reader.sh).
add_test(NAME cli_pprof_reader COMMAND sh ${NMIPROF_CLI_TESTS}/pprof_reader.sh
  $<TARGET_FILE:nmiprof> ${NMIPROF_CLI_TESTS} ${NMIPROF_CLI_WORK}/pprof_reader
  ${CMAKE_BINARY_DIR}/tools)
add_test(NAME cli_malformed COMMAND sh ${NMIPROF_CLI_TESTS}/malformed.sh
  $<TARGET_FILE:nmiprof> ${NMIPROF_CLI_TESTS}/fixture.nmp
  ${NMIPROF_CLI_WORK}/malformed)
add_test(NAME cli_top_tmux COMMAND sh ${NMIPROF_CLI_TESTS}/top_tmux.sh
  $<TARGET_FILE:nmiprof> ${NMIPROF_PROGS_DIR}/hot ${NMIPROF_CLI_WORK}/top)
# top's screen with -s keys other than the default (issue 15).
add_test(NAME cli_top_keys COMMAND sh ${NMIPROF_CLI_TESTS}/top_keys.sh
  $<TARGET_FILE:nmiprof> ${NMIPROF_PROGS_DIR}/hot ${NMIPROF_CLI_WORK}/top_keys)
add_test(NAME cli_record COMMAND sh ${NMIPROF_CLI_TESTS}/record.sh
  $<TARGET_FILE:nmiprof> ${NMIPROF_PROGS_DIR}/hot ${NMIPROF_CLI_WORK}/record
  ${NMIPROF_CLI_TESTS})
# record's output file and exit code against perf record's (issue 15).
add_test(NAME cli_record_output COMMAND sh ${NMIPROF_CLI_TESTS}/record_output.sh
  $<TARGET_FILE:nmiprof> ${NMIPROF_PROGS_DIR}/hot ${NMIPROF_CLI_TESTS}/fixture.nmp
  ${NMIPROF_CLI_WORK}/record_output)
# An ordinary user at perf_event_paranoid=2 (issue 15, item 7).
add_test(NAME cli_unprivileged COMMAND sh ${NMIPROF_CLI_TESTS}/unprivileged.sh
  $<TARGET_FILE:nmiprof> ${NMIPROF_PROGS_DIR}/hot ${NMIPROF_CLI_WORK}/unprivileged)
# --help and man pages against the parsers; perf's spellings (issue 15).
add_test(NAME cli_options COMMAND sh ${NMIPROF_CLI_TESTS}/options.sh
  $<TARGET_FILE:nmiprof> ${CMAKE_SOURCE_DIR} ${NMIPROF_CLI_TESTS}/fixture.nmp
  ${NMIPROF_CLI_WORK}/options)
# perf's -m/--mmap-pages and the lost-samples warning (issue 15, item 8).
add_test(NAME cli_mmap_pages COMMAND sh ${NMIPROF_CLI_TESTS}/mmap_pages.sh
  $<TARGET_FILE:nmiprof> ${NMIPROF_PROGS_DIR}/hot ${NMIPROF_CLI_WORK}/mmap_pages)
add_test(NAME cli_top_daemon COMMAND sh ${NMIPROF_CLI_TESTS}/top_daemon.sh
  $<TARGET_FILE:nmiprof> $<TARGET_FILE:nmiprofd> ${NMIPROF_PROGS_DIR}/hot
  ${NMIPROF_CLI_WORK}/top_daemon)
# The svg's embedded script run by node against a DOM stand-in (Debian's
# nodejs); the svg is the golden one, which cli_golden keeps current.
find_program(NMIPROF_NODE NAMES node nodejs)
if(NMIPROF_NODE)
  add_test(NAME cli_svg_js COMMAND ${NMIPROF_NODE} ${NMIPROF_CLI_TESTS}/svg_js.js
    ${NMIPROF_CLI_TESTS}/golden/export_svg.txt)
else()
  add_test(NAME cli_svg_js COMMAND sh -c "echo 'SKIP: node not installed'; exit 77")
endif()
set_tests_properties(cli_golden cli_pprof cli_pprof_reader cli_malformed cli_top_tmux cli_top_keys
  cli_record cli_record_output cli_unprivileged cli_options cli_top_daemon cli_svg_js cli_mmap_pages
  PROPERTIES LABELS cli TIMEOUT 120 SKIP_RETURN_CODE 77)
# these sample the machine: keep other sampling tests off it meanwhile
set_tests_properties(cli_top_tmux cli_top_keys cli_record cli_record_output
  cli_top_daemon cli_unprivileged cli_mmap_pages PROPERTIES RUN_SERIAL TRUE)

# Benchmark: the cost of one top refresh over 100k rows (prints figures).
add_executable(cli_bench_topview ${CMAKE_CURRENT_LIST_DIR}/../bench/bench_topview.c)
target_link_libraries(cli_bench_topview PRIVATE nmiprof_core)
add_test(NAME cli_bench_topview COMMAND cli_bench_topview)
set_tests_properties(cli_bench_topview PROPERTIES LABELS bench TIMEOUT 300)
# Benchmark: CPU cost of nmiprof top vs perf top in the same run (figures).
add_test(NAME cli_bench_top_vs_perf COMMAND sh ${NMIPROF_CLI_TESTS}/bench_top.sh
  $<TARGET_FILE:nmiprof>)
set_tests_properties(cli_bench_top_vs_perf PROPERTIES LABELS bench TIMEOUT 120
  SKIP_RETURN_CODE 77 RUN_SERIAL TRUE)
# Whole user stacks without frame pointers (lib/unwind through libperf).
foreach(_m split qsort python dlopen)
  add_test(NAME cli_unwind_${_m} COMMAND sh ${NMIPROF_CLI_TESTS}/unwind.sh ${_m}
    $<TARGET_FILE:nmiprof> ${NMIPROF_PROGS_DIR} ${NMIPROF_CLI_WORK}/unwind)
  set_tests_properties(cli_unwind_${_m} PROPERTIES LABELS cli TIMEOUT 240
    SKIP_RETURN_CODE 77 RUN_SERIAL TRUE)
endforeach()
# Benchmark: unwinding against perf -g and perf --call-graph dwarf, and
# table memory and compile time (prints figures).
add_test(NAME cli_bench_unwind COMMAND sh ${NMIPROF_CLI_TESTS}/bench_unwind.sh
  $<TARGET_FILE:nmiprof> $<TARGET_FILE:bench_unwind> ${NMIPROF_CLI_WORK}/bench)
set_tests_properties(cli_bench_unwind PROPERTIES LABELS bench TIMEOUT 600
  RUN_SERIAL TRUE)
