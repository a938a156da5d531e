# The packaging test: build the .debs, install them into a Debian 12
# chroot, check DKMS, the unit, the CLI and a purge (tests/packaging/
# test-debs.sh).  Needs root and, on the first run, the network.
add_test(NAME packaging
  COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/packaging/test-debs.sh
          ${CMAKE_SOURCE_DIR} ${CMAKE_CURRENT_BINARY_DIR}/packaging ${PROJECT_VERSION})
set_tests_properties(packaging PROPERTIES
  LABELS packaging
  TIMEOUT 1800
  RUN_SERIAL TRUE
  SKIP_RETURN_CODE 77)
