#!/bin/bash
# The compute share's cost to a launch-bound loop, over the fake libcuda.so.1 with the driver's CPU
# costs modelled (GPUFRAC_FAKE_CUDA_COST, tests/fakes/cuda/README.md: launch 3 us, event record 1 us,
# query 0.3 us, synchronise 1 us): launches per second of compute_load's asynchronous loop of kernels
# that take no GPU time (so the CPU side is all there is), with gpufrac against the same loop without
# gpufrac, side by side in one run, in four cases:
#   whole      a whole GPU (compute 1000000: never arbitrated)
#   alone      a share (compute 30) alone on its GPU (solo: no extra driver call per launch)
#   after      the same share 1 s after a competitor (compute 70, its own loop) left
#   contended  the two shares both busy (the 30 % one's rate; without gpufrac both loops run freely)
# Each figure is the median of ROUNDS alternating runs of SECONDS each; the ratio is with / without,
# per second and per second of the loop's CPU time (what the shim adds to each launch, whatever else
# the machine runs meanwhile).
# Part 2, the gate's own code with driver calls free (GPUFRAC_FAKE_CUDA_COST=0): ns per cuLaunchKernel
# (bench/shim_bench.c "launch") without the shim, with an inert gate, a share alone (solo) and a share
# gated (an event per launch, the oldest queried at the in-flight bound: beside an idle high-priority
# share, which keeps every other share of its GPU gated without taking the GPU).
# Part 3, two `gpus: 2` shares competing (docs/architecture.md "Multi-GPU shares"): steps per second of
# a two-GPU job (each step a 5 ms kernel on GPU 0 and one on GPU 1, then both waited for, as a
# collective's peers meet), alone on a 50 % share of both GPUs, and two such jobs at once, with
# gpufrac (each GPU's lease taken independently) and without (the GPUs' time-slicing only).
# Usage: bench/compute_bench.sh [BUILD_DIR] [SECONDS] [ROUNDS]
#        (after: ninja -C BUILD_DIR shim_bench compute_tests)
set -euo pipefail
BUILD=$(cd "${1:-build}" && pwd)
SECONDS_RUN=${2:-2}
ROUNDS=${3:-5}
BENCH=$BUILD/bin/shim_bench
SHIM=$BUILD/bin/libgpufrac-limits.so
TOOL=$BUILD/tests/compute/arbiter_tool
LOAD=$BUILD/tests/compute/compute_load
for f in "$BENCH" "$SHIM" "$TOOL" "$LOAD"; do
  [ -e "$f" ] || { echo "compute_bench.sh: $f is missing; build shim_bench and compute_tests" >&2; exit 2; }
done
GPU=GPU-894e9a6d-f600-b098-3d59-138988473c2c
export LD_LIBRARY_PATH=$BUILD/fakes
export GPUFRAC_FAKE_CUDA_DEVICES=$GPU=40Gi
COSTS="launch=3us,record=1us,query=0.3us,sync=1us"
tmp=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$tmp"' EXIT
export GPUFRAC_FAKE_CUDA_GPU=$tmp/sim-gpu
"$TOOL" share "$tmp" whole "$GPU=$((32 << 30)):1000000:fair:normal"
"$TOOL" share "$tmp" s30 "$GPU=$((8 << 30)):300000:fair:normal"
"$TOOL" share "$tmp" s70 "$GPU=$((8 << 30)):700000:fair:normal"
"$TOOL" share "$tmp" inert "$GPU=$((8 << 30)):0:fair:normal"

# rate WITH LIMITS PHASES...: the last phase of compute_load: launches per second and per CPU second
# (with: under the shim with that limit file; else without gpufrac).
rate() {
  local with=$1 limits=$2 out last
  shift 2
  if [ "$with" = 1 ]; then
    out=$(GPUFRAC_LIMITS_FILE=$tmp/$limits.limits LD_PRELOAD=$SHIM GPUFRAC_FAKE_CUDA_COST=$COSTS "$LOAD" -k nop "$@")
  else
    out=$(GPUFRAC_FAKE_CUDA_COST=$COSTS "$LOAD" -k nop "$@")
  fi
  last=${*: -1}
  awk -v n="$(grep '^phase' <<<"$out" | tail -1 | sed -n 's/.*launches=\([0-9]*\).*/\1/p')" -v s="${last#*:}" \
    -v cpu="$(grep '^calls' <<<"$out" | tail -1 | sed -n 's/.*cpu_us=\([0-9]*\).*/\1/p')" \
    'BEGIN { printf "%.0f %.0f", n / s, n / (cpu / 1e6) }'
}
# competitor WITH SECONDS: the 70 % share's loop in the background (without gpufrac: the same loop).
competitor() {
  if [ "$1" = 1 ]; then
    GPUFRAC_LIMITS_FILE=$tmp/s70.limits LD_PRELOAD=$SHIM GPUFRAC_FAKE_CUDA_COST=$COSTS "$LOAD" -k nop "async:$2" >/dev/null &
  else
    GPUFRAC_FAKE_CUDA_COST=$COSTS "$LOAD" -k nop "async:$2" >/dev/null &
  fi
}
# one CASE WITH: one run of the case; prints the rate.
one() {
  case $1 in
    whole) rate "$2" whole "async:$SECONDS_RUN" ;;
    alone) rate "$2" s30 "async:$SECONDS_RUN" ;;
    after)
      competitor "$2" 1
      rate "$2" s30 async:2 "async:$SECONDS_RUN"
      wait
      ;;
    contended)
      competitor "$2" "$((SECONDS_RUN + 1))"
      rate "$2" s30 async:0.5 "async:$SECONDS_RUN"
      wait
      ;;
  esac
}
median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

