#!/bin/bash
# The gpufrac story on this node, under a temporary root that is removed at the end (run as root):
#   1. the node's GPUs (gpufrac info)                 4. a fifth 0.25 share is refused
#   2. the CDI spec (gpufrac cdi generate)            5. a CUDA program stops at its limit
#   3. four containers with gpufrac.io/fraction=0.25  6. gpufrac status: shares and live usage
#   7. clean up                                       8. a burst and its reclaim (gpufrac.io/memory-limit
#      above the request), in gpufrac status
#   9. (a simulated node) two busy containers with gpufrac.io/compute 30 and 70, and gpufrac status
#      with what each got (ACHIEVED)
# started with runc and gpufrac-hook. Without an NVIDIA driver it runs on a simulated A100-40GB
# with a simulated driver install (gpufrac-hook mounts its libraries into the containers, as it
# mounts the real driver's on a GPU node); with one, on GPU 0 of the real node.
# Binaries come from $GPUFRAC_BIN_DIR (e.g. /usr/bin) or ${BUILD_DIR:-build}/bin.
set -euo pipefail
cd "$(dirname "$0")/.."
SRC=$PWD
BUILD=$(realpath "${BUILD_DIR:-build}")
BIN=${GPUFRAC_BIN_DIR:-$BUILD/bin}
SHIM=${GPUFRAC_SHIM_DIR:-$BUILD/bin}/libgpufrac-limits.so
GPUFRAC=$BIN/gpufrac
PROGRAM=$BUILD/bin/alloc_until_limit
BUSY=$BUILD/bin/busy_loop
DEMO=$(mktemp -d /tmp/gpufrac-demo.XXXXXX)
IDS=()

cleanup() {
  local id
  for id in "${IDS[@]}"; do runc delete -f "$id" >/dev/null 2>&1 || true; done
  # The tmpfs gpufrac mounted under the demo's state directories (a GPU's compute arbiter, a
  # container's own directory) that no gc removed.
  awk -v t="$DEMO/" 'index($2, t) == 1 { print $2 }' /proc/self/mounts | sort -r |
    while read -r m; do umount -l "$m" 2>/dev/null || true; done
  rm -rf "$DEMO"
}
trap cleanup EXIT
if [ -t 1 ]; then BOLD=$'\033[1m' PLAIN=$'\033[0m'; else BOLD= PLAIN=; fi
step() { printf '\n%s== %s%s\n' "$BOLD" "$*" "$PLAIN"; }
show() { printf '$ %s\n' "$*"; "$@"; }

# --- the node: a real driver, or a simulated machine ------------------------------------------
if "$GPUFRAC" --config /dev/null info >/dev/null 2>&1; then
  MODE=real
  DRIVER_LIBS=$(dirname "$(ldconfig -p | awk '/libcuda.so.1 .*x86-64/ { print $NF; exit }')")
  NVML="nvml: {backend: nvml}"
  ROOT=/
else
  MODE=simulated
  DRIVER_LIBS=$BUILD/fakes/driver-kit/lib
  NVML="nvml: {backend: simulated, machine: $SRC/nvml/machines/a100-40gb-x1.yaml}"
  ROOT=$DEMO/root
fi
cat >"$DEMO/config.yaml" <<YAML
state-dir: $DEMO/state
host-root: $ROOT
$NVML
shim: {path: $SHIM}
hook: {path: $BIN/gpufrac-hook}
cli: {path: $GPUFRAC}
log: {target: file, file: $DEMO/gpufrac.log}
cdi: {output: $DEMO/cdi/gpufrac.yaml, spec-dirs: [$DEMO/cdi]}
YAML
export GPUFRAC_CONFIG=$DEMO/config.yaml
if [ "$MODE" = simulated ]; then
  echo "No NVIDIA driver on this node: the story runs on a simulated A100-SXM4-40GB."
  "$GPUFRAC" simulate init-root --machine "$SRC/nvml/machines/a100-40gb-x1.yaml" --root "$ROOT" \
    --driver-kit "$BUILD/fakes/driver-kit" >/dev/null
  SIMGPU=$DEMO/sim-gpu # the simulated GPU's time, shared by the containers (tests/fakes/cuda/README.md)
  "$BUILD/fakes/fake_gpu_tool" init "$SIMGPU"
fi
source "$SRC/scripts/demo-bundle.sh"

