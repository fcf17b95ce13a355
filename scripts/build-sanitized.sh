#!/bin/sh
# Configures and builds the sanitized tree: clang-19 with AddressSanitizer, UBSan and libFuzzer's
# coverage (fuzzer-no-link) in every library, into ${ASAN_BUILD_DIR:-build-asan}. One tree serves
# both the sanitized unit tests (target unit_tests) and the fuzzers (target fuzzers), so CI compiles
# the sources once for both. Usage: scripts/build-sanitized.sh [TARGET...] (default: both).
set -eu
cd "$(dirname "$0")/.."
BUILD_DIR=${ASAN_BUILD_DIR:-build-asan}
CC=clang-19 CXX=clang++-19 cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DGPUFRAC_BUILD_FUZZERS=ON -DGPUFRAC_BUILD_BENCH=OFF \
  -DGPUFRAC_SANITIZE=address,undefined,fuzzer-no-link >/dev/null
# shellcheck disable=SC2046
cmake --build "$BUILD_DIR" -j "$(nproc)" --target ${*:-unit_tests fuzzers}
