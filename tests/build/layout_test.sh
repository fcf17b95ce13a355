#!/bin/bash
# One build tree configured the demo's way (scripts/build.sh, CMake's default prefix) and then the
# package's way (GPUFRAC_DEB_LAYOUT=1), and back: the install locations, the paths the programs embed
# (core/build_info.hpp, printed by gpufrac_build_info), the generated hooks.d and systemd files and
# the compile flags must follow the layout of the latest configure that named one; a location the
# operator set (-DGPUFRAC_SHIM_DIR=...) is kept until it is set again.
set -euo pipefail
: "${GPUFRAC_SOURCE_DIR:?run through ctest}"
SRC=$GPUFRAC_SOURCE_DIR
TMP=$(mktemp -d /tmp/gpufrac-layout.XXXXXX)
trap 'rm -rf "$TMP"' EXIT
TREE=$TMP/tree
MULTIARCH=$(dpkg-architecture -qDEB_HOST_MULTIARCH)
FAILURES=0

fail() {
  echo "FAIL: $*" >&2
  FAILURES=$((FAILURES + 1))
}
build() { BUILD_DIR=$TREE BUILD_TARGET=gpufrac_build_info "$SRC/scripts/build.sh" "$@" >"$TMP/build.log" 2>&1 ||
  { cat "$TMP/build.log" >&2; exit 1; }; }
# expect_embedded <what> <shim dir> <bin dir> <config path>
expect_embedded() {
  local got want
  got=$("$TREE/bin/gpufrac_build_info")
  want=$(printf 'shim-dir=%s\nbin-dir=%s\nconfig=%s' "$2" "$3" "$4")
  [ "$got" = "$want" ] || fail "$1: the programs embed"$'\n'"$got"$'\n'"instead of"$'\n'"$want"
}
# expect_file_has <what> <file> <text>
expect_file_has() { grep -qF -- "$3" "$2" || fail "$1: $2 does not contain '$3'"; }
expect_cache() {
  local got
  got=$(sed -n "s/^$2:[A-Z]*=//p" "$TREE/CMakeCache.txt")
  case "$got" in *"$3"*) ;; *) fail "$1: $2 is '$got', without '$3'" ;; esac
}
# The install locations and the files configured from them, for a prefix and a shim directory.
expect_layout() {
  local what=$1 shim=$2 bin=$3 units=$4
  expect_file_has "$what" "$TREE/limits/cmake_install.cmake" "DESTINATION \"$shim\""
  expect_file_has "$what" "$TREE/etc/cmake_install.cmake" "DESTINATION \"$units\""
  expect_file_has "$what" "$TREE/etc/oci/hooks.d/50-gpufrac-prestart.json" "\"$bin/gpufrac-hook\""
  expect_file_has "$what" "$TREE/etc/oci/hooks.d/50-gpufrac-poststop.json" "\"$bin/gpufrac-hook\""
  expect_file_has "$what" "$TREE/etc/systemd/gpufrac-cdi-refresh.service" "ExecStart=$bin/gpufrac "
}

echo "== the demo's configure (CMake's default prefix)"
build
expect_embedded "demo layout" /usr/local/lib/gpufrac /usr/local/bin /usr/local/etc/gpufrac/config.yaml
expect_layout "demo layout" /usr/local/lib/gpufrac /usr/local/bin /usr/local/lib/systemd/system

echo "== the package's configure of the same tree"
GPUFRAC_DEB_LAYOUT=1 build
deb_shim=/usr/lib/$MULTIARCH/gpufrac
expect_embedded "package layout after the demo's" "$deb_shim" /usr/bin /etc/gpufrac/config.yaml
expect_layout "package layout after the demo's" "$deb_shim" /usr/bin /lib/systemd/system
expect_file_has "package layout" "$TREE/etc/cmake_install.cmake" 'DESTINATION "/lib/udev/rules.d"'
# What packaging/build-deb.sh checks before it packages a prebuilt tree.
grep -qx 'CMAKE_INSTALL_PREFIX:PATH=/usr' "$TREE/CMakeCache.txt" || fail "prefix is not /usr"
grep -qx 'CMAKE_BUILD_TYPE:STRING=None' "$TREE/CMakeCache.txt" || fail "build type is not None"
# The package's compile and link flags (dpkg-buildflags, CPPFLAGS included as debhelper does).
eval "$(cd "$SRC" && DEB_BUILD_MAINT_OPTIONS=hardening=+bindnow dpkg-buildflags --export=sh)"
expect_cache "package flags" CMAKE_CXX_FLAGS "$CXXFLAGS $CPPFLAGS"
expect_cache "package flags" CMAKE_C_FLAGS "$CFLAGS $CPPFLAGS"
expect_cache "package flags" CMAKE_EXE_LINKER_FLAGS "$LDFLAGS"
expect_cache "package flags" CMAKE_SHARED_LINKER_FLAGS "$LDFLAGS"
grep -q -- '-D_FORTIFY_SOURCE=2' "$TREE/build.ninja" || fail "the compile lines lack -D_FORTIFY_SOURCE=2"

echo "== the demo's configure again: the package's layout stays"
build
expect_embedded "demo after package" "$deb_shim" /usr/bin /etc/gpufrac/config.yaml
expect_layout "demo after package" "$deb_shim" /usr/bin /lib/systemd/system

echo "== a location the operator sets is kept across layouts, and derived again once cleared"
build -DGPUFRAC_SHIM_DIR=/opt/gf/lib -DGPUFRAC_BIN_DIR=/opt/gf/bin
GPUFRAC_DEB_LAYOUT=1 build
expect_embedded "operator's locations" /opt/gf/lib /opt/gf/bin /etc/gpufrac/config.yaml
expect_layout "operator's locations" /opt/gf/lib /opt/gf/bin /lib/systemd/system
GPUFRAC_DEB_LAYOUT=1 build -DGPUFRAC_SHIM_DIR= -DGPUFRAC_BIN_DIR=
expect_embedded "locations cleared" "$deb_shim" /usr/bin /etc/gpufrac/config.yaml

if [ "$FAILURES" -ne 0 ]; then
  echo "build.layout: $FAILURES failure(s)" >&2
  exit 1
fi
echo "build.layout: passed"
