#!/bin/sh
# The demo: installs dependencies, builds, and tells the gpufrac story on this node (a simulated
# GPU machine when no NVIDIA driver is present). Run as root. See scripts/demo-story.sh.
set -eu
cd "$(dirname "$0")/.."
./scripts/install-deps.sh
BUILD_DIR=${BUILD_DIR:-build} ./scripts/build.sh
exec ./scripts/demo-story.sh
