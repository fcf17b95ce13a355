#!/bin/sh
# The test command: installs dependencies, builds, and runs every test. Run as root. Stages:
#   deps        scripts/install-deps.sh
#   build       scripts/build.sh into $BUILD_DIR (default build), with the Debian package's layout
#               and flags (GPUFRAC_DEB_LAYOUT=1) so the package stage reuses it
#   format      clang-format --dry-run -Werror on every tracked C and C++ file (.clang-format)
#   ctest       the whole ctest suite: unit tests and end-to-end tests against real runc, podman
#               and containerd on simulated GPU machines, but the image's (label image)
#   package     packaging/build-deb.sh: the Debian package of $BUILD_DIR (no second compile), into
#               $DEB_DIR (default build-deb)
#   lintian     scripts/check-package.sh contents: lintian (no errors), control fields, file list
#   install     apt-get install ./gpufrac_*.deb and checks of the installed files
#   e2e-installed  the end-to-end tests again, against the installed programs and shim (not the compute
#               accuracy measurements, label accuracy, nor the arbiter's attack and lease-file tests,
#               label once: the same shim file, run once), and the
#               image's: scripts/build-image.sh of the package (a Debian base from Debian's repository)
#   remove      apt-get remove (only conffiles stay), then purge (nothing stays)
#   sanitize    scripts/build-sanitized.sh: clang-19 ASan + UBSan (+ libFuzzer coverage) build of the
#               unit tests and the fuzzers in $ASAN_BUILD_DIR (default build-asan); the unit tests
#   fuzz        every libFuzzer target of that build, $FUZZ_SECONDS (default 60) each (scripts/fuzz.sh)
# A failed test stage is reported and the next stages still run; the script then exits 1. A failed
# deps, build, package or install stage stops it. SKIP="stage ..." leaves stages out (skipping
# package skips lintian to remove as well). The package stages install gpufrac on this machine (they
# refuse to replace an installed gpufrac) and purge it again on exit, whatever happened.
set -eu
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
DEB_DIR=${DEB_DIR:-build-deb}
ASAN_BUILD_DIR=${ASAN_BUILD_DIR:-build-asan}
SKIP=${SKIP:-}
JOBS=$(nproc)
MULTIARCH=$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || echo x86_64-linux-gnu)
TIMINGS=$(mktemp)
FAILED=""
INSTALLED=0

on_exit() {
  rc=$?
  if [ "$INSTALLED" = 1 ] && [ -n "$(dpkg-query -W -f='${db:Status-Status}' gpufrac 2>/dev/null)" ]; then
    echo "== cleanup: purging the gpufrac package"
    DEBIAN_FRONTEND=noninteractive apt-get purge -y -qq gpufrac >/dev/null 2>&1 || true
  fi
  echo "== stage timings (seconds)"
  awk '{ printf "  %-15s %6d  %s\n", $1, $2, $3; total += $2 } END { printf "  %-15s %6d\n", "total", total }' "$TIMINGS"
  rm -f "$TIMINGS"
  exit $rc
}
trap on_exit EXIT

skipped() { case " $SKIP " in *" $1 "*) return 0 ;; *) return 1 ;; esac; }

# stage <fatal|continue> <name> <what it does> <command...>: runs the command in a subshell with
# set -e and records its time. A failed fatal stage ends the script; another is recorded.
stage() {
  kind=$1 name=$2 what=$3
  shift 3
  if skipped "$name"; then
    echo "== stage $name: skipped"
    echo "$name 0 skipped" >>"$TIMINGS"
    return 0
  fi
  echo "== stage $name: $what"
  start=$(date +%s)
  set +e
  (set -e; "$@")
  rc=$?
  set -e
  result=ok
  if [ "$rc" -ne 0 ]; then result="FAILED(exit=$rc)"; fi
  echo "$name $(($(date +%s) - start)) $result" >>"$TIMINGS"
  if [ "$rc" -ne 0 ]; then
    echo "== stage $name FAILED (exit $rc)"
    FAILED="$FAILED $name"
    if [ "$kind" = fatal ]; then exit 1; fi
  fi
}

check_format() {
  if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    git ls-files -z '*.c' '*.h' '*.cpp' '*.hpp'
  else
    find . -path './build*' -prune -o -type f \( -name '*.[ch]' -o -name '*.[ch]pp' \) -print0
  fi | xargs -0 clang-format --dry-run -Werror
}
run_ctest() { (cd "$1" && shift && ctest --output-on-failure -j "$JOBS" --timeout 900 "$@"); }
build_package() {
  rm -f "$DEB_DIR"/gpufrac_*.deb
  GPUFRAC_PREBUILT=$BUILD_DIR ./packaging/build-deb.sh "$DEB_DIR"
}
deb() { ls "$DEB_DIR"/gpufrac_*.deb; }
# The compute shares' accuracy measurements (label accuracy, some 4 minutes) and the arbiter's attack
# and lease-file tests (label once, some 80 s, serial) run once, in the ctest stage: the installed
# shim is the same file, and e2e.compute_shim checks its gate installed.
# The image tests (label image) run here only: the image is built from the package just made.
e2e_installed() {
  GPUFRAC_DEB=$(cd "$(dirname "$(deb)")" && pwd)/$(basename "$(deb)") GPUFRAC_BIN_DIR=/usr/bin \
    GPUFRAC_SHIM_DIR=/usr/lib/$MULTIARCH/gpufrac run_ctest "$BUILD_DIR" -L e2e -LE "accuracy|once"
}
sanitize() {
  ASAN_BUILD_DIR=$ASAN_BUILD_DIR ./scripts/build-sanitized.sh
  run_ctest "$ASAN_BUILD_DIR" -L unit
}

stage fatal deps "install the build and test dependencies" ./scripts/install-deps.sh
stage fatal build "configure and build into $BUILD_DIR" env BUILD_DIR="$BUILD_DIR" GPUFRAC_DEB_LAYOUT=1 ./scripts/build.sh
stage continue format "clang-format check of the C and C++ sources" check_format
stage continue ctest "all tests (unit + end-to-end) against the build tree, but the image's" run_ctest "$BUILD_DIR" -LE image

if ! skipped package; then
  stage fatal package "build the Debian package into $DEB_DIR" build_package
  DEB=$(deb)
  stage continue lintian "lintian, control fields and the file list of $DEB" ./scripts/check-package.sh contents "$DEB"
  # The exit trap purges the package only when this run installed it.
  if [ -z "$(dpkg-query -W -f='${db:Status-Status}' gpufrac 2>/dev/null)" ]; then INSTALLED=1; fi
  stage fatal install "install $DEB and check the installed files" ./scripts/check-package.sh install "$DEB"
  stage continue e2e-installed "end-to-end tests against /usr/bin and /usr/lib/$MULTIARCH/gpufrac" e2e_installed
  stage continue remove "remove (only conffiles stay), then purge (nothing stays)" ./scripts/check-package.sh remove
fi

stage continue sanitize "ASan + UBSan build in $ASAN_BUILD_DIR, unit tests" sanitize
stage continue fuzz "libFuzzer targets, ${FUZZ_SECONDS:-60} s each" env ASAN_BUILD_DIR="$ASAN_BUILD_DIR" ./scripts/fuzz.sh "${FUZZ_SECONDS:-60}"

if [ -n "$FAILED" ]; then
  echo "== FAILED stages:$FAILED"
  exit 1
fi
echo "== all stages passed"
