#!/bin/bash
# What the fake libcuda.so.1's simulated GPU costs its callers (tests/fakes/cuda/README.md): ns per
# cuStreamQuery on an idle stream (a catch-up of the slices and a read of the context's clock) and
# per cuLaunchKernel of a kernel of no duration, with driver costs off (the simulation's own code)
# and at the defaults, the process alone on its simulated GPU and beside three busy processes (the
# slices change every 2 ms). Baseline in the same run: one CLOCK_MONOTONIC read. Each figure is the
# best of 5 loops (tests/e2e/compute/compute_load mode qbench), best of 3 runs.
# Usage: bench/fake_gpu_bench.sh [BUILD_DIR]   (after: ninja -C BUILD_DIR compute_tests)
set -euo pipefail
BUILD=$(cd "${1:-build}" && pwd)
LOAD=$BUILD/tests/compute/compute_load
TOOL=$BUILD/fakes/fake_gpu_tool
for f in "$LOAD" "$TOOL"; do
  [ -e "$f" ] || { echo "fake_gpu_bench.sh: $f is missing; build compute_tests" >&2; exit 2; }
done
export LD_LIBRARY_PATH=$BUILD/fakes
export GPUFRAC_FAKE_CUDA_DEVICES=GPU-894e9a6d-f600-b098-3d59-138988473c2c=40Gi
tmp=$(mktemp -d)
pids=()
trap 'kill "${pids[@]}" 2>/dev/null || true; rm -rf "$tmp"' EXIT
export GPUFRAC_FAKE_CUDA_GPU=$tmp/gpu
"$TOOL" init "$GPUFRAC_FAKE_CUDA_GPU"

val() { sed -n "s/.* $1=\([0-9.]*\).*/\1/p" <<<"$2"; }
min() { awk -v a="$1" -v b="$2" 'BEGIN{print (a == "" || b + 0 < a + 0) ? b : a}'; }
# measure CASE COST: best of 3 runs into best[CASE.clock|query|launch].
declare -A best=()
measure() {
  local out
  for _ in 1 2 3; do
    out=$(GPUFRAC_FAKE_CUDA_COST=$2 "$LOAD" qbench:20000)
    for k in clock query launch; do best[$1.$k]=$(min "${best[$1.$k]:-}" "$(val "${k}_ns" "$out")"); done
  done
}
measure alone.free 0
measure alone.costs ""
for i in 1 2 3; do
  GPUFRAC_FAKE_CUDA_COST=0 "$LOAD" async:0 >/dev/null 2>&1 &
  pids+=($!)
done
sleep 0.5
measure busy.free 0
measure busy.costs ""

echo "simulated GPU on $(nproc) cores, $(uname -m), load average $(cut -d' ' -f1 /proc/loadavg) at the end"
printf '%-52s %10s %10s %10s\n' "" "clock ns" "query ns" "launch ns"
for c in alone.free alone.costs busy.free busy.costs; do
  case $c in
    alone.free) label="alone, driver costs 0" ;;
    alone.costs) label="alone, default costs (query 0.3 us, launch 3 us)" ;;
    busy.free) label="beside 3 busy processes, driver costs 0" ;;
    busy.costs) label="beside 3 busy processes, default costs" ;;
  esac
  printf '%-52s %10s %10s %10s\n' "$label" "${best[$c.clock]}" "${best[$c.query]}" "${best[$c.launch]}"
done
