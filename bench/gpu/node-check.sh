#!/bin/bash
# Node check for a machine with a real NVIDIA driver (run as root, from a built tree): a container
# from a plain busybox rootfs (glibc and a CUDA program, no driver file) started through runc with
# gpufrac-hook and through gpufrac-runtime, each with a 0.25 share of GPU 0. Inside, nvidia-smi (the
# host's, mounted by gpufrac) shows the share as the total, the loader cache lists libcuda.so.1 and
# the allocation loop stops at the limit. On a cgroup-v2-only host the hook path is checked twice:
# without device rules it must refuse in one line (a hook cannot grant devices there), and with the
# rules a GPU-configured runtime writes it must work. Reads GPU state only; changes no GPU setting. GPUFRAC_NODE_CHECK_SIMULATED=1 runs the same on a simulated node
# (ctest does, so the script cannot rot on machines without a GPU).
# Usage: bench/gpu/node-check.sh [build-dir]
set -euo pipefail
SRC=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=$(realpath "${1:-$SRC/build}")
BIN=$BUILD/bin
die() { echo "gpufrac node-check: $*" >&2; exit 2; }
for tool in runc jq ldd; do command -v "$tool" >/dev/null || die "$tool is not installed"; done
for f in gpufrac gpufrac-hook gpufrac-runtime libgpufrac-limits.so alloc_until_limit; do
  [ -e "$BIN/$f" ] || die "$BIN/$f is missing; build the tree first (cmake --build $BUILD)"
done
WORK=$(mktemp -d /tmp/gpufrac-node-check.XXXXXX)
IDS=()
cleanup() {
  local rc=$? id
  for id in "${IDS[@]}"; do runc delete -f "$id" >/dev/null 2>&1 || true; done
  if [ "$rc" != 0 ] && [ -s "$WORK/gpufrac.log" ]; then
    echo "gpufrac's log (last 30 lines):" >&2
    tail -30 "$WORK/gpufrac.log" >&2
  fi
  rm -rf "$WORK"
}
trap cleanup EXIT
if [ "${GPUFRAC_NODE_CHECK_SIMULATED:-0}" = 1 ]; then
  ROOT=$WORK/root
  NVML="nvml: {backend: simulated, machine: $SRC/nvml/machines/a100-40gb-x1.yaml}"
  "$BIN/gpufrac" simulate init-root --machine "$SRC/nvml/machines/a100-40gb-x1.yaml" --root "$ROOT" \
    --driver-kit "$BUILD/fakes/driver-kit" >/dev/null
else
  command -v nvidia-smi >/dev/null || die "no nvidia-smi: not a GPU node (GPUFRAC_NODE_CHECK_SIMULATED=1 for a simulated one)"
  ROOT=/
  NVML="nvml: {backend: nvml}"
fi
cat >"$WORK/config.yaml" <<YAML
state-dir: $WORK/state
host-root: $ROOT
$NVML
shim: {path: $BIN/libgpufrac-limits.so}
hook: {path: $BIN/gpufrac-hook}
cli: {path: $BIN/gpufrac}
log: {target: file, file: $WORK/gpufrac.log, level: debug}
YAML
export GPUFRAC_CONFIG=$WORK/config.yaml
"$BIN/gpufrac" info --refresh >/dev/null
INFO=$("$BIN/gpufrac" info --json)
echo "node: $(jq -r '.gpus[0].name' <<<"$INFO"), driver $(jq -r '.driver_version' <<<"$INFO"),"\
  "$(jq '.driver.files | length' <<<"$INFO") driver files to inject"
[ "$(jq '.driver.files | length' <<<"$INFO")" -gt 0 ] || die "gpufrac found no driver files (gpufrac info --json)"

# The rootfs: busybox, glibc as any image has it, the CUDA program; never a driver library.
R=$WORK/rootfs
mkdir -p "$R/bin" "$R/etc" "$R/proc" "$R/sys" "$R/dev" "$R/run" "$R/tmp"
cp /bin/busybox "$R/bin/busybox" 2>/dev/null || die "busybox is not installed"
for a in sh cat grep; do ln -s busybox "$R/bin/$a"; done
cp "$BIN/alloc_until_limit" "$R/bin/"
for elf in "$BIN/alloc_until_limit" "$BIN/libgpufrac-limits.so" "$(command -v nvidia-smi || echo "$BUILD/fakes/driver-kit/bin/nvidia-smi")"; do
  for lib in $(ldd "$elf" 2>/dev/null | grep -o '/[^ ]*' | grep -v -e '/libcuda\.so' -e '/libnvidia-' | sort -u); do
    mkdir -p "$R$(dirname "$lib")" && cp -L "$lib" "$R$lib"
  done
