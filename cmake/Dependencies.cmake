# Every dependency comes from a Debian package, except libperf, which
# Debian does not package: cmake/Libperf.cmake builds it from linux-source.
find_package(PkgConfig REQUIRED)
pkg_check_modules(TRACEEVENT REQUIRED IMPORTED_TARGET libtraceevent)
pkg_check_modules(ZSTD REQUIRED IMPORTED_TARGET libzstd)
pkg_check_modules(LIBELF REQUIRED IMPORTED_TARGET libelf)
pkg_check_modules(LIBDW REQUIRED IMPORTED_TARGET libdw)
pkg_check_modules(NCURSES REQUIRED IMPORTED_TARGET ncursesw)
# the fleet exporter and `--cluster` queries: ClickHouse over HTTP(S)
pkg_check_modules(CURL REQUIRED IMPORTED_TARGET libcurl)
find_package(Threads REQUIRED)
include(Libperf)
