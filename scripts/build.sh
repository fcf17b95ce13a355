#!/bin/sh
# Configures and builds gpufrac into ${BUILD_DIR:-build} (RelWithDebInfo). Extra CMake arguments
# may follow, e.g. scripts/build.sh -DGPUFRAC_SANITIZE=address,undefined. BUILD_TARGET builds one
# target instead of everything (the demo builds `demo`: only what it runs).
# GPUFRAC_DEB_LAYOUT=1 configures the tree exactly as the Debian package's build does (debhelper's
# CMake arguments, dpkg-buildflags with the package's hardening options, /usr paths), so that
# packaging/build-deb.sh can package this tree without compiling again (GPUFRAC_PREBUILT).
set -eu
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
# A tree configured before keeps what its first configure cached unless this one says otherwise: a
# plain build (the demo's) of a tree configured with the package's layout builds it as it is, and the
# package's layout names every value it needs, so it also holds in a tree the demo configured first.
if [ "${GPUFRAC_DEB_LAYOUT:-0}" = 1 ]; then
  # The same flags as packaging/debian/rules (DEB_BUILD_MAINT_OPTIONS) give dpkg-buildpackage, passed
  # as CMake variables rather than read from the environment (CMake reads CFLAGS only at a tree's
  # first configure) and with CPPFLAGS added to the compile flags, as debhelper's cmake does.
  eval "$(DEB_BUILD_MAINT_OPTIONS=hardening=+bindnow dpkg-buildflags --export=sh)"
  multiarch=$(dpkg-architecture -qDEB_HOST_MULTIARCH)
  set -- -DCMAKE_BUILD_TYPE=None -DCMAKE_INSTALL_PREFIX=/usr -DCMAKE_INSTALL_SYSCONFDIR=/etc \
    -DCMAKE_INSTALL_LOCALSTATEDIR=/var -DCMAKE_INSTALL_RUNSTATEDIR=/run "-DCMAKE_INSTALL_LIBDIR=lib/$multiarch" \
    -DCMAKE_INSTALL_BINDIR=bin -DGPUFRAC_SYSTEMD_UNIT_DIR=/lib/systemd/system \
    -DGPUFRAC_UDEV_RULES_DIR=/lib/udev/rules.d "-DCMAKE_C_FLAGS=$CFLAGS $CPPFLAGS" \
    "-DCMAKE_CXX_FLAGS=$CXXFLAGS $CPPFLAGS" "-DCMAKE_EXE_LINKER_FLAGS=$LDFLAGS" \
    "-DCMAKE_SHARED_LINKER_FLAGS=$LDFLAGS" "-DCMAKE_MODULE_LINKER_FLAGS=$LDFLAGS" "$@"
fi
cmake -S . -B "$BUILD_DIR" -G Ninja "$@" >/dev/null
cmake --build "$BUILD_DIR" -j "$(nproc)" --target "${BUILD_TARGET:-all}"
