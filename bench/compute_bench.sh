#!/bin/bash
# The launch gate's cost over the fake libcuda.so.1: ns per cuLaunchKernel (a kernel of no duration
# on the fake's simulated GPU, bench/shim_bench.c "launch") without the shim, with the shim and a
# limit file without a compute line (the inert gate: one branch), and with a compute share on an
# arbiter of its own (arbitrated, uncontended: the lease check, one clock read, an event recorded
# after each launch and one queried when the in-flight bound is reached). Each figure is the best
# of 5 alternating runs; "added" is against the baseline of the same run.
# Usage: bench/compute_bench.sh [BUILD_DIR]   (after: ninja -C BUILD_DIR shim_bench gpufrac_limits arbiter_tool)
set -euo pipefail
BUILD=$(cd "${1:-build}" && pwd)
BENCH=$BUILD/bin/shim_bench
SHIM=$BUILD/bin/libgpufrac-limits.so
TOOL=$BUILD/tests/compute/arbiter_tool
for f in "$BENCH" "$SHIM" "$TOOL"; do
  [ -e "$f" ] || { echo "compute_bench.sh: $f is missing; build shim_bench, gpufrac_limits and arbiter_tool" >&2; exit 2; }
done
GPU=GPU-894e9a6d-f600-b098-3d59-138988473c2c
export LD_LIBRARY_PATH=$BUILD/fakes
export GPUFRAC_FAKE_CUDA_DEVICES=$GPU=40Gi
export GPUFRAC_FAKE_CUDA_COST=0 # driver calls free: the gate's own code is measured
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$TOOL" share "$tmp" inert "$GPU=$((32 << 30)):0:fair:normal"
"$TOOL" share "$tmp" gated "$GPU=$((32 << 30)):300000:fair:normal"

val() { sed -n "s/.* $1=\([0-9.]*\).*/\1/p" <<<"$2"; }
min() { awk -v a="$1" -v b="$2" 'BEGIN{print (a == "" || b + 0 < a + 0) ? b : a}'; }
declare -A best=()
for _ in 1 2 3 4 5; do
  best[base]=$(min "${best[base]:-}" "$(val launch_ns "$("$BENCH" launch)")")
  for mode in inert gated; do
    out=$(GPUFRAC_LIMITS_FILE=$tmp/$mode.limits LD_PRELOAD=$SHIM "$BENCH" launch)
    best[$mode]=$(min "${best[$mode]:-}" "$(val launch_ns "$out")")
  done
done
echo "launch gate on $(nproc) cores, $(uname -m), fake libcuda.so.1"
printf '%-44s %10s %10s\n' "" "ns" "added"
printf '%-44s %10s %10s\n' "cuLaunchKernel without the shim" "${best[base]}" ""
for mode in inert gated; do
  label="with the shim, no compute share (inert gate)"
  [ "$mode" = gated ] && label="with a compute share, alone on its GPU"
  printf '%-44s %10s %10s\n' "$label" "${best[$mode]}" "$(awk -v a="${best[$mode]}" -v b="${best[base]}" 'BEGIN{printf "%+.1f", a-b}')"
done
