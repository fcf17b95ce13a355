#!/bin/bash
# GPU memory swap on a real NVIDIA GPU (a lent machine with PyTorch; the source tree alone is
# enough): bench/gpu/swap_torch.py fills GPUFRAC_SWAP_GIB (default 4) GiB of tensors in a child,
# swaps them out and in through the driver's checkpoint API (lock, checkpoint, restore, unlock
# by pid), and prints the seconds and GB/s of each step, nvidia-smi's memory before, while
# checkpointed and after, and whether every byte came back. Needs driver r570+ (CUDA 12.8); reads
# GPU state only, changes no GPU setting. Usage: bench/gpu/swap.sh [OUT_DIR] (default $OUT, else a
# temporary directory); the summary is OUT_DIR/swap.json.
set -euo pipefail
SRC=$(cd "$(dirname "$0")/../.." && pwd)
WORK=${1:-${OUT:-$(mktemp -d /tmp/gpufrac-swap.XXXXXX)}}
mkdir -p "$WORK"
PYTHON=${PYTHON:-python3}
die() { echo "gpufrac bench/gpu/swap: $*" >&2; exit 2; }
command -v nvidia-smi >/dev/null || die "nvidia-smi is not installed; accepted: a machine with an NVIDIA GPU"
driver=$(nvidia-smi --query-gpu=driver_version --format=csv,noheader -i 0) || die "nvidia-smi lists no GPU"
[ "${driver%%.*}" -ge 570 ] || die "driver $driver has no checkpoint API; accepted: r570 or newer"
"$PYTHON" -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null ||
  die "PyTorch with CUDA is not available ($PYTHON); accepted: a GPU machine with a CUDA build of PyTorch"
echo "driver $driver; summary: $WORK/swap.json"
rc=0
"$PYTHON" "$SRC/bench/gpu/swap_torch.py" --gib "${GPUFRAC_SWAP_GIB:-4}" | tee "$WORK/swap.json" || rc=$?
exit $rc
