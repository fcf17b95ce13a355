#!/bin/sh
# The demo: installs dependencies, builds, and tells the gpufrac story on this node (a simulated
# GPU machine when no NVIDIA driver is present). Run as root. See scripts/demo-story.sh.
set -eu
cd "$(dirname "$0")/.."
./scripts/install-deps.sh
# Only what the demo runs; ./scripts/test.sh builds the rest (tests, benchmarks) in the same tree.
BUILD_DIR=${BUILD_DIR:-build} BUILD_TARGET=demo ./scripts/build.sh
exec ./scripts/demo-story.sh
