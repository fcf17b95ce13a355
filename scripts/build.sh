#!/bin/sh
# Configures and builds gpufrac into ${BUILD_DIR:-build} (RelWithDebInfo). Extra CMake arguments
# may follow, e.g. scripts/build.sh -DGPUFRAC_SANITIZE=address,undefined.
set -eu
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
cmake -S . -B "$BUILD_DIR" -G Ninja "$@" >/dev/null
cmake --build "$BUILD_DIR" -j "$(nproc)"
