#!/bin/bash
# Node check for a machine with a real NVIDIA driver (run as root, from a built tree): a container
# from a plain busybox rootfs (glibc and a CUDA program, no driver file) started through runc with
# gpufrac-hook and through gpufrac-runtime, each with a 0.25 share of GPU 0. Inside, nvidia-smi (the
# host's, mounted by gpufrac) shows the share as the total, the loader cache lists libcuda.so.1 and
# the allocation loop stops at the limit. On a cgroup-v2-only host the hook path is checked twice:
# without device rules it must refuse in one line (a hook cannot grant devices there), and with the
# rules a GPU-configured runtime writes it must work. It says which memory-limit path the node
# takes (gpufrac info): on driver r615+ with cgroup v2 the driver's per-cgroup limit, and then
# checks it too: a created container's cgroup has the driver's hard limit = its share, and none is
# left once it is deleted. Reads GPU state only; changes no GPU setting (the per-cgroup limit it
# sets is cleared with its container). GPUFRAC_NODE_CHECK_SIMULATED=1 runs the same on a simulated
# node (ctest does, so the script cannot rot on machines without a GPU); =r615 on the simulated r615
# machine through the fake libnvidia-ml.so.1, whose limits the driver path checks (the host's
# unified cgroup hierarchy as cgroup-root, the hooks given the fake's variables by a script).
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
  # The tmpfs gpufrac mounted under the state directory (each GPU's arbiter, each container's files).
  awk -v t="$WORK/" 'index($2, t) == 1 { print $2 }' /proc/self/mounts | sort -r |
    while read -r m; do umount -l "$m" 2>/dev/null || true; done
  rm -rf "$WORK"
}
trap cleanup EXIT
SIMULATED=${GPUFRAC_NODE_CHECK_SIMULATED:-0} HOOK=$BIN/gpufrac-hook CGROUP_ROOT=/sys/fs/cgroup
if [ "$SIMULATED" = r615 ]; then
  MACHINE=$SRC/nvml/machines/h100-80gb-x3-r615.yaml
  NVML="nvml: {backend: nvml, library: $BUILD/fakes/libnvidia-ml.so.1}"
  [ -e /sys/fs/cgroup/unified/cgroup.controllers ] && CGROUP_ROOT=/sys/fs/cgroup/unified
  export GPUFRAC_FAKE_NVML_MACHINE=$MACHINE GPUFRAC_FAKE_NVML_STATE=$WORK/fake-nvml.json
  export GPUFRAC_FAKE_NVML_CGROUP_ROOT=$CGROUP_ROOT
  HOOK=$WORK/hook.sh
  printf '#!/bin/sh\nexport GPUFRAC_FAKE_NVML_MACHINE=%s GPUFRAC_FAKE_NVML_STATE=%s GPUFRAC_FAKE_NVML_CGROUP_ROOT=%s\nexec %s "$@"\n' \
    "$MACHINE" "$GPUFRAC_FAKE_NVML_STATE" "$CGROUP_ROOT" "$BIN/gpufrac-hook" >"$HOOK"
  chmod 755 "$HOOK"
fi
if [ "$SIMULATED" = 1 ] || [ "$SIMULATED" = r615 ]; then
  ROOT=$WORK/root
  MACHINE=${MACHINE:-$SRC/nvml/machines/a100-40gb-x1.yaml}
  [ "$SIMULATED" = 1 ] && NVML="nvml: {backend: simulated, machine: $MACHINE}"
  "$BIN/gpufrac" simulate init-root --machine "$MACHINE" --root "$ROOT" --driver-kit "$BUILD/fakes/driver-kit" >/dev/null
else
  command -v nvidia-smi >/dev/null || die "no nvidia-smi: not a GPU node (GPUFRAC_NODE_CHECK_SIMULATED=1 for a simulated one)"
  ROOT=/
  NVML="nvml: {backend: nvml}"
