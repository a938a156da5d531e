# The QEMU real-kernel bench (tests/qemu/README.md): one ctest per scenario
# and test kernel, label "qemu", named qemu_<scenario>_<kver>.
#
# Scenarios are tests/qemu/scenarios/*.sh; each declares its needs in its
# header (see README.md), including the ctest TIMEOUT via "@timeout".
# Test modules are tests/qemu/modules/<name>/ (a Kbuild file + sources), built
# for every kernel by cmake/Kmod.cmake.
if(NOT NMIPROF_BUILD_KMOD)
  message(STATUS "qemu: NMIPROF_BUILD_KMOD is OFF, no QEMU tests")
  return()
endif()

find_package(Python3 COMPONENTS Interpreter REQUIRED)
set(NMIPROF_QEMU_DIR ${CMAKE_CURRENT_LIST_DIR})

file(GLOB _np_testmods LIST_DIRECTORIES true CONFIGURE_DEPENDS
  ${NMIPROF_QEMU_DIR}/modules/*)
foreach(d ${_np_testmods})
  if(EXISTS ${d}/Kbuild)
    get_filename_component(name ${d} NAME)
    nmiprof_add_test_module(${name} ${d})
  endif()
endforeach()

# Host-only self test of the log checker (no guest boot).
add_test(NAME qemu_logcheck_selftest
  COMMAND ${Python3_EXECUTABLE} ${NMIPROF_QEMU_DIR}/logcheck.py --self-test)
set_tests_properties(qemu_logcheck_selftest PROPERTIES LABELS "qemu" TIMEOUT 30)

file(GLOB _np_scenarios CONFIGURE_DEPENDS ${NMIPROF_QEMU_DIR}/scenarios/*.sh)
foreach(s ${_np_scenarios})
  get_filename_component(scn ${s} NAME_WE)
  # The ctest timeout is the scenario's own guest time limit plus slack for
  # building the initramfs and checking the results.
  file(STRINGS ${s} tline REGEX "^# *@timeout[ \t]+[0-9]+")
  set(timeout 120)
  if(tline)
    string(REGEX REPLACE ".*@timeout[ \t]+([0-9]+).*" "\\1" timeout "${tline}")
  endif()
  # Room for one re-run after a TCG text-patching oops (bench.py).
  math(EXPR ctest_timeout "2 * ${timeout} + 60")
  # "@label bench" keeps benchmarks out of the suite (ctest -L qemu).
  file(STRINGS ${s} lline REGEX "^# *@label[ \t]+[a-z]+")
  set(label qemu)
  if(lline)
    string(REGEX REPLACE ".*@label[ \t]+([a-z]+).*" "\\1" label "${lline}")
  endif()
  foreach(kver ${NMIPROF_TEST_KERNELS})
    add_test(NAME qemu_${scn}_${kver}
      COMMAND ${Python3_EXECUTABLE} ${NMIPROF_QEMU_DIR}/bench.py run
        --build-dir ${CMAKE_BINARY_DIR} --kernel ${kver} ${scn})
    set_tests_properties(qemu_${scn}_${kver} PROPERTIES
      LABELS "${label}" TIMEOUT ${ctest_timeout})
  endforeach()
endforeach()
