# Test programs the unit and QEMU tests run: every tests/progs/<name>.c is
# a standalone program built to ${NMIPROF_PROGS_DIR}/<name>, which tests
# reach as NMIPROF_TEST_BINDIR "/progs/<name>".  Add a program by dropping
# a .c file here; use nmiprof_prog_options() for special flags.
set(NMIPROF_PROGS_DIR ${CMAKE_CURRENT_BINARY_DIR}/progs)

# What every program here shares.  Their global functions are the
# symbols tests look for, called from main() only: no header declares
# them.  They run as workloads do in production, without NMIPROF_SANITIZE's
# instrumentation (and a -m32 -static program cannot link ASan anyway).
function(nmiprof_prog_common target)
  target_compile_options(${target} PRIVATE -Wno-missing-prototypes)
  if(NMIPROF_SANITIZE)
    target_compile_options(${target} PRIVATE -fno-sanitize=all)
    target_link_options(${target} PRIVATE -fno-sanitize=all)
  endif()
endfunction()
file(GLOB _nmiprof_progs CONFIGURE_DEPENDS ${CMAKE_CURRENT_LIST_DIR}/*.c)
foreach(_src ${_nmiprof_progs})
  get_filename_component(_name ${_src} NAME_WE)
  add_executable(prog_${_name} ${_src})
  set_target_properties(prog_${_name} PROPERTIES
    OUTPUT_NAME ${_name} RUNTIME_OUTPUT_DIRECTORY ${NMIPROF_PROGS_DIR})
  # Frame pointers, leaf functions included (as distributions that ship
  # frame pointers build), so both backends unwind them; no inlining of the
  # functions tests look for.
  target_compile_options(prog_${_name} PRIVATE -O2 -fno-omit-frame-pointer
    -mno-omit-leaf-frame-pointer -fno-inline-functions)
  # Standalone programs define their own feature macros: cancel the
  # project-wide -D_GNU_SOURCE (-U comes later on the command line).
  target_compile_options(prog_${_name} PRIVATE -U_GNU_SOURCE)
  nmiprof_prog_common(prog_${_name})
endforeach()

# nmiprof_ia32 (tests/progs/ia32/): a 32-bit static program for the
# module's ia32 user stack walk (kmod_sample).  gcc -m32 needs Debian's
# gcc-multilib (scripts/setup-deps.sh); without it the program is not
# built and kmod_sample fails on the missing program, saying so.
include(CheckCSourceCompiles)
set(CMAKE_REQUIRED_FLAGS -m32)
set(CMAKE_REQUIRED_LINK_OPTIONS -m32 -static)
check_c_source_compiles("int main(void) { return 0; }" NMIPROF_HAVE_M32_STATIC)
unset(CMAKE_REQUIRED_FLAGS)
unset(CMAKE_REQUIRED_LINK_OPTIONS)
if(NMIPROF_HAVE_M32_STATIC)
  add_executable(prog_nmiprof_ia32 ${CMAKE_CURRENT_LIST_DIR}/ia32/nmiprof_ia32.c)
  set_target_properties(prog_nmiprof_ia32 PROPERTIES
    OUTPUT_NAME nmiprof_ia32 RUNTIME_OUTPUT_DIRECTORY ${NMIPROF_PROGS_DIR})
  target_compile_options(prog_nmiprof_ia32 PRIVATE -m32 -O2
    -fno-omit-frame-pointer -mno-omit-leaf-frame-pointer
    -fno-inline-functions -U_GNU_SOURCE)
  target_link_options(prog_nmiprof_ia32 PRIVATE -m32 -static)
  nmiprof_prog_common(prog_nmiprof_ia32)
else()
  message(WARNING "gcc -m32 -static does not link (install gcc-multilib): "
    "no nmiprof_ia32, so the kmod_sample QEMU test will fail")
endif()

# Per-program extras, e.g. nmiprof_prog_options(foo LIBS pthread STATIC).
function(nmiprof_prog_options name)
  cmake_parse_arguments(P "STATIC" "" "LIBS" ${ARGN})
  if(P_LIBS)
    target_link_libraries(prog_${name} PRIVATE ${P_LIBS})
  endif()
  if(P_STATIC)
    target_link_options(prog_${name} PRIVATE -static)
  endif()
endfunction()

# Tests that cannot run on a machine (no perf_event_open, ...) exit 77.
# RUN_SERIAL: hot's split is checked to 5 points, and a neighbour test
# sharing its CPU skewed it past that once in CI.
foreach(_t test_backend_perf)
  if(TEST ${_t})
    set_tests_properties(${_t} PROPERTIES SKIP_RETURN_CODE 77 RUN_SERIAL TRUE)
  endif()
endforeach()

# The table unwinder's workloads: unwind_split without frame pointers
# (leaf functions included), unwind_qsort with them (libc has none).
target_compile_options(prog_unwind_split PRIVATE -fomit-frame-pointer
  -momit-leaf-frame-pointer)
# deep without frame pointers: bench_kmod_unwind's table walks against
# deep's frame-pointer walks of the same depth.
add_executable(prog_deep_nofp ${CMAKE_CURRENT_LIST_DIR}/deep.c)
set_target_properties(prog_deep_nofp PROPERTIES
  OUTPUT_NAME deep_nofp RUNTIME_OUTPUT_DIRECTORY ${NMIPROF_PROGS_DIR})
target_compile_options(prog_deep_nofp PRIVATE -O2 -fomit-frame-pointer
  -momit-leaf-frame-pointer -fno-inline-functions -U_GNU_SOURCE)
nmiprof_prog_common(prog_deep_nofp)
# unwind_dlopen's two libraries, one source (tests/progs/unwind_dlopen/).
nmiprof_prog_options(unwind_dlopen LIBS ${CMAKE_DL_LIBS})
foreach(_l a b)
  add_library(prog_dlhot_${_l} MODULE ${CMAKE_CURRENT_LIST_DIR}/unwind_dlopen/dlhot.c)
  set_target_properties(prog_dlhot_${_l} PROPERTIES OUTPUT_NAME dlhot_${_l}
    LIBRARY_OUTPUT_DIRECTORY ${NMIPROF_PROGS_DIR})
  target_compile_options(prog_dlhot_${_l} PRIVATE -O2 -fomit-frame-pointer)
  nmiprof_prog_common(prog_dlhot_${_l})
  target_compile_definitions(prog_dlhot_${_l} PRIVATE HOT=hot_in_${_l})
  add_dependencies(prog_unwind_dlopen prog_dlhot_${_l})
endforeach()
