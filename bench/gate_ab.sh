#!/bin/bash
# The launch gate's own cost, two builds side by side (what a change to the gate adds per launch):
# ns of the thread's CPU time per cuLaunchKernel (bench/shim_bench.c "launch" cpu_ns: a kernel of no
# duration on the fake libcuda.so.1, driver calls free, GPUFRAC_FAKE_CUDA_COST=0; CPU time, so that
# a loaded machine's scheduling does not count) under each build's shim, alternating
# builds round by round, best of ROUNDS each: without the shim, with an inert gate (no compute share),
# a share alone (solo), a share gated (an event per launch: beside an idle high-priority share), and
# the gated share with CUDA_LAUNCH_BLOCKING=1 (its launches wait for their kernel). The same
# shim_bench and fake driver serve both builds; each build's shares are made by its own arbiter_tool
# (the arbiter's file layout may differ between them), so only the shim and its files differ.
# Usage: bench/gate_ab.sh BEFORE_BUILD_DIR AFTER_BUILD_DIR [ROUNDS]
#        (after: ninja -C each shim_bench gpufrac_limits; the AFTER build also compute_tests)
set -euo pipefail
BEFORE=$(cd "$1" && pwd)
AFTER=$(cd "$2" && pwd)
ROUNDS=${3:-7}
BENCH=$AFTER/bin/shim_bench
for f in "$BENCH" "$BEFORE/tests/compute/arbiter_tool" "$AFTER/tests/compute/arbiter_tool" \
  "$BEFORE/bin/libgpufrac-limits.so" "$AFTER/bin/libgpufrac-limits.so"; do
  [ -e "$f" ] || { echo "gate_ab.sh: $f is missing; build shim_bench, gpufrac_limits and compute_tests" >&2; exit 2; }
done
GPU=GPU-894e9a6d-f600-b098-3d59-138988473c2c
export LD_LIBRARY_PATH=$AFTER/fakes GPUFRAC_FAKE_CUDA_DEVICES=$GPU=40Gi GPUFRAC_FAKE_CUDA_COST=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export GPUFRAC_FAKE_CUDA_GPU=$tmp/sim-gpu
# Each build's shares made by its own arbiter_tool: the arbiter's layout may differ between them.
for b in before after; do
  [ "$b" = before ] && tool=$BEFORE/tests/compute/arbiter_tool || tool=$AFTER/tests/compute/arbiter_tool
  mkdir -p "$tmp/$b/p" "$tmp/$b/g"
  "$tool" share "$tmp/$b/p" inert "$GPU=$((8 << 30)):0:fair:normal"
  "$tool" share "$tmp/$b/p" solo "$GPU=$((8 << 30)):300000:fair:normal"
  "$tool" share "$tmp/$b/g" gated "$GPU=$((8 << 30)):300000:fair:normal"
  "$tool" share "$tmp/$b/g" idle-high "$GPU=$((8 << 30)):100000:fair:high"
done >/dev/null
val() { sed -n "s/.* $1=\([0-9.]*\).*/\1/p" <<<"$2"; }
min() { awk -v a="$1" -v b="$2" 'BEGIN{print (a == "" || b + 0 < a + 0) ? b : a}'; }
MODES="inert solo gated blocking"
limits_of() { # BUILD MODE
  case $2 in
    inert) echo "$tmp/$1/p/inert.limits" ;;
    solo) echo "$tmp/$1/p/solo.limits" ;;
    *) echo "$tmp/$1/g/gated.limits" ;;
  esac
}
declare -A best=()
for _ in $(seq "$ROUNDS"); do
  best[base]=$(min "${best[base]:-}" "$(val cpu_ns "$("$BENCH" launch)")")
  for b in before after; do
    [ "$b" = before ] && shim=$BEFORE/bin/libgpufrac-limits.so || shim=$AFTER/bin/libgpufrac-limits.so
    for mode in $MODES; do
      blocking=0
      [ "$mode" = blocking ] && blocking=1
      out=$(CUDA_LAUNCH_BLOCKING=$blocking GPUFRAC_LIMITS_FILE=$(limits_of "$b" "$mode") LD_PRELOAD=$shim "$BENCH" launch)
      best[$b.$mode]=$(min "${best[$b.$mode]:-}" "$(val cpu_ns "$out")")
    done
  done
done
echo "gate_ab on $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg); before $BEFORE, after $AFTER; best of $ROUNDS"
printf '%-56s %10s %10s %8s\n' "CPU ns per cuLaunchKernel (driver calls free)" before after ratio
printf '%-56s %10s\n' "without the shim" "${best[base]}"
for mode in $MODES; do
  case $mode in
    inert) label="shim, no compute share (inert gate)" ;;
    solo) label="a share alone on its GPU (solo)" ;;
    gated) label="a share gated (an event per launch)" ;;
    blocking) label="the same with CUDA_LAUNCH_BLOCKING=1" ;;
  esac
  a=${best[before.$mode]} b=${best[after.$mode]}
  printf '%-56s %10s %10s %8s\n' "$label" "$a" "$b" "$(awk -v a="$a" -v b="$b" 'BEGIN { printf "%.3f", b / a }')"
done
