# install() rules for everything the packages ship besides the two
# binaries (daemon/ and cli/ install those themselves).  packaging/debian
# splits the result into the nmiprof and nmiprof-dkms packages.
#
# Components:
#   (default)  man pages, default config, systemd unit, udev rule,
#              sysusers.d and tmpfiles.d files
#   dkms       the module source for DKMS: /usr/src/nmiprof-VERSION and the
#              kernel entry patches for custom kernels
#
# Files another part of the tree is to provide (man pages, the example
# config, kmod/Kbuild) are installed by name: if one is missing,
# `cmake --install` fails naming it instead of building a package without
# it.  Configuring never fails for this.

set(_np_pkg ${CMAKE_SOURCE_DIR}/packaging)

# Where systemd and udev want their files; ask them, as their .pc files
# know the distribution's answer (/lib/... on Debian 12).
function(nmiprof_pc_dir out module variable fallback)
  set(_dir "")
  pkg_get_variable(_dir ${module} ${variable})
  if(NOT _dir)
    set(_dir ${fallback})
  endif()
  set(${out} ${_dir} CACHE PATH "install directory: ${module} ${variable}")
endfunction()
nmiprof_pc_dir(NMIPROF_SYSTEMD_UNITDIR systemd systemdsystemunitdir /lib/systemd/system)
nmiprof_pc_dir(NMIPROF_SYSUSERSDIR systemd sysusersdir /usr/lib/sysusers.d)
nmiprof_pc_dir(NMIPROF_TMPFILESDIR systemd tmpfilesdir /usr/lib/tmpfiles.d)
nmiprof_pc_dir(NMIPROF_UDEVDIR udev udevdir /lib/udev)

# Fail the install (not the configure) when a glob a package depends on
# matched nothing.
function(nmiprof_require_some what component)
  if(NOT ARGN)
    install(CODE "message(FATAL_ERROR \"nmiprof install: no ${what} in the source tree\")"
            COMPONENT ${component})
  endif()
endfunction()

# --- nmiprof: the daemon and CLI package ------------------------------------
install(FILES ${CMAKE_SOURCE_DIR}/docs/man/nmiprofd.8
        DESTINATION ${CMAKE_INSTALL_MANDIR}/man8)
file(GLOB _np_man1 CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/docs/man/*.1)
nmiprof_require_some("man pages docs/man/*.1" Unspecified ${_np_man1})
install(FILES ${_np_man1} DESTINATION ${CMAKE_INSTALL_MANDIR}/man1)

install(FILES ${CMAKE_SOURCE_DIR}/docs/nmiprofd.conf.example
        DESTINATION ${CMAKE_INSTALL_FULL_SYSCONFDIR}/nmiprof
        RENAME nmiprofd.conf)

install(FILES ${CMAKE_SOURCE_DIR}/docs/cluster.conf.example
        DESTINATION ${CMAKE_INSTALL_FULL_SYSCONFDIR}/nmiprof
        RENAME cluster.conf)

install(FILES ${_np_pkg}/systemd/nmiprofd.service
              ${_np_pkg}/systemd/nmiprof-cluster.service
              ${_np_pkg}/systemd/nmiprof-cluster.timer
        DESTINATION ${NMIPROF_SYSTEMD_UNITDIR})
install(FILES ${_np_pkg}/udev/60-nmiprof.rules DESTINATION ${NMIPROF_UDEVDIR}/rules.d)
install(FILES ${_np_pkg}/sysusers.d/nmiprof.conf DESTINATION ${NMIPROF_SYSUSERSDIR})
install(FILES ${_np_pkg}/tmpfiles.d/nmiprof.conf DESTINATION ${NMIPROF_TMPFILESDIR})

# --- nmiprof-dkms: module source ----------------------------------------------
# The layout kmod/Kbuild expects of a build copy: the module sources at the
# top, the ABI under include/ (Kbuild: -I$(src)/include).
set(NMIPROF_DKMS_SRCDIR src/nmiprof-${PROJECT_VERSION})

file(READ ${_np_pkg}/dkms/dkms.conf _np_dkms_conf)
string(REPLACE "#MODULE_VERSION#" "${PROJECT_VERSION}" _np_dkms_conf "${_np_dkms_conf}")
file(CONFIGURE OUTPUT ${CMAKE_BINARY_DIR}/packaging/dkms.conf CONTENT "${_np_dkms_conf}" @ONLY)
install(FILES ${CMAKE_BINARY_DIR}/packaging/dkms.conf
        DESTINATION ${NMIPROF_DKMS_SRCDIR} COMPONENT dkms)

install(FILES ${CMAKE_SOURCE_DIR}/kmod/Kbuild DESTINATION ${NMIPROF_DKMS_SRCDIR} COMPONENT dkms)
file(GLOB _np_kmod_src CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/kmod/*.c ${CMAKE_SOURCE_DIR}/kmod/*.h)
nmiprof_require_some("module sources kmod/*.c" dkms ${_np_kmod_src})
install(FILES ${_np_kmod_src} DESTINATION ${NMIPROF_DKMS_SRCDIR} COMPONENT dkms)
install(DIRECTORY ${CMAKE_SOURCE_DIR}/include/nmiprof
        DESTINATION ${NMIPROF_DKMS_SRCDIR}/include COMPONENT dkms
        FILES_MATCHING PATTERN "*.h")
# The user stack walker the module shares with userspace (kmod/Kbuild:
# $(src)/lib).
install(FILES ${CMAKE_SOURCE_DIR}/lib/unwind/unwind_walk.c
              ${CMAKE_SOURCE_DIR}/lib/unwind/np_unwind_walk.h
        DESTINATION ${NMIPROF_DKMS_SRCDIR}/lib/unwind COMPONENT dkms)

# For kernels without the nested-NMI-safe entry; the module's dmesg line
# points here when it finds the entry missing.
install(DIRECTORY ${_np_pkg}/kernel-patches/
        DESTINATION ${CMAKE_INSTALL_DATADIR}/doc/nmiprof-dkms/kernel-patches
        COMPONENT dkms)
