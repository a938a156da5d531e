# Kmod.cmake: build nmiprof.ko (and test modules) through Kbuild, once per
# target kernel, entirely inside the build tree.
#
# Target kernels: every test kernel that scripts/kernels.sh lists (resolved at
# configure time), plus the running kernel if its headers are installed.
#
# Kbuild wants the module sources in the directory it builds in (M=). We do
# not build in kmod/ (objects would land in the source tree and the kernels
# would clobber each other), so each kernel gets ${CMAKE_BINARY_DIR}/kmod/<kver>/
# holding symlinks to kmod/* and include/. The file list is globbed with
# CONFIGURE_DEPENDS, so adding a source file to kmod/ re-runs CMake and the
# link appears; Kbuild's own object list (kmod/Kbuild) decides what is built.
#
# Results:  ${CMAKE_BINARY_DIR}/kmod/<kver>/nmiprof.ko
#           ${CMAKE_BINARY_DIR}/tests/qemu/modules/<name>/<kver>/<mod>.ko
# Variables for later CMake files:
#   NMIPROF_TEST_KERNELS    the test kernels' releases (uname -r)
#   NMIPROF_KMOD_KERNELS    every kernel modules are built for
# Target "kmod" (in ALL) builds everything.

set(NMIPROF_KERNELS_SH ${CMAKE_SOURCE_DIR}/scripts/kernels.sh)

execute_process(COMMAND ${NMIPROF_KERNELS_SH} list
  OUTPUT_VARIABLE _np_kernels ERROR_VARIABLE _np_kernels_err
  RESULT_VARIABLE _np_rc OUTPUT_STRIP_TRAILING_WHITESPACE)
if(NOT _np_rc EQUAL 0)
  message(FATAL_ERROR "scripts/kernels.sh list failed: ${_np_kernels_err}"
    "Run scripts/setup-deps.sh (as root) or configure with -DNMIPROF_BUILD_KMOD=OFF.")
endif()
string(REPLACE "\n" ";" NMIPROF_TEST_KERNELS "${_np_kernels}")

execute_process(COMMAND uname -r OUTPUT_VARIABLE NMIPROF_RUNNING_KERNEL
  OUTPUT_STRIP_TRAILING_WHITESPACE)
set(NMIPROF_KMOD_KERNELS ${NMIPROF_TEST_KERNELS})
if(EXISTS /lib/modules/${NMIPROF_RUNNING_KERNEL}/build/Makefile)
  list(APPEND NMIPROF_KMOD_KERNELS ${NMIPROF_RUNNING_KERNEL})
  list(REMOVE_DUPLICATES NMIPROF_KMOD_KERNELS)
else()
  message(STATUS "kmod: no headers for the running kernel ${NMIPROF_RUNNING_KERNEL}; "
    "building for the test kernels only")
endif()
message(STATUS "kmod: building modules for ${NMIPROF_KMOD_KERNELS}")

find_program(NMIPROF_MAKE NAMES make gmake REQUIRED)
add_custom_target(kmod ALL)

# The Kbuild tree of one kernel, or "" (and a warning) if it is not installed.
function(_nmiprof_kernel_headers kver out)
  if(kver STREQUAL NMIPROF_RUNNING_KERNEL AND NOT kver IN_LIST NMIPROF_TEST_KERNELS)
    set(${out} /lib/modules/${kver}/build PARENT_SCOPE)
    return()
  endif()
  execute_process(COMMAND ${NMIPROF_KERNELS_SH} headers ${kver}
    OUTPUT_VARIABLE dir ERROR_QUIET RESULT_VARIABLE rc OUTPUT_STRIP_TRAILING_WHITESPACE)
  if(NOT rc EQUAL 0)
    set(dir "")
  endif()
  set(${out} "${dir}" PARENT_SCOPE)
endfunction()

