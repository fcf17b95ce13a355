#!/bin/bash
# Compute shares on a real NVIDIA GPU (a lent GPU machine; run as root from a built tree, with runc,
# jq and a CUDA build of PyTorch on the host). Two containers on GPU 0 started through
# gpufrac-runtime, each one process of bench/gpu/compute_torch.py, the host's own files bound
# read-only as their root (python and torch from the host, never the driver: gpufrac injects it):
#   1. PyTorch matmul loops (fp16 4096 x 4096, 8 per step) at 30/70 and 10/90, asynchronous and as
#      CUDA graphs: the achieved ratio by completed matmuls in a 10 s window (PASS within 2
#      points); the same pair with memory shares only (allocation.compute: unmanaged: the GPU's own
#      time-slicing) for comparison.
#   2. A small inference loop (three 512 x 512 layers every 20 ms) beside a batch matmul loop: its
#      step latency p50/p99 alone, beside the batch at normal priority, and with priority: high,
#      and what the batch completed meanwhile.
#   3. A training-shaped loop (an MLP's forward, backward, Adam step and loss.item() each iteration)
#      and a launch-bound decode loop (about 100 small kernels per token, no CUDA graphs, .item() per
#      token): each alone on a share (compute 30: nothing else on the GPU) against the same program
#      run on the host without gpufrac (PASS at a ratio of 0.98 or more), and the two at 30/70 by
#      completed iterations or tokens (PASS within 2 points).
# Reads GPU state only (nvidia-smi -L); changes no GPU setting. Prints a summary and writes it to
# OUT_DIR/summary.txt.
# Usage: bench/gpu/compute.sh [build-dir] [OUT_DIR]    OUT_DIR: $OUT, else a temporary directory.
# Environment: PYTHON (default python3), GPUFRAC_BENCH_WINDOW (seconds, default 10).
set -euo pipefail
source "$(dirname "$0")/torch_common.sh"
torch_bench_setup compute "runc" "$@"
IDS=()
cleanup() { local id; for id in "${IDS[@]}"; do runc delete -f "$id" >/dev/null 2>&1 || true; done; }
trap cleanup EXIT

# config NAME [YAML...]: a gpufrac config on this node's real NVML, state under WORK/NAME.
config() {
  local name=$1
  shift
  mkdir -p "$WORK/$name"
  {
    echo "state-dir: $WORK/$name/state"
    echo "nvml: {backend: nvml}"
    echo "shim: {path: $BIN/libgpufrac-limits.so}"
    echo "hook: {path: $BIN/gpufrac-hook}"
    echo "cli: {path: $BIN/gpufrac}"
    echo "log: {target: file, file: $WORK/$name/gpufrac.log, level: debug}"
    for line in "$@"; do echo "$line"; done
  } >"$WORK/$name/config.yaml"
  GPUFRAC_CONFIG=$WORK/$name/config.yaml "$BIN/gpufrac" info --refresh >/dev/null
}
config managed
config unmanaged "allocation: {compute: unmanaged}"

# The containers' root: the host's directories read-only (top-level symlinks of a merged /usr kept).
R=$WORK/rootfs
mkdir -p "$R/proc" "$R/sys" "$R/dev" "$R/run" "$R/tmp"
ROOT_MOUNTS='[]'
for d in /usr /lib /lib32 /lib64 /libx32 /bin /sbin /etc /opt /home /root /srv; do
  if [ -L "$d" ]; then
    ln -sfn "$(readlink "$d")" "$R$d"
  elif [ -d "$d" ]; then
    mkdir -p "$R$d"
    ROOT_MOUNTS=$(jq --arg d "$d" '. + [{destination: $d, source: $d, type: "bind", options: ["rbind","ro","nosuid"]}]' <<<"$ROOT_MOUNTS")
  fi
done