step "1. The node"
show "$GPUFRAC" info
"$GPUFRAC" info --refresh >/dev/null
GPU=$("$GPUFRAC" info --json | jq -r '.gpus[0].uuid')
TOTAL=$("$GPUFRAC" info --json | jq -r '.gpus[0].memory_bytes')

step "2. A CDI spec: fractional GPUs by device name for podman, containerd 1.7+, CRI-O, Docker 25+"
show "$GPUFRAC" cdi generate
show "$GPUFRAC" cdi list --spec-dir "$DEMO/cdi"
echo "What gpufrac.io/gpu=0-0.25 gives a container (device nodes, env, hooks; the spec-level edits add"
echo "the control nodes, the shim and its tmpfs):"
jq -c '.devices[] | select(.name == "0-0.25") | .containerEdits | .deviceNodes[], .env[], (.hooks[] | {hookName, args})' \
  <("$GPUFRAC" cdi generate --format json --output - 2>/dev/null)

step "3. Four containers with gpufrac.io/fraction=0.25 (runc + gpufrac-hook, host PID namespace)"
for i in 1 2 3; do start_container "demo-sleeper-$i" "echo \"demo-sleeper-$i sees /run/gpufrac/limits: \$(grep ^device /run/gpufrac/limits)\"; sleep 600"; done
start_container demo-cuda "nvidia-smi --query-gpu=name,memory.total --format=csv; exec /bin/alloc_until_limit 512"
wait_for_line "$DEMO/demo-cuda.log" "^allocated"
for i in 1 2 3; do cat "$DEMO/demo-sleeper-$i.log"; done

step "4. A fifth 0.25 share does not fit: the container is refused, nothing is booked"
make_bundle "$DEMO/demo-fifth" "true"
printf '$ runc run demo-fifth\n'
if runc run --bundle "$DEMO/demo-fifth" demo-fifth >"$DEMO/fifth.log" 2>&1; then
  echo "unexpected: the fifth container started" >&2
  exit 1
fi
grep -o 'gpufrac-hook: .*' "$DEMO/fifth.log" | sed 's/\\n"*$//'

step "5. Inside demo-cuda: nvidia-smi (from the driver gpufrac mounted) shows the share; a CUDA program
     allocates 512 MiB at a time until the shim says no"
cat "$DEMO/demo-cuda.log"

step "6. gpufrac status: the four shares, and what demo-cuda holds right now"
show "$GPUFRAC" status

step "7. Clean up: containers deleted, shares released"
exec 3>&-
for id in "${IDS[@]}"; do runc delete -f "$id" >/dev/null 2>&1 || true; done
IDS=()
show "$GPUFRAC" status

step "8. Burstable memory: demo-burst (request 10Gi, limit 30Gi) borrows what no request holds;
     demo-owner (request 20Gi) needs it back, and the reclaimer stops demo-burst's process"
source "$SRC/scripts/demo-burst.sh"

if [ "$MODE" = simulated ]; then
  step "9. A share of the GPU's time: two containers with gpufrac.io/compute 30 and 70, both busy
     (each launches 500 us kernels without ever waiting; alone, either would take the whole GPU)"
  exec 3<>"$DEMO/stdin"
  start_container demo-busy-30 "exec /bin/busy_loop 13" '{"gpufrac.io/compute": "30"}'
  start_container demo-busy-70 "exec /bin/busy_loop 13" '{"gpufrac.io/compute": "70"}'
  sleep 12
  show "$GPUFRAC" status
  "$GPUFRAC" status --json | jq -r '[.devices[].shares[] | select(.container_id | startswith("demo-busy-"))
    | "\(.container_id) \((.compute_achieved_ppm // 0) / 10000) %"] | "ACHIEVED over the last 10 s: " + join(", ")'
  wait_for_line "$DEMO/demo-busy-70.log" "^busy_loop:"
  wait_for_line "$DEMO/demo-busy-30.log" "^busy_loop:"
  cat "$DEMO/demo-busy-30.log" "$DEMO/demo-busy-70.log"
  exec 3>&-
  for id in "${IDS[@]}"; do runc delete -f "$id" >/dev/null 2>&1 || true; done
  IDS=()
fi
echo
echo "Done ($MODE node; $(printf '%s' "$GPU") had $((TOTAL / 1024 / 1024)) MiB)."
