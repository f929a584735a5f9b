# Installing, and the .deb of `scripts/dev.sh package` (CPack's DEB
# generator), for clusters that install from their own mirror:
#   /usr/bin/laggard
#   /usr/lib/laggard/liblaggard_http.so              the HTTP module (src/net/http.h),
#                                                     ../lib/laggard from the binary
#   /usr/lib/systemd/system/laggard-agent.service   (deploy/systemd, ExecStart
#                                                     pointed at /usr/bin)
#   /usr/share/doc/laggard/                          README, docs/, deploy/
# The Debian dependencies are the shared libraries the binary and the module
# link, as dpkg-shlibdeps finds them (Debian's dpkg-dev). NVML, OpenBLAS and
# Open MPI are opened with dlopen at run time and are no dependency.
# tests/package/deb_test.sh unpacks the .deb and runs it.

include(GNUInstallDirs)

# `install`, `package` and CPack install what is built, without building
# `all` (the tests) first: build `laggard` before (scripts/dev.sh package).
set(CMAKE_SKIP_INSTALL_ALL_DEPENDENCY ON)
set(CMAKE_SKIP_PACKAGE_ALL_DEPENDENCY ON)

install(TARGETS laggard RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
# The binary opens it as <its folder>/../lib/laggard/ (not the multiarch
# libdir): bin/ and lib/laggard/ side by side under any prefix.
if(NOT CMAKE_INSTALL_BINDIR STREQUAL "bin")
  message(FATAL_ERROR "CMAKE_INSTALL_BINDIR must be 'bin': laggard opens its HTTP module as "
    "<its folder>/../lib/laggard/liblaggard_http.so (src/net/http.h)")
endif()
install(TARGETS laggard_http LIBRARY DESTINATION lib/laggard)

# The unit as deploy/ ships it names /usr/local/bin (a hand install); the
# package's binary is /usr/bin/laggard (CPACK_PACKAGING_INSTALL_PREFIX), so
# the installed unit names that, whatever CMAKE_INSTALL_PREFIX is.
set(_unit_in ${PROJECT_SOURCE_DIR}/deploy/systemd/laggard-agent.service)
set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${_unit_in})
file(READ ${_unit_in} _unit)
set(_packaged_bin "/usr/${CMAKE_INSTALL_BINDIR}/laggard")
string(REPLACE "/usr/local/bin/laggard" "${_packaged_bin}" _unit "${_unit}")
file(WRITE ${PROJECT_BINARY_DIR}/package/laggard-agent.service "${_unit}")
install(FILES ${PROJECT_BINARY_DIR}/package/laggard-agent.service
  DESTINATION lib/systemd/system)

install(FILES ${PROJECT_SOURCE_DIR}/README.md DESTINATION ${CMAKE_INSTALL_DOCDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/docs/ DESTINATION ${CMAKE_INSTALL_DOCDIR}/docs)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/deploy/ DESTINATION ${CMAKE_INSTALL_DOCDIR}/deploy)

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME laggard)
set(CPACK_PACKAGE_VENDOR "laggard")
set(CPACK_PACKAGE_CONTACT "laggard maintainers <laggard@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
  "finds the GPU, rank or node that holds back a training job, and says why")
set(CPACK_PACKAGE_DESCRIPTION
  "laggard reads step logs, profiler traces, GPU, network and hang records of a \
multi-node training job, names the rank, GPU or node that slows it and the \
cause, and runs a node agent that exports GPU and step metrics to Prometheus.")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION utils)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS OFF)
# `laggard diagnose --mpi` runs under mpirun; `laggard watch` reads a
# Prometheus server. Both optional.
set(CPACK_DEBIAN_PACKAGE_SUGGESTS "openmpi-bin, libopenmpi3, prometheus")
# The binary and the module ship stripped; their debug information (the
# release build's -g1 line tables: backtraces, perf, addr2line), split with
# objcopy --only-keep-debug, goes into laggard_VERSION_ARCH-dbgsym.ddeb beside
# the .deb, under /usr/lib/debug/.build-id/, as Debian's -dbgsym packages.
set(CPACK_STRIP_FILES OFF)  # CPackDeb strips them as it splits the debug information
set(CPACK_DEBIAN_DEBUGINFO_PACKAGE ON)
include(CPack)
