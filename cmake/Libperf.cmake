# libperf is not packaged by Debian: build it from the linux-source
# package into the build tree at configure time (scripts/build-libperf.sh;
# a stamp file makes re-configures free), then consume it through the
# libperf.pc it installs.
#
# Pinned series: 6.1, the same libperf API as Debian 12's perf.  The API
# changed afterwards (e.g. perf_cpu_map iteration, evlist mmap ops in
# 6.12), so lib/backend/backend_perf.c is written against 6.1.  Change it here only.
set(NMIPROF_LIBPERF_SERIES "6.1" CACHE STRING
    "linux-source-<series> package libperf is built from")
set(NMIPROF_LIBPERF_PREFIX ${CMAKE_BINARY_DIR}/libperf)

execute_process(
  COMMAND sh ${CMAKE_SOURCE_DIR}/scripts/build-libperf.sh
          ${NMIPROF_LIBPERF_PREFIX} ${NMIPROF_LIBPERF_SERIES}
  RESULT_VARIABLE _libperf_rc)
if(NOT _libperf_rc EQUAL 0)
  message(FATAL_ERROR "building libperf from linux-source-${NMIPROF_LIBPERF_SERIES} failed (see above)")
endif()

set(_libperf_saved_pcpath "$ENV{PKG_CONFIG_PATH}")
set(ENV{PKG_CONFIG_PATH} "${NMIPROF_LIBPERF_PREFIX}/lib/pkgconfig:$ENV{PKG_CONFIG_PATH}")
pkg_check_modules(LIBPERF REQUIRED libperf)
set(ENV{PKG_CONFIG_PATH} "${_libperf_saved_pcpath}")

# Link the archives by path: static, and libapi.a (fs/io helpers libperf
# calls) is not named in libperf.pc.
find_library(NMIPROF_LIBPERF_A NAMES libperf.a PATHS ${LIBPERF_LIBRARY_DIRS} NO_DEFAULT_PATH REQUIRED)
find_library(NMIPROF_LIBAPI_A NAMES libapi.a PATHS ${LIBPERF_LIBRARY_DIRS} NO_DEFAULT_PATH REQUIRED)
add_library(nmiprof::libperf INTERFACE IMPORTED)
target_include_directories(nmiprof::libperf INTERFACE ${LIBPERF_INCLUDE_DIRS})
target_link_libraries(nmiprof::libperf INTERFACE ${NMIPROF_LIBPERF_A} ${NMIPROF_LIBAPI_A})
message(STATUS "libperf ${LIBPERF_VERSION} (linux-source-${NMIPROF_LIBPERF_SERIES}): ${NMIPROF_LIBPERF_A}")
