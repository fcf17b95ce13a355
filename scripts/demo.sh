#!/bin/sh
# The demo: installs dependencies, builds, and shows gpufrac on a simulated GPU machine (or on the
# real GPUs when an NVIDIA driver is present). Run as root.
set -eu
cd "$(dirname "$0")/.."
./scripts/install-deps.sh
BUILD_DIR=${BUILD_DIR:-build} ./scripts/build.sh
BIN="${BUILD_DIR:-build}/bin/gpufrac"
if "$BIN" info >/dev/null 2>&1; then
  exec "$BIN" info
fi
echo "No NVIDIA driver found: showing a simulated DGX-like node."
exec "$BIN" info --machine nvml/machines/dgx-8gpu-mixed.yaml
