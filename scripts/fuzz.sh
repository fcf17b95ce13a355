#!/bin/sh
# Runs every libFuzzer target (tests/fuzz/fuzz_*.cpp) for SECONDS each (default 60), built by
# scripts/build-sanitized.sh (clang-19, ASan + UBSan) in ${ASAN_BUILD_DIR:-build-asan}. A target's
# dictionary is tests/fuzz/<name without fuzz_>.dict when present, its seeds tests/fuzz/seeds/<target>.
# Fails on any finding; crashing inputs are kept in <build>/fuzz-artifacts/. Usage: scripts/fuzz.sh [seconds]
set -eu
cd "$(dirname "$0")/.."
SECONDS_EACH=${1:-60}
BUILD_DIR=${ASAN_BUILD_DIR:-build-asan}
TARGETS=$(for src in tests/fuzz/fuzz_*.cpp; do basename "$src" .cpp; done)

ASAN_BUILD_DIR=$BUILD_DIR ./scripts/build-sanitized.sh fuzzers

mkdir -p "$BUILD_DIR/fuzz-artifacts"
for t in $TARGETS; do
  corpus=$BUILD_DIR/fuzz-corpus/$t
  seeds=tests/fuzz/seeds/$t
  mkdir -p "$corpus"
  dict=""
  if [ -f "tests/fuzz/${t#fuzz_}.dict" ]; then dict=-dict=tests/fuzz/${t#fuzz_}.dict; fi
  if [ ! -d "$seeds" ]; then seeds=""; fi
  echo "== $t for ${SECONDS_EACH}s"
  # shellcheck disable=SC2086
  "$BUILD_DIR/bin/$t" $dict -max_total_time="$SECONDS_EACH" -timeout=10 -rss_limit_mb=2048 -max_len=8192 \
    -print_final_stats=1 -artifact_prefix="$BUILD_DIR/fuzz-artifacts/$t-" "$corpus" $seeds
done
echo "fuzz: no findings in" $TARGETS "(${SECONDS_EACH}s each)"
