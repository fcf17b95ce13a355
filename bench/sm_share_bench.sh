#!/bin/bash
# SM sharing's throughput on the simulated GPU (docs/architecture.md "SM sharing"), with real runc
# containers through gpufrac-hook on the simulated one-GPU A100 node: each container keeps the GPU
# busy with 500 us kernels (mps_probe launch: asynchronous launches, the stream's queue full), and
# the simulated GPU counts the kernels each completes over a 5 s window (fake_gpu_tool done) once
# all of them have run for 2 s. With SM_BENCH_LOOP=sync each kernel is waited for before the next
# (an inference loop's shape: the host's wake-up after each kernel counts too). Side by side, in
# one run:
#   - SM shares (compute-mode sm) at 30 and 70, each alone and both together, with kernels that need
#     the whole GPU (width 100: a 30 % client runs them at 0.3 of full speed) and narrow ones (width
#     20: both fit at once);
#   - the time-sliced pair: the same two containers as time shares (compute 30 and 70, the shim's
#     arbiter), the same kernels.
# "allowed" is what the SM percent allows on the simulated GPU: min(1, percent/width) of the
# kernels a whole GPU would run (2000/s for 500 us kernels). Figures in bench/README.md "SM sharing".
# Usage: bench/sm_share_bench.sh [BUILD_DIR]   (root, runc; after: ninja -C BUILD_DIR sm_tests fake_gpu_tool)
set -euo pipefail
BUILD=$(cd "${1:-build}" && pwd)
export GPUFRAC_SOURCE_DIR=$(cd "$(dirname "$0")/.." && pwd) GPUFRAC_BUILD_DIR=$BUILD
export GPUFRAC_BUILD_BIN_DIR=$BUILD/bin GPUFRAC_FAKES_DIR=$BUILD/fakes
source "$GPUFRAC_SOURCE_DIR/tests/e2e/lib.sh"
source "$GPUFRAC_SOURCE_DIR/tests/e2e/containers.sh"
source "$GPUFRAC_SOURCE_DIR/tests/e2e/sm/sm_lib.sh"
e2e_runc_test smbench
sm_config a100-40gb-x1.yaml "compute: {mps-idle-timeout: 0}"  # gc between runs stops the daemon
TOOL=$GPUFRAC_FAKES_DIR/fake_gpu_tool
SIM=$E2E_TMP/fake/sim-gpu
WINDOW=${SM_BENCH_WINDOW:-5}
KERNEL_US=500
LOOP=${SM_BENCH_LOOP:-launch}

# measure <name> <kernel> <tag:annotations>...: the containers together; prints "<tag> <kernels/s>".
measure() {
  local name=$1 kernel=$2 spec tag
  shift 2
  rm -f "$SIM"
  "$TOOL" init "$SIM"
  for spec in "$@"; do
    tag=${spec%%:*}
    local ann=()
    IFS=, read -r -a ann <<<"${spec#*:}"
    local dir=$E2E_TMP/$name-$kernel-$tag
    sm_bundle "$dir" "mps_probe $LOOP 100000000 $kernel" "${ann[@]}"
    with_env "$dir" "GPUFRAC_FAKE_CUDA_GPU=$SIM" "GPUFRAC_FAKE_CUDA_CLIENT=$tag"
    runc run -d --bundle "$dir" "$P-$tag" >"$dir.out" 2>&1 </dev/null || {
      echo "runc run $tag: $(cat "$dir.out")" >&2
      exit 1
    }
  done
  sleep 2  # every client connected and running
  local tags=()
  for spec in "$@"; do tags+=("${spec%%:*}"); done
  "$TOOL" done "$SIM" "$WINDOW" "${tags[@]}" | awk '{sub("per_s=", "", $3); print $1, $3}'
  for tag in "${tags[@]}"; do
    runc kill "$P-$tag" KILL >/dev/null 2>&1 || true
    runc delete -f "$P-$tag" >/dev/null 2>&1 || true
  done
  "$GPUFRAC" gc >/dev/null
}

allowed() { awk -v p="$1" -v w="$2" -v k="$KERNEL_US" 'BEGIN { s = p / w; if (s > 1) s = 1; printf "%.0f", s * 1e6 / k }'; }
row() {  # row <label> <percent> <width> <kernels/s>
  local want
  want=$(allowed "$2" "$3")
  printf '%-40s %8s %8s %+7.1f %%\n' "$1" "$4" "$want" "$(awk -v a="$4" -v b="$want" 'BEGIN { print (a - b) * 100 / b }')"
}

SM30=gpufrac.io/compute=30,gpufrac.io/compute-mode=sm
SM70=gpufrac.io/compute=70,gpufrac.io/compute-mode=sm
echo "SM sharing on the simulated GPU, $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg), window ${WINDOW} s, ${KERNEL_US} us kernels, loop $LOOP"
printf '%-40s %8s %8s %9s\n' "" "kernels/s" "allowed" "off by"
for width in 100 20; do
  k=sleep_${KERNEL_US}us_w$width
  a=$(measure alone30 "$k" "a:$SM30")
  row "SM 30 % alone, width $width" 30 "$width" "$(awk '{print $2}' <<<"$a")"
  a=$(measure alone70 "$k" "b:$SM70")
  row "SM 70 % alone, width $width" 70 "$width" "$(awk '{print $2}' <<<"$a")"
  both=$(measure pair "$k" "a:$SM30" "b:$SM70")
  row "SM 30 % beside 70 %, width $width" 30 "$width" "$(awk '$1 == "a" {print $2}' <<<"$both")"
  row "SM 70 % beside 30 %, width $width" 70 "$width" "$(awk '$1 == "b" {print $2}' <<<"$both")"
  SM_SUM[$width]=$(awk '{s += $2} END {print s}' <<<"$both")
  time=$(measure time "$k" "a:gpufrac.io/compute=30" "b:gpufrac.io/compute=70")
  TIME_SUM[$width]=$(awk '{s += $2} END {print s}' <<<"$time")
  printf '%-40s %8s\n' "time shares 30 % + 70 %, width $width" "$(awk '{printf "%s ", $2}' <<<"$time")"
done
for width in 100 20; do
  printf 'width %3s: SM pair %s kernels/s, time-sliced pair %s kernels/s (x%s)\n' "$width" "${SM_SUM[$width]}" \
    "${TIME_SUM[$width]}" "$(awk -v a="${SM_SUM[$width]}" -v b="${TIME_SUM[$width]}" 'BEGIN { printf "%.2f", a / b }')"
done
finish
