#!/bin/sh
# The test command: installs dependencies, builds, and runs the whole ctest suite (unit tests and
# end-to-end tests against real runc/podman/containerd on simulated GPU machines). Run as root.
set -eu
cd "$(dirname "$0")/.."
./scripts/install-deps.sh
BUILD_DIR=${BUILD_DIR:-build} ./scripts/build.sh
cd "${BUILD_DIR:-build}"
ctest --output-on-failure -j "$(nproc)" --timeout 900