fi
cat >"$WORK/config.yaml" <<YAML
state-dir: $WORK/state
host-root: $ROOT
cgroup-root: $CGROUP_ROOT
$NVML
shim: {path: $BIN/libgpufrac-limits.so}
hook: {path: $HOOK}
cli: {path: $BIN/gpufrac}
log: {target: file, file: $WORK/gpufrac.log, level: debug}
YAML
export GPUFRAC_CONFIG=$WORK/config.yaml
"$BIN/gpufrac" info --refresh >/dev/null
INFO=$("$BIN/gpufrac" info --json)
echo "node: $(jq -r '.gpus[0].name' <<<"$INFO"), driver $(jq -r '.driver_version' <<<"$INFO"),"\
  "$(jq '.driver.files | length' <<<"$INFO") driver files to inject"
[ "$(jq '.driver.files | length' <<<"$INFO")" -gt 0 ] || die "gpufrac found no driver files (gpufrac info --json)"
PATH_BY=$(jq -r '.gpus[0].enforcement.by' <<<"$INFO")
echo "memory limits: checking the $PATH_BY path ($(jq -r '.gpus[0].enforcement.why' <<<"$INFO"))"

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
  local hook="{\"path\":\"$HOOK\",\"env\":[\"PATH=/usr/bin:/bin\",\"GPUFRAC_CONFIG=$GPUFRAC_CONFIG\"],\"timeout\":30}"
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
elif [ "$(stat -fc %T "$CGROUP_ROOT")" = cgroup2fs ]; then
  # The r615 simulation on a hybrid host: cgroup-root is its unified hierarchy, so gpufrac sees a
  # cgroup v2 node and leaves the device rules to the runtime's.
  bundle "$WORK/hook" yes allow
  check "runc + gpufrac-hook (cgroup v2, the runtime's device rules)" runc run --bundle "$WORK/hook" "gpufrac-node-check-hook-$$"
else
  bundle "$WORK/hook" yes
  check "runc + gpufrac-hook" runc run --bundle "$WORK/hook" "gpufrac-node-check-hook-$$"
fi
bundle "$WORK/wrapper" no
check "gpufrac-runtime" "$BIN/gpufrac-runtime" run --bundle "$WORK/wrapper" "gpufrac-node-check-wrapper-$$"
# The driver's path (r615+, cgroup v2): set at createRuntime on the container's cgroup, hard = the
# share; cleared at delete (asked again on the cgroup made for the question, as gpufrac clears).
driver_check() {
  local id=gpufrac-node-check-driver-$$ cg bytes hard
  bundle "$WORK/driver" yes "$([ "$(stat -fc %T "$CGROUP_ROOT")" = cgroup2fs ] && echo allow)"
  IDS+=("$id")
  runc create --bundle "$WORK/driver" "$id" </dev/null >"$WORK/driver.log" 2>&1 ||
    { echo "FAIL driver path: runc create: $(cat "$WORK/driver.log")"; STATUS=1; return; }
  cg=$(jq -r --arg id "$id" '.entries[] | select(.container_id == $id) | .driver_limit.cgroup' "$WORK/state/ledger.json")
  bytes=$(jq -r --arg id "$id" '.entries[] | select(.container_id == $id) | .bytes' "$WORK/state/ledger.json")
  hard=$("$BIN/gpufrac" driver-limit show --cgroup "$cg" --json | jq -r '.[0].limit.hard')
  if [ "$hard" = "$bytes" ]; then
    echo "driver path: the driver holds hard $hard bytes (the share) on $cg"
  else
    echo "FAIL driver path: the driver holds ${hard:-nothing} on ${cg:-no cgroup}, the share is $bytes bytes"; STATUS=1
  fi
  runc delete -f "$id" >/dev/null 2>&1
  mkdir -p "$cg"
  hard=$("$BIN/gpufrac" driver-limit show --cgroup "$cg" --json | jq -r '.[0].limit')
  rmdir "$cg"
  [ "$hard" = null ] && echo "driver path: no limit left once the container is deleted" ||
    { echo "FAIL driver path: the driver still holds $hard for $cg"; STATUS=1; }
}
[ "$PATH_BY" = driver ] && driver_check
[ "$(jq '.entries | length' "$WORK/state/ledger.json")" = 0 ] || { echo "FAIL: shares left booked"; STATUS=1; }
[ "$STATUS" = 0 ] && echo "node check: passed"
exit "$STATUS"