# nmiprof_kbuild_module(<name> <srcdir> <outdir> [INCLUDE_ABI])
#
# Builds the modules <srcdir>/Kbuild names in "obj-m" (<name>.ko if it names
# none CMake can see) from the sources in <srcdir> for every
# kernel in NMIPROF_KMOD_KERNELS, into <outdir>/<kver>/. The sources are
# symlinked (see the top of this file); INCLUDE_ABI also links the
# project's include/ as <outdir>/<kver>/include and passes
# NMIPROF_INCLUDE. Adds target kmod_<name>, part of "kmod" and ALL.
function(nmiprof_kbuild_module name srcdir outdir)
  cmake_parse_arguments(PARSE_ARGV 3 arg "INCLUDE_ABI" "" "")
  file(GLOB srcs CONFIGURE_DEPENDS
    ${srcdir}/Kbuild ${srcdir}/Makefile ${srcdir}/*.c ${srcdir}/*.h ${srcdir}/*.S)
  set(deps ${srcs})
  set(extra_make_args "")
  if(arg_INCLUDE_ABI)
    file(GLOB_RECURSE abi_headers CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/include/*.h)
    list(APPEND deps ${abi_headers})
    list(APPEND extra_make_args NMIPROF_INCLUDE=${CMAKE_SOURCE_DIR}/include)
  endif()
  set(kflags "")
  if(NMIPROF_WERROR)
    set(kflags "KCFLAGS=-Werror")
  endif()

  # The .ko files are whatever "obj-m" in the Kbuild file names.
  set(ko_names "")
  if(EXISTS ${srcdir}/Kbuild)
    file(STRINGS ${srcdir}/Kbuild objm REGEX "^[ \t]*obj-m[ \t]*[:+]?=")
    foreach(l ${objm})
      string(REGEX REPLACE "^[ \t]*obj-m[ \t]*[:+]?=" "" l "${l}")
      string(REGEX MATCHALL "[A-Za-z0-9_-]+\\.o" objs "${l}")
      foreach(o ${objs})
        string(REGEX REPLACE "\\.o$" ".ko" o "${o}")
        list(APPEND ko_names ${o})
      endforeach()
    endforeach()
  endif()
  if(NOT ko_names)
    set(ko_names ${name}.ko)
  endif()

  set(kos "")
  foreach(kver ${NMIPROF_KMOD_KERNELS})
    set(dir ${outdir}/${kver})
    list(TRANSFORM ko_names PREPEND ${dir}/ OUTPUT_VARIABLE ko_paths)
    string(REPLACE ";" " " ko_paths_sh "${ko_paths}")
    _nmiprof_kernel_headers(${kver} hdrs)
    if(NOT hdrs)
      message(WARNING "kmod: headers for ${kver} are not installed, so ${name} "
        "cannot be built for it. Run scripts/kernels.sh fetch (as root), or "
        "configure with -DNMIPROF_BUILD_KMOD=OFF.")
      add_custom_command(OUTPUT ${ko_paths}
        COMMAND ${CMAKE_COMMAND} -E echo
          "kmod: no headers for ${kver}: run scripts/kernels.sh fetch (as root)"
        COMMAND false
        VERBATIM)
      list(APPEND kos ${ko_paths})
      continue()
    endif()

    # Fresh links on every configure, so a deleted source does not linger.
    file(MAKE_DIRECTORY ${dir})
    file(GLOB old_links LIST_DIRECTORIES true ${dir}/*)
    foreach(l ${old_links})
      if(IS_SYMLINK ${l})
        file(REMOVE ${l})
      endif()
    endforeach()
    foreach(s ${srcs})
      get_filename_component(base ${s} NAME)
      file(CREATE_LINK ${s} ${dir}/${base} SYMBOLIC)
    endforeach()
    if(arg_INCLUDE_ABI)
      file(CREATE_LINK ${CMAKE_SOURCE_DIR}/include ${dir}/include SYMBOLIC)
    endif()

    # Kbuild's own output goes to build.log; with NMIPROF_WERROR any
    # "warning:" there (modpost's included, which KCFLAGS cannot reach)
    # fails the build. The log is printed either way on failure.
    set(script "${NMIPROF_MAKE} -C ${hdrs} M=${dir} ${kflags} ${extra_make_args} modules >${dir}/build.log 2>&1; \
rc=$?; \
if [ $rc -ne 0 ]; then cat ${dir}/build.log; echo \"kmod: ${name} for ${kver} failed\" >&2; exit 1; fi; \
if [ -n \"${kflags}\" ] && grep -i 'warning:' ${dir}/build.log; then \
echo \"kmod: ${name} for ${kver}: warnings (NMIPROF_WERROR)\" >&2; rm -f ${ko_paths_sh}; exit 1; fi; \
grep -i 'warning:' ${dir}/build.log || true")
    add_custom_command(OUTPUT ${ko_paths}
      COMMAND sh -c "${script}"
      DEPENDS ${deps}
      WORKING_DIRECTORY ${dir}
      COMMENT "Kbuild ${name} for ${kver}"
      VERBATIM)
    list(APPEND kos ${ko_paths})
  endforeach()
  add_custom_target(kmod_${name} DEPENDS ${kos})
  add_dependencies(kmod kmod_${name})
endfunction()

nmiprof_kbuild_module(nmiprof ${CMAKE_SOURCE_DIR}/kmod ${CMAKE_BINARY_DIR}/kmod INCLUDE_ABI)

# nmiprof_add_test_module(<name> [<srcdir>])
#
# A test module for the QEMU bench, built like nmiprof.ko for every kernel:
# <srcdir> (default tests/qemu/modules/<name>) holds a Kbuild file
# ("obj-m := <mod>.o", any module names) and its sources. Result:
# ${CMAKE_BINARY_DIR}/tests/qemu/modules/<name>/<kver>/<mod>.ko
function(nmiprof_add_test_module name)
  set(srcdir ${CMAKE_SOURCE_DIR}/tests/qemu/modules/${name})
  if(ARGC GREATER 1)
    set(srcdir ${ARGV1})
  endif()
  nmiprof_kbuild_module(${name} ${srcdir}
    ${CMAKE_BINARY_DIR}/tests/qemu/modules/${name} INCLUDE_ABI)
endfunction()
