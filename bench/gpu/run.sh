#!/bin/bash
# PyTorch under the memory-limit shim on a real NVIDIA GPU (a lent GPU machine where PyTorch is
# installed and only the source tree is present). Builds the shim with plain gcc, writes a limit
# file with a 4 GiB limit for every GPU nvidia-smi lists and an empty usage region, then runs
# bench/gpu/shim_torch.py: mem_get_info shows the limit; allocating past it raises
# torch.OutOfMemoryError with the native caching allocator, expandable_segments:True (cuMemCreate)
# and backend:cudaMallocAsync; two processes share one limit; overhead of an allocation-heavy loop
# and of a matmul loop with and without the shim. Reads GPU state only (nvidia-smi -L); changes
# no GPU setting.
# Usage: bench/gpu/run.sh [--build-only] [OUT_DIR]     OUT_DIR: $OUT, else a temporary directory.
# Environment: GPUFRAC_BENCH_LIMIT (bytes, default 4294967296), PYTHON (default python3).
set -euo pipefail
SRC=$(cd "$(dirname "$0")/../.." && pwd)
BUILD_ONLY=0
if [ "${1:-}" = --build-only ]; then BUILD_ONLY=1; shift; fi
WORK=${1:-${OUT:-}}
[ -n "$WORK" ] || WORK=$(mktemp -d /tmp/gpufrac-gpu.XXXXXX)
mkdir -p "$WORK"
WORK=$(cd "$WORK" && pwd)
LIMIT=${GPUFRAC_BENCH_LIMIT:-4294967296}
PYTHON=${PYTHON:-python3}
die() { echo "gpufrac bench/gpu: $*" >&2; exit 2; }

# 1. The shim, as limits/CMakeLists.txt builds it (minus the old-glibc link stub: this machine only).
command -v gcc >/dev/null || die "gcc is not installed; accepted: a machine with gcc to build the shim"
map=$SRC/limits/shim/exports.map
[ "$(uname -m)" = aarch64 ] && map=$SRC/limits/shim/exports-aarch64.map
gcc -std=c11 -O2 -g -shared -fPIC -fvisibility=hidden -fno-strict-aliasing -D_GNU_SOURCE \
  -I"$SRC/include" -I"$SRC/limits/shim" -Wl,--version-script="$map" -Wl,-z,defs -Wl,-z,now \
  -o "$WORK/libgpufrac-limits.so" "$SRC"/limits/shim/*.c -ldl -lpthread
printf '#include <stdio.h>\n#include "gpufrac/limits_abi.h"\nint main(void){printf("%%zu\\n", sizeof(struct gpufrac_region));return 0;}\n' \
  >"$WORK/region_size.c"
gcc -I"$SRC/include" -o "$WORK/region_size" "$WORK/region_size.c"
REGION_SIZE=$("$WORK/region_size")

# 2. The devices to limit: every GPU and MIG device nvidia-smi lists (read-only query).
uuids=""
if command -v nvidia-smi >/dev/null && smi=$(nvidia-smi -L 2>/dev/null); then
  uuids=$(grep -o '\(GPU\|MIG\)-[0-9a-fA-F-]\{36\}' <<<"$smi" || true)
fi
if [ -z "$uuids" ] && [ "$BUILD_ONLY" = 1 ]; then uuids=GPU-00000000-0000-0000-0000-000000000000; fi
[ -n "$uuids" ] || die "nvidia-smi lists no GPU (is the NVIDIA driver loaded?); accepted: a machine with an NVIDIA GPU"
{
  echo "version 1"
  echo "container bench-gpu"
  echo "region $WORK/usage"
  for u in $uuids; do echo "device $u $LIMIT"; done
} >"$WORK/limits"
echo "shim: $WORK/libgpufrac-limits.so; limit file: $WORK/limits ($(wc -w <<<"$uuids") device(s), $LIMIT bytes each)"
if [ "$BUILD_ONLY" = 1 ]; then
  truncate -s 0 "$WORK/usage" && truncate -s "$REGION_SIZE" "$WORK/usage"
  echo "build only: done"
  exit 0
fi

# 3. PyTorch with CUDA, then the scenarios (each gets a fresh, all-zero region).
"$PYTHON" -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null ||
  die "PyTorch with CUDA is not available here ($PYTHON: $("$PYTHON" -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, "available", torch.cuda.is_available())' 2>&1 | tail -1)); accepted: a GPU machine with a CUDA build of PyTorch"
exec "$PYTHON" "$SRC/bench/gpu/shim_torch.py" --shim "$WORK/libgpufrac-limits.so" --limits "$WORK/limits" \
  --region "$WORK/usage" --region-size "$REGION_SIZE" --limit "$LIMIT" --summary "$WORK/summary.txt"