# start NAME CONFIG CMD ANNOTATION...: a container through gpufrac-runtime in the host PID namespace.
start() {
  local name=$1 cfg=$2 cmd=$3 dir=$WORK/$1
  shift 3
  mkdir -p "$dir"
  (cd "$dir" && runc spec)
  local ann='{}'
  for kv in "$@"; do ann=$(jq --arg k "${kv%%=*}" --arg v "${kv#*=}" '. + {($k): $v}' <<<"$ann"); done
  jq --arg r "$R" --arg cmd "$cmd" --argjson ann "$ann" --argjson m "$ROOT_MOUNTS" '
    .root = {path: $r, readonly: true} | .process.terminal = false | .process.args = ["/bin/sh", "-c", $cmd]
    | .process.env += ["HOME=/tmp"] | .annotations = $ann | .mounts += $m
    | .mounts += [{destination: "/tmp", type: "tmpfs", source: "tmpfs", options: ["nosuid","nodev"]}]
    | .linux.namespaces |= map(select(.type != "pid"))
  ' "$dir/config.json" >"$dir/c.json" && mv "$dir/c.json" "$dir/config.json"
  IDS+=("gpufrac-compute-$name-$$")
  GPUFRAC_CONFIG=$WORK/$cfg/config.yaml "$BIN/gpufrac-runtime" run --bundle "$dir" "gpufrac-compute-$name-$$" \
    >"$WORK/$name.out" 2>&1 &
}
# result NAME KEY: KEY of the last JSON line the container printed.
result() { tail -1 "$WORK/$1.out" | jq -r ".$2" 2>/dev/null || echo "?"; }
# The host's CLOCK_MONOTONIC in seconds (the containers share it: no time namespace).
mono() { "$PYTHON" -c 'import time; print(time.clock_gettime(time.CLOCK_MONOTONIC))'; }
TORCH="$PYTHON $SRC/bench/gpu/compute_torch.py"
SUMMARY=()
note() { SUMMARY+=("$1"); echo "$1"; }
STATUS=0

# pair CONFIG MODE A B [ANNOTATIONS...]: matmul loops, A and B percent (compute shares unless the
# config is unmanaged); the ratio by completed matmuls.
pair() {
  local cfg=$1 mode=$2 a=$3 b=$4 t
  t=$(awk -v n="$(mono)" 'BEGIN{printf "%.3f", n + 20}') # CUDA and cuBLAS start well within 20 s
  local key=gpufrac.io/compute
  [ "$cfg" = unmanaged ] && key=gpufrac.io/fraction
  local va=$a vb=$b
  [ "$cfg" = unmanaged ] && va=0.$(printf '%02d' "$a") vb=0.$(printf '%02d' "$b")
  start "p$a" "$cfg" "$TORCH matmul --mode $mode --start $t --seconds $WINDOW" "$key=$va" gpufrac.io/gpu=0
  start "p$b" "$cfg" "$TORCH matmul --mode $mode --start $t --seconds $WINDOW" "$key=$vb" gpufrac.io/gpu=0
  wait
  local ma mb
  ma=$(result "p$a" matmuls)
  mb=$(result "p$b" matmuls)
  awk -v a="$ma" -v b="$mb" -v w="$a" -v cfg="$cfg" -v mode="$mode" -v pb="$b" 'BEGIN {
    if (a + b == 0) { printf "FAIL  %s %s %d/%d: no matmul completed\n", cfg, mode, w, pb; exit 1 }
    r = 100 * a / (a + b); d = r - w; if (d < 0) d = -d
    ok = cfg == "unmanaged" || d <= 2
    printf "%s  %s %s %d/%d: %.2f/%.2f by completed matmuls (%d and %d in the window)\n",
      (cfg == "unmanaged" ? "INFO" : (ok ? "PASS" : "FAIL")), (cfg == "managed" ? "compute shares" : "memory only"),
      mode, w, pb, r, 100 - r, a, b; exit !ok }' >"$WORK/line" || STATUS=1
  note "$(cat "$WORK/line")"
}

for mode in async graph; do
  pair managed "$mode" 30 70
  pair managed "$mode" 10 90
done
pair unmanaged async 30 70

