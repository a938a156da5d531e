# Benchmarks: every tests/bench/bench_*.c becomes one executable linked
# with nmiprof_core and its private headers (nmiprof_internal), built
# with the rest (so -Werror keeps them honest)
# but never run by ctest: they print figures, they do not pass or fail.
#   make benches && ./tests/bench_<name>      (from the build dir)
file(GLOB NMIPROF_BENCHES CONFIGURE_DEPENDS ${CMAKE_CURRENT_LIST_DIR}/bench_*.c)
add_custom_target(benches)
foreach(src ${NMIPROF_BENCHES})
  get_filename_component(name ${src} NAME_WE)
  add_executable(${name} ${src})
  target_link_libraries(${name} PRIVATE nmiprof_internal)
  # Benches may share the unit tests' synthetic-data helpers.
  target_include_directories(${name} PRIVATE ${CMAKE_CURRENT_LIST_DIR}/../unit)
  target_compile_definitions(${name} PRIVATE
    NMIPROF_TEST_SRCDIR="${CMAKE_CURRENT_LIST_DIR}/.."
    NMIPROF_TEST_BINDIR="${CMAKE_CURRENT_BINARY_DIR}")
  add_dependencies(benches ${name})
endforeach()
