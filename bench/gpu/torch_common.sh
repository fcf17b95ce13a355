# Shared by the PyTorch checks on a real GPU (bench/gpu/compute.sh, sm_share_check.sh), sourced after
# `set -euo pipefail`: torch_bench_setup <name> <why root> [build-dir] [OUT_DIR] sets SRC, BUILD,
# BIN, WORK (OUT_DIR, else $OUT, else a new /tmp/gpufrac-<name>.XXXXXX), PYTHON and WINDOW
# (GPUFRAC_BENCH_WINDOW, default 10 s), defines die (one line, exit 2), and exits 2 with one line
# unless this is root with runc, jq, nvidia-smi, a built tree and PyTorch with CUDA.
torch_bench_setup() {
  local name=$1 why_root=$2 tool f
  shift 2
  BENCH_NAME=$name
  SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
  BUILD=$(realpath "${1:-$SRC/build}")
  BIN=$BUILD/bin
  WORK=${2:-${OUT:-}}
  [ -n "$WORK" ] || WORK=$(mktemp -d "/tmp/gpufrac-$name.XXXXXX")
  mkdir -p "$WORK"
  WORK=$(cd "$WORK" && pwd)
  PYTHON=$(command -v "${PYTHON:-python3}" || true)
  WINDOW=${GPUFRAC_BENCH_WINDOW:-10}
  [ "$(id -u)" = 0 ] || die "run as root ($why_root)"
  for tool in runc jq nvidia-smi; do command -v "$tool" >/dev/null || die "$tool is not installed"; done
  for f in gpufrac gpufrac-hook gpufrac-runtime libgpufrac-limits.so; do
    [ -e "$BIN/$f" ] || die "$BIN/$f is missing; build the tree first (cmake --build $BUILD)"
  done
  [ -n "$PYTHON" ] && "$PYTHON" -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null ||
    die "PyTorch with CUDA is not available here; accepted: a GPU machine with a CUDA build of PyTorch"
}
die() { echo "gpufrac bench/gpu/$BENCH_NAME: $*" >&2; exit 2; }