# latency [PRIORITY]: the inference loop alone (no PRIORITY) or beside a batch matmul loop.
latency() {
  local prio=${1:-} t
  t=$(awk -v n="$(mono)" 'BEGIN{printf "%.3f", n + 20}')
  start infer managed "$TORCH infer --start $t --seconds $WINDOW" gpufrac.io/compute=10 gpufrac.io/gpu=0 \
    ${prio:+gpufrac.io/priority=$prio}
  [ -n "$prio" ] && start batch managed "$TORCH matmul --mode async --start $t --seconds $WINDOW" \
    gpufrac.io/compute=90 gpufrac.io/gpu=0
  wait
  local where="alone" batch=""
  [ -n "$prio" ] && where="beside a batch loop, priority $prio" && batch="; the batch completed $(result batch matmuls) matmuls"
  note "INFO  inference step $where: p50 $(result infer p50_ms) ms, p99 $(result infer p99_ms) ms, max $(result infer max_ms) ms ($(result infer steps) steps)$batch"
}
latency
latency normal
latency high

# alone WHAT KEY: the loop alone on a share (compute 30) and on the host without gpufrac; the ratio.
alone() {
  local what=$1 key=$2 t with without
  t=$(awk -v n="$(mono)" 'BEGIN{printf "%.3f", n + 20}')
  start "$what" managed "$TORCH $what --start $t --seconds $WINDOW" gpufrac.io/compute=30 gpufrac.io/gpu=0
  wait
  with=$(result "$what" "$key")
  t=$(awk -v n="$(mono)" 'BEGIN{printf "%.3f", n + 20}')
  CUDA_VISIBLE_DEVICES=0 $TORCH "$what" --start "$t" --seconds "$WINDOW" >"$WORK/$what-host.out" 2>&1 || true
  without=$(tail -1 "$WORK/$what-host.out" | jq -r ".$key" 2>/dev/null || echo "?")
  awk -v a="$with" -v b="$without" -v w="$what" -v k="$key" -v s="$WINDOW" 'BEGIN {
    if (b + 0 == 0) { printf "FAIL  %s alone: nothing completed without gpufrac\n", w; exit 1 }
    r = a / b; ok = r >= 0.98
    printf "%s  %s alone on a share (compute 30): %.1f %s/s with gpufrac, %.1f without: x%.3f\n",
      (ok ? "PASS" : "FAIL"), w, a / s, k, b / s, r; exit !ok }' >"$WORK/line" || STATUS=1
  note "$(cat "$WORK/line")"
}
# shares WHAT KEY: the loop at 30/70 (compute shares); the ratio by completed iterations or tokens.
shares() {
  local what=$1 key=$2 t
  t=$(awk -v n="$(mono)" 'BEGIN{printf "%.3f", n + 20}')
  start "$what-30" managed "$TORCH $what --start $t --seconds $WINDOW" gpufrac.io/compute=30 gpufrac.io/gpu=0
  start "$what-70" managed "$TORCH $what --start $t --seconds $WINDOW" gpufrac.io/compute=70 gpufrac.io/gpu=0
  wait
  awk -v a="$(result "$what-30" "$key")" -v b="$(result "$what-70" "$key")" -v w="$what" -v k="$key" 'BEGIN {
    if (a + b == 0) { printf "FAIL  %s 30/70: nothing completed\n", w; exit 1 }
    r = 100 * a / (a + b); d = r - 30; if (d < 0) d = -d; ok = d <= 2
    printf "%s  %s 30/70: %.2f/%.2f by completed %s (%d and %d in the window)\n", (ok ? "PASS" : "FAIL"), w, r,
      100 - r, k, a, b; exit !ok }' >"$WORK/line" || STATUS=1
  note "$(cat "$WORK/line")"
}
alone train iterations
alone decode tokens
shares train iterations
shares decode tokens

{
  echo "gpufrac compute shares on $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader -i 0), $(date '+%Y-%m-%d %H:%M:%S')"
  printf '%s\n' "${SUMMARY[@]}"
} | tee "$WORK/summary.txt" >/dev/null
echo "summary: $WORK/summary.txt"
exit "$STATUS"
