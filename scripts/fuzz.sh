#!/bin/sh
# Builds the libFuzzer targets (tests/fuzz) with clang-19, AddressSanitizer and UBSan in a separate
# build directory, then runs each for SECONDS (default 60). Fails on any finding; crashing inputs
# are kept in <build>/fuzz-artifacts/. Usage: scripts/fuzz.sh [seconds]
set -eu
cd "$(dirname "$0")/.."
SECONDS_EACH=${1:-60}
BUILD_DIR=${FUZZ_BUILD_DIR:-build-fuzz}
TARGETS="fuzz_request fuzz_ledger fuzz_proc_stat"

CC=clang-19 CXX=clang++-19 cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DGPUFRAC_BUILD_FUZZERS=ON -DGPUFRAC_BUILD_BENCH=OFF \
  -DGPUFRAC_SANITIZE=address,undefined,fuzzer-no-link >/dev/null
# shellcheck disable=SC2086
cmake --build "$BUILD_DIR" -j "$(nproc)" --target $TARGETS

mkdir -p "$BUILD_DIR/fuzz-artifacts"
for t in $TARGETS; do
  corpus=$BUILD_DIR/fuzz-corpus/$t
  mkdir -p "$corpus"
  dict=""
  case $t in
    fuzz_request) dict=-dict=tests/fuzz/request.dict ;;
    fuzz_ledger) dict=-dict=tests/fuzz/ledger.dict ;;
  esac
  echo "== $t for ${SECONDS_EACH}s"
  # shellcheck disable=SC2086
  "$BUILD_DIR/bin/$t" $dict -max_total_time="$SECONDS_EACH" -timeout=10 -rss_limit_mb=2048 -max_len=8192 \
    -print_final_stats=1 -artifact_prefix="$BUILD_DIR/fuzz-artifacts/$t-" "$corpus" "tests/fuzz/seeds/$t"
done
echo "fuzz: no findings in $TARGETS (${SECONDS_EACH}s each)"
