#!/bin/bash
# SM sharing on a real NVIDIA GPU (docs/architecture.md "SM sharing"; a lent GPU machine where the GPU's
# compute mode may be changed: gpufrac switches GPU 0 to EXCLUSIVE_PROCESS for its MPS daemon and
# restores the mode it found with gpufrac gc at the end; run as root from a built tree, with runc, jq
# and a CUDA build of PyTorch on the host). Two containers through gpufrac-runtime on GPU 0, each one
# inference-shaped loop of bench/gpu/sm_torch.py (batch-1 forward passes of small fp16 layers, each
# step waited for), the host's own files bound read-only as their root:
#   1. SM shares (GPUFRAC_COMPUTE_MODE=sm) at 30 and at 70, each alone, then both at once: steps/s;
#      each must see its percent (CUDA_MPS_ACTIVE_THREAD_PERCENTAGE) and fewer multiprocessors than
#      the GPU has;
#   2. the same pair as time shares (compute 30 and 70, the shim's arbiter), for comparison.
# PASS when both SM containers ran at once, each with its cap, and the SM pair completed more steps
# than the time-sliced pair; the figures go in bench/README.md "SM sharing".
# Usage: bench/gpu/sm_share_check.sh [build-dir] [OUT_DIR]    OUT_DIR: $OUT, else a temporary directory.
# Environment: PYTHON (default python3), GPUFRAC_BENCH_WINDOW (seconds, default 10).
set -euo pipefail
source "$(dirname "$0")/torch_common.sh"
torch_bench_setup sm_share_check "runc, the GPU's compute mode" "$@"
MODE_BEFORE=$(nvidia-smi --query-gpu=compute_mode --format=csv,noheader -i 0)
IDS=()
cleanup() {
  local id
  for id in "${IDS[@]}"; do runc delete -f "$id" >/dev/null 2>&1 || true; done
  GPUFRAC_CONFIG=$WORK/node/config.yaml "$BIN/gpufrac" gc >/dev/null 2>&1 || true  # the daemon, the mode
}
trap cleanup EXIT

mkdir -p "$WORK/node"
cat >"$WORK/node/config.yaml" <<YAML
state-dir: $WORK/node/state
nvml: {backend: nvml}
shim: {path: $BIN/libgpufrac-limits.so}
hook: {path: $BIN/gpufrac-hook}
cli: {path: $BIN/gpufrac}
log: {target: file, file: $WORK/node/gpufrac.log, level: debug}
compute: {sm-sharing: [0], mps-idle-timeout: 0}
YAML
export GPUFRAC_CONFIG=$WORK/node/config.yaml
"$BIN/gpufrac" info --refresh >/dev/null

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

# start NAME CMD VAR=VALUE...: a container through gpufrac-runtime (Docker's variables) in the host PID namespace.
start() {
  local name=$1 cmd=$2 dir=$WORK/$1
  shift 2
  mkdir -p "$dir"
  (cd "$dir" && runc spec)
  local env
  env=$(printf '%s\n' "HOME=/tmp" "$@" | jq -R . | jq -s .)
  jq --arg r "$R" --arg cmd "$cmd" --argjson env "$env" --argjson m "$ROOT_MOUNTS" '
    .root = {path: $r, readonly: true} | .process.terminal = false | .process.args = ["/bin/sh", "-c", $cmd]
    | .process.env += $env | .mounts += $m
    | .mounts += [{destination: "/tmp", type: "tmpfs", source: "tmpfs", options: ["nosuid","nodev"]}]
    | .linux.namespaces |= map(select(.type != "pid"))
  ' "$dir/config.json" >"$dir/c.json" && mv "$dir/c.json" "$dir/config.json"
  IDS+=("gpufrac-sm-$name-$$")
  "$BIN/gpufrac-runtime" run --bundle "$dir" "gpufrac-sm-$name-$$" >"$WORK/$name.out" 2>&1 &
}
result() { tail -1 "$WORK/$1.out" | jq -r ".$2" 2>/dev/null || echo "?"; }
mono() { "$PYTHON" -c 'import time; print(time.clock_gettime(time.CLOCK_MONOTONIC))'; }
TORCH="$PYTHON $SRC/bench/gpu/sm_torch.py infer --seconds $WINDOW"
SUMMARY=()
note() { SUMMARY+=("$1"); echo "$1"; }
STATUS=0
SMS=$(nvidia-smi --query-gpu=name -i 0 >/dev/null && "$PYTHON" -c 'import torch; print(torch.cuda.get_device_properties(0).multi_processor_count)')

# run_set LABEL NAME:PERCENT:MODE...: the containers at once; prints their steps/s.
run_set() {
  local label=$1 t spec name pct mode
  shift
  t=$(awk -v n="$(mono)" 'BEGIN{printf "%.3f", n + 20}') # CUDA starts well within 20 s
  for spec in "$@"; do
    IFS=: read -r name pct mode <<<"$spec"
    if [ "$mode" = sm ]; then
      start "$name" "$TORCH --start $t" GPUFRAC_COMPUTE="$pct" GPUFRAC_COMPUTE_MODE=sm GPUFRAC_GPU=0
    else
      start "$name" "$TORCH --start $t" GPUFRAC_COMPUTE="$pct" GPUFRAC_GPU=0
    fi
  done
  wait
  local line="INFO  $label:" total=0
  for spec in "$@"; do
    IFS=: read -r name pct mode <<<"$spec"
    line+=" $name $(result "$name" per_s) steps/s (SMs seen $(result "$name" multiprocessors) of $SMS)"
    total=$(awk -v a="$total" -v b="$(result "$name" per_s)" 'BEGIN { print a + b }')
    if [ "$mode" = sm ] && [ "$(result "$name" sm_percent)" != "$pct" ]; then
      note "FAIL  $name did not run with CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=$pct: $(tail -3 "$WORK/$name.out")"
      STATUS=1
    fi
  done
  note "$line; total $total"
  LAST_TOTAL=$total
  "$BIN/gpufrac" gc >/dev/null
}

run_set "SM 30 % alone" sm30a:30:sm
run_set "SM 70 % alone" sm70a:70:sm
run_set "SM 30 % and 70 % at once" sm30:30:sm sm70:70:sm
SM_TOTAL=$LAST_TOTAL
run_set "time shares 30 % and 70 % at once" t30:30:time t70:70:time
TIME_TOTAL=$LAST_TOTAL
if awk -v a="$SM_TOTAL" -v b="$TIME_TOTAL" 'BEGIN { exit !(a > b) }'; then
  note "PASS  the SM pair completed $SM_TOTAL steps/s, the time-sliced pair $TIME_TOTAL"
else
  note "FAIL  the SM pair completed $SM_TOTAL steps/s, not more than the time-sliced pair's $TIME_TOTAL"
  STATUS=1
fi
"$BIN/gpufrac" gc >/dev/null
MODE_AFTER=$(nvidia-smi --query-gpu=compute_mode --format=csv,noheader -i 0)
[ "$MODE_AFTER" = "$MODE_BEFORE" ] || { note "FAIL  GPU 0's compute mode is $MODE_AFTER, was $MODE_BEFORE"; STATUS=1; }

{
  echo "gpufrac SM sharing on $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader -i 0), $(date '+%Y-%m-%d %H:%M:%S')"
  printf '%s\n' "${SUMMARY[@]}"
} | tee "$WORK/summary.txt" >/dev/null
echo "summary: $WORK/summary.txt"
exit "$STATUS"