echo "compute_bench on $(nproc) cores, $(uname -m), load $(cut -d' ' -f1-3 /proc/loadavg), fake libcuda.so.1 ($COSTS)"
printf '%-12s %14s %14s %8s %16s %16s %8s\n' case "without (1/s)" "with (1/s)" ratio "without (1/cpu s)" \
  "with (1/cpu s)" ratio
for c in whole alone after contended; do
  : >"$tmp/$c.0"
  : >"$tmp/$c.1"
  for _ in $(seq "$ROUNDS"); do
    one "$c" 0 >>"$tmp/$c.0"
    echo >>"$tmp/$c.0"
    one "$c" 1 >>"$tmp/$c.1"
    echo >>"$tmp/$c.1"
  done
  a=$(cut -d' ' -f1 "$tmp/$c.0" | median) b=$(cut -d' ' -f1 "$tmp/$c.1" | median)
  ac=$(cut -d' ' -f2 "$tmp/$c.0" | median) bc=$(cut -d' ' -f2 "$tmp/$c.1" | median)
  printf '%-12s %14s %14s %8s %16s %16s %8s\n' "$c" "$a" "$b" "$(awk -v a="$a" -v b="$b" 'BEGIN { printf "%.3f", b / a }')" \
    "$ac" "$bc" "$(awk -v a="$ac" -v b="$bc" 'BEGIN { printf "%.3f", b / a }')"
done

# Part 2: the gate's own code, driver calls free.
export GPUFRAC_FAKE_CUDA_COST=0
val() { sed -n "s/.* $1=\([0-9.]*\).*/\1/p" <<<"$2"; }
min() { awk -v a="$1" -v b="$2" 'BEGIN{print (a == "" || b + 0 < a + 0) ? b : a}'; }
mkdir "$tmp/p2"
"$TOOL" share "$tmp/p2" gated "$GPU=$((8 << 30)):300000:fair:normal"
"$TOOL" share "$tmp/p2" idle-high "$GPU=$((8 << 30)):100000:fair:high"
declare -A best=()
for _ in 1 2 3 4 5; do
  best[base]=$(min "${best[base]:-}" "$(val launch_ns "$("$BENCH" launch)")")
  for mode in inert solo gated; do
    case $mode in
      inert) limits=$tmp/inert.limits ;;
      solo) limits=$tmp/s30.limits ;;
      gated) limits=$tmp/p2/gated.limits ;;
    esac
    out=$(GPUFRAC_LIMITS_FILE=$limits LD_PRELOAD=$SHIM "$BENCH" launch)
    best[$mode]=$(min "${best[$mode]:-}" "$(val launch_ns "$out")")
  done
done
echo
printf '%-52s %10s %10s\n' "the gate's own code (driver calls free)" "ns" "added"
printf '%-52s %10s %10s\n' "cuLaunchKernel without the shim" "${best[base]}" ""
for mode in inert solo gated; do
  case $mode in
    inert) label="with the shim, no compute share (inert gate)" ;;
    solo) label="a compute share alone on its GPU (solo)" ;;
    gated) label="a compute share, gated (an event per launch)" ;;
  esac
  printf '%-52s %10s %10s\n' "$label" "${best[$mode]}" "$(awk -v a="${best[$mode]}" -v b="${best[base]}" 'BEGIN{printf "%+.1f", a-b}')"
done

# Part 3: two-GPU jobs.
GPU1=GPU-5b0a7d1e-1c2f-4a3b-9c8d-7e6f5a4b3c2d
export GPUFRAC_FAKE_CUDA_DEVICES="$GPU=40Gi,$GPU1=40Gi" GPUFRAC_FAKE_CUDA_COST=$COSTS
mkdir "$tmp/p3"
for j in j1 j2; do "$TOOL" share "$tmp/p3" "$j" "$GPU=$((8 << 30)):500000:fair:normal" "$GPU1=$((8 << 30)):500000:fair:normal"; done
# tp WITH JOB: the job's steps per second over SECONDS (with: under the shim).
tp() {
  local out
  if [ "$1" = 1 ]; then
    out=$(GPUFRAC_LIMITS_FILE=$tmp/p3/$2.limits LD_PRELOAD=$SHIM GPUFRAC_FAKE_CUDA_CLIENT=$2 "$LOAD" -k sleep_5ms "tp:$SECONDS_RUN")
  else
    out=$(GPUFRAC_FAKE_CUDA_CLIENT=$2 "$LOAD" -k sleep_5ms "tp:$SECONDS_RUN")
  fi
  sed -n 's/^tp steps=\([0-9]*\) seconds=\([0-9.]*\) .*/\1 \2/p' <<<"$out" | awk '{ printf "%.1f", $1 / $2 }'
}
echo
printf '%-52s %12s %12s\n' "two-GPU jobs (5 ms per GPU per step)" "without" "with"
printf '%-52s %12s %12s\n' "one job alone, steps/s (ideal 200)" "$(tp 0 j1)" "$(tp 1 j1)"
for with in 0 1; do
  tp "$with" j1 >"$tmp/p3/a.$with" &
  tp "$with" j2 >"$tmp/p3/b.$with"
  wait
done
printf '%-52s %12s %12s\n' "two jobs at once (50 % each), steps/s each (ideal 100)" \
  "$(cat "$tmp/p3/a.0") $(cat "$tmp/p3/b.0")" "$(cat "$tmp/p3/a.1") $(cat "$tmp/p3/b.1")"