done
CHECK='nvidia-smi --query-gpu=name,memory.total --format=csv,noheader; grep -c libcuda.so.1 /etc/ld.so.cache; alloc_until_limit 256 </dev/null'

# bundle <dir> <hooks: yes|no> [allow]: a 0.25 share in the host PID namespace; `allow` adds
# device rules for every NVIDIA character major (what a runtime configured for GPUs writes).
bundle() {
  mkdir -p "$1"
  (cd "$1" && runc spec)
  local hook="{\"path\":\"$BIN/gpufrac-hook\",\"env\":[\"PATH=/usr/bin:/bin\",\"GPUFRAC_CONFIG=$GPUFRAC_CONFIG\"],\"timeout\":30}"
  jq --arg r "$R" --arg cmd "$CHECK" --argjson hook "$hook" --arg hooks "$2" '
    .root = {path: $r, readonly: true} | .process.terminal = false | .process.args = ["/bin/sh", "-c", $cmd]
    | .annotations = {"gpufrac.io/fraction": "0.25", "gpufrac.io/gpu": "0"}
    | .linux.namespaces |= map(select(.type != "pid"))
    | if $hooks == "yes" then .hooks = {createRuntime: [$hook + {args: ["gpufrac-hook", "createRuntime"]}],
                                         poststop: [$hook + {args: ["gpufrac-hook", "poststop"]}]} else . end
  ' "$1/config.json" >"$1/c.json" && mv "$1/c.json" "$1/config.json"
  [ "${3:-}" = allow ] || return 0
  local majors
  majors=$(awk '$2 ~ /^nvidia/ {print $1}' "$ROOT/proc/devices" | jq -s .)
  jq --argjson m "$majors" '.linux.resources.devices += [$m[] | {allow: true, type: "c", major: ., access: "rwm"}]' \
    "$1/config.json" >"$1/c.json" && mv "$1/c.json" "$1/config.json"
}
STATUS=0
check() {
  local what=$1 out
  shift
  IDS+=("$2")
  out=$("$@" 2>&1) || { echo "FAIL $what: $out"; STATUS=1; return; }
  echo "$what:"
  sed 's/^/  /' <<<"$out"
  grep -q '^allocated .* returned CUDA_ERROR_OUT_OF_MEMORY' <<<"$out" || { echo "FAIL $what: no stop at the limit"; STATUS=1; }
  # nvidia-smi's total (MiB) is the share's limit, which the shim's refusal line names in bytes.
  local smi limit
  smi=$(grep -o '^[^,]*, [0-9]* MiB$' <<<"$out" | grep -o '[0-9]* MiB$' | cut -d' ' -f1)
  limit=$(grep -o 'refused: limit [0-9]*' <<<"$out" | grep -o '[0-9]*$' | head -1)
  if [ -z "$smi" ] || [ -z "$limit" ] || [ $((smi - limit / 1048576)) -lt -1 ] || [ $((smi - limit / 1048576)) -gt 1 ]; then
    echo "FAIL $what: nvidia-smi does not show the share (${smi:-no} MiB, limit ${limit:-unknown} bytes)"
    STATUS=1
  fi
}
if [ "$(stat -fc %T /sys/fs/cgroup)" = cgroup2fs ]; then
  # cgroup v2 only: a hook cannot add device rules, so without the runtime's own it refuses in one line.
  bundle "$WORK/hook-v2" yes
  IDS+=("gpufrac-node-check-hook-v2-$$")
  if out=$(runc run --bundle "$WORK/hook-v2" "gpufrac-node-check-hook-v2-$$" 2>&1); then
    echo "FAIL runc + gpufrac-hook, cgroup v2 without device rules: started"; STATUS=1
  elif grep -q 'gpufrac-hook: this host uses cgroup v2 only' <<<"$out"; then
    echo "runc + gpufrac-hook, cgroup v2 without device rules: refused in one line, as documented"
  else
    echo "FAIL runc + gpufrac-hook, cgroup v2 without device rules: $out"; STATUS=1
  fi
  bundle "$WORK/hook" yes allow
  check "runc + gpufrac-hook (cgroup v2, the runtime's device rules)" runc run --bundle "$WORK/hook" "gpufrac-node-check-hook-$$"
else
  bundle "$WORK/hook" yes
  check "runc + gpufrac-hook" runc run --bundle "$WORK/hook" "gpufrac-node-check-hook-$$"
fi
bundle "$WORK/wrapper" no
check "gpufrac-runtime" "$BIN/gpufrac-runtime" run --bundle "$WORK/wrapper" "gpufrac-node-check-wrapper-$$"
[ "$(jq '.entries | length' "$WORK/state/ledger.json")" = 0 ] || { echo "FAIL: shares left booked"; STATUS=1; }
[ "$STATUS" = 0 ] && echo "node check: passed"
exit "$STATUS"
