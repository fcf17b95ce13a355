#!/bin/bash
# Driver-enforced memory limits (r615) with real runc on the simulated 3x H100 r615 machine: the real
# NVML backend over the fake libnvidia-ml.so.1 (its limits in a file beside its state), the fake
# libcuda enforcing them for the container's cgroup. A static program (no loader: the preloaded shim
# never enters it) stands for what the shim cannot stop.
#  1. a 0.25 share through gpufrac-hook: while it runs the driver holds hard = soft = the share on the
#     container's cgroup, the static program stops at the limit, cuMemGetInfo shows it, status reads
#     the driver's usage; once the container is gone the driver holds nothing for its cgroup;
#  2. gpufrac-runtime, two CDI devices on GPUs 0 and 1: a limit per GPU, each its own value;
#  3. each error code of the call: one line, nothing booked, nothing set; an absent call: the shim;
#  4. a container killed without poststop, a hook SIGKILLed once the limit is set, a helper killed
#     after recording or after setting: nothing set after gc (or at once, by the rollback);
#  5. NVIDIA_GPU_MEMORY_LIMIT: refused by the hook where it disagrees, rewritten by gpufrac-runtime;
#  6. an r580 machine, v1 and hybrid cgroup nodes, enforcement: shim: the shim alone, info says why;
#     enforcement: driver refuses where the driver cannot hold the share.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/containers.sh"
source "$(dirname "$0")/wrapper.sh"
e2e_runc_test drvlimit
STATIC=$GPUFRAC_BUILD_BIN_DIR/alloc_until_limit_static
[ -x "$STATIC" ] || fail "no $STATIC (build the alloc_until_limit_static target)"
# gpufrac's cgroup-root is the unified hierarchy: /sys/fs/cgroup on a cgroup v2 host, the cgroup2
# mount of a hybrid one (runc puts its containers there too): a cgroup v2 node as gpufrac sees it.
if [ -e /sys/fs/cgroup/cgroup.controllers ]; then
  CGROOT=/sys/fs/cgroup
elif [ -e /sys/fs/cgroup/unified/cgroup.controllers ]; then
  CGROOT=/sys/fs/cgroup/unified
else
  skip "no cgroup v2 hierarchy on this host"
fi
MACHINE=h100-80gb-x3-r615.yaml
GPU0=GPU-3f6c1d2e-8a41-4b7c-9e35-0d2a6f18c4b7 GPU1=GPU-a2e95b07-41d3-4c8f-b6e0-5f7d93c2a168
Q=$((81559 / 4 << 20)) H=$((81559 / 2 << 20))   # 0.25 and 0.5 of 81559 MiB
FAKE=$E2E_TMP/fake
mkdir -p "$FAKE"
export GPUFRAC_FAKE_NVML_MACHINE=$MACHINES/$MACHINE GPUFRAC_FAKE_NVML_STATE=$FAKE/nvml.json
export GPUFRAC_FAKE_NVML_CGROUP_ROOT=$CGROOT
LIMITS=$FAKE/nvml.json.limits
# The hooks get the fake driver's variables through this script (a real node's need none).
REAL_HOOK=$HOOK HOOK=$E2E_TMP/hook.sh
printf '#!/bin/sh\nexport GPUFRAC_FAKE_NVML_MACHINE=%s GPUFRAC_FAKE_NVML_STATE=%s GPUFRAC_FAKE_NVML_CGROUP_ROOT=%s\nexec %s "$@"\n' \
  "$GPUFRAC_FAKE_NVML_MACHINE" "$GPUFRAC_FAKE_NVML_STATE" "$CGROOT" "$REAL_HOOK" >"$HOOK"
chmod 755 "$HOOK"
e2e_config "$MACHINE" "cgroup-root: $CGROOT" "shim: {path: $SHIM}" "hook: {path: $HOOK}" "cli: {path: $GPUFRAC}" \
  "driver: {inject: never}"
sed -i 's|^nvml: .*|nvml: {backend: nvml, library: '"$GPUFRAC_FAKES_DIR"'/libnvidia-ml.so.1}|' "$GPUFRAC_CONFIG"
make_sim_root "$MACHINE"
run "$GPUFRAC" info --refresh
assert_eq "$RC" 0 "inventory through the fake NVML: $OUT"
assert_contains "$OUT" "0    driver  driver 615.20.03, cgroup v2, and the shim" "info: GPU 0 is held by the driver"
assert_contains "$OUT" "2    mig     MIG mode: its instances are partitioned in hardware" "info: GPU 2 is in MIG mode"

# with_spec <dir> <jq program>: edits the bundle's config.json.
with_spec() { jq "$2" "$1/config.json" >"$1/config.json.new" && mv "$1/config.json.new" "$1/config.json"; }
# dl_bundle <dir> <cmd> [annotation...]: the static program in a busybox root, the fake driver's state
# bound in, the GPU nodes allowed by the spec (as a cgroup v2 node needs), hooks as make_bundle's.
dl_bundle() {
  make_bundle "$@"
  cp "$STATIC" "$1/rootfs/bin/"
  with_spec "$1" '.process.env += ["GPUFRAC_FAKE_NVML_STATE='"$FAKE"'/nvml.json",
      "GPUFRAC_FAKE_CUDA_DEVICES='"$GPU0"'=81559Mi"]
    | .mounts += [{destination: "'"$FAKE"'", type: "bind", source: "'"$FAKE"'", options: ["rbind", "rw"]}]
    | .linux.resources.devices += [{allow: true, type: "c", major: 195, access: "rwm"},
                                   {allow: true, type: "c", major: 508, access: "rwm"}]'
}
entries() { jq '.entries | length' "$E2E_TMP/state/ledger.json"; }
to_clear() { jq '.limits_to_clear // [] | length' "$E2E_TMP/state/ledger.json"; }
limit_of() { grep -F " /$1" "$LIMITS" 2>/dev/null || true; }
create() { set +e; runc create --bundle "$1" "$2" >"$1.log" 2>&1; RC=$?; set -e; OUT=$(cat "$1.log"); }
STOPPED="allocated 19 x 1024 MiB = 19.0 GiB; the next cuMemAlloc of 1024 MiB returned CUDA_ERROR_OUT_OF_MEMORY"
UNSTOPPED="allocated 79 x 1024 MiB = 79.0 GiB; the next cuMemAlloc of 1024 MiB returned CUDA_ERROR_OUT_OF_MEMORY"

# 1. gpufrac-hook: the limit while the container runs, the static program stopped, nothing after.
dl_bundle "$E2E_TMP/b1" 'alloc_until_limit_static 1024 </dev/null' gpufrac.io/fraction=0.25 gpufrac.io/gpu=0
run runc run --bundle "$E2E_TMP/b1" "$P-1"
assert_eq "$RC" 0 "a 0.25 share through gpufrac-hook: $OUT"
assert_contains "$OUT" "cuMemGetInfo: 19.9 GiB free of 19.9 GiB" "cuMemGetInfo without the shim shows the limit"
assert_contains "$OUT" "$STOPPED" "the static program is stopped at its share by the driver"
assert_eq "$(limit_of "$P-1")" "" "after the container: the driver holds no limit for its cgroup"
assert_eq "$(entries):$(to_clear)" "0:0" "no booking, nothing left to clear"
[ -e "$CGROOT/$P-1" ] && fail "the cgroup made again for clearing is removed again"
dl_bundle "$E2E_TMP/b2" 'sleep 60 | alloc_until_limit_static 1024' gpufrac.io/fraction=0.25 gpufrac.io/gpu=0
create "$E2E_TMP/b2" "$P-2"
assert_eq "$RC" 0 "runc create: $OUT"
assert_eq "$(limit_of "$P-2")" "$GPU0 $Q $Q /$P-2" "set at createRuntime: hard = soft = the share, on its cgroup"
assert_eq "$(jq -c '.entries[0].driver_limit' "$E2E_TMP/state/ledger.json")" \
  "{\"cgroup\":\"$CGROOT/$P-2\",\"soft\":$Q,\"hard\":$Q}" "the ledger entry records it"
runc start "$P-2"
for _ in $(seq 100); do grep -q "^used $GPU0 $((19 << 30))" "$FAKE/nvml.json.usage/"* 2>/dev/null && break; sleep 0.1; done
run "$GPUFRAC" status --json
assert_eq "$(jq -c '.devices[0].shares[0] | [.enforcement, .used_bytes]' <<<"$OUT")" "[\"driver\",$((19 << 30))]" \
  "status: held by the driver, used as the driver counts it (the shim never saw the static program)"
run "$GPUFRAC" status
assert_contains "$OUT" "ENFORCED BY" "status names who holds each share"
run "$GPUFRAC" driver-limit show --cgroup "$CGROOT/$P-2"
assert_eq "$OUT" "GPU 0: soft $Q, hard $Q, used $((19 << 30)) bytes
GPU 1: no limit" "driver-limit show: what the driver holds for the cgroup"
GPUFRAC_FAKE_NVML_FAIL=nvmlDeviceGetMemoryLimits_v1:4 run "$GPUFRAC" driver-limit show --cgroup "$CGROOT/$P-2"
assert_eq "$RC:$OUT" "1:gpufrac: driver memory limit of $GPU0 on $CGROOT/$P-2: nvmlDeviceGetMemoryLimits_v1: Insufficient Permissions (4); the driver refused to read it: run gpufrac as root" \
  "a failed get is one line"
GPUFRAC_FAKE_NVML_FAIL=nvmlDeviceGetMemoryLimits_v1:999 run "$GPUFRAC" status --json
assert_eq "$RC:$(jq -c '.devices[0].shares[0] | [.enforcement, .used_bytes]' <<<"$OUT")" '0:["driver",0]' \
  "status without the driver's answer: the region's usage (the shim saw nothing of the static program)"
runc kill "$P-2" KILL
runc delete -f "$P-2" >/dev/null 2>&1
assert_eq "$(limit_of "$P-2"):$(entries):$(to_clear)" ":0:0" "poststop cleared the limit and released the share"

# 2. gpufrac-runtime, two CDI devices on two GPUs: one limit per GPU, each its own.
make_plain_bundle "$E2E_TMP/w1" "cat $LIMITS; GPUFRAC_FAKE_CUDA_DEVICES=$GPU1=81559Mi alloc_until_limit_static 1024 </dev/null" \
  cdi.k8s.io/a=gpufrac.io/gpu=0-0.25,gpufrac.io/gpu=1-0.5
cp "$STATIC" "$E2E_TMP/w1/rootfs/bin/"
with_spec "$E2E_TMP/w1" '.process.env += ["GPUFRAC_FAKE_NVML_STATE='"$FAKE"'/nvml.json"]
  | .mounts += [{destination: "'"$FAKE"'", type: "bind", source: "'"$FAKE"'", options: ["rbind", "rw"]}]'
run "$WRAPPER" run --bundle "$E2E_TMP/w1" "$P-w1"
assert_eq "$RC" 0 "gpufrac-runtime with two CDI devices: $OUT"
assert_contains "$OUT" "$GPU0 $Q $Q /$P-w1" "GPU 0: its 0.25"
assert_contains "$OUT" "$GPU1 $H $H /$P-w1" "GPU 1: its 0.5"
assert_contains "$OUT" "allocated 39 x 1024 MiB = 39.0 GiB" "the program on GPU 1 stops at that GPU's limit"
assert_eq "$(limit_of "$P-w1"):$(entries):$(to_clear)" ":0:0" "both cleared at poststop"

# 3. Each error code of the call: one line, nothing booked, nothing set. Absent (13): the shim alone.
for code in 2 3 4 17 999; do
  dl_bundle "$E2E_TMP/f$code" 'true' gpufrac.io/fraction=0.25 gpufrac.io/gpu=0
  with_spec "$E2E_TMP/f$code" '.hooks.createRuntime[0].env += ["GPUFRAC_FAKE_NVML_FAIL=nvmlDeviceSetMemoryLimits_v1:'"$code"'"]'
  run runc run --bundle "$E2E_TMP/f$code" "$P-f$code"
  assert_eq "$RC" 1 "error $code refuses the container"
  assert_contains "$OUT" "gpufrac-hook: driver memory limit of $GPU0 on $CGROOT/$P-f$code: nvmlDeviceSetMemoryLimits_v1: " \
    "error $code: the hook's line"
  assert_contains "$OUT" "($code); " "error $code: the code and what to do"
  assert_eq "$(grep -o 'gpufrac-hook: ' <<<"$OUT" | wc -l)" 1 "error $code: one line"
  assert_eq "$(limit_of "$P-f$code"):$(entries):$(to_clear)" ":0:0" "error $code: nothing booked, nothing set"
done
dl_bundle "$E2E_TMP/f13" 'alloc_until_limit_static 1024 </dev/null' gpufrac.io/fraction=0.25 gpufrac.io/gpu=0
with_spec "$E2E_TMP/f13" '.hooks.createRuntime[0].env += ["GPUFRAC_FAKE_NVML_FAIL=nvmlDeviceSetMemoryLimits_v1:13"]'
run runc run --bundle "$E2E_TMP/f13" "$P-f13"
assert_eq "$RC" 0 "an absent call under enforcement: auto starts the container: $OUT"
assert_contains "$OUT" "$UNSTOPPED" "the shim alone: a static program is not stopped"
assert_contains "$(cat "$E2E_TMP/gpufrac.log")" "the shim alone holds the shares" "the log says why"

# 4. Deaths: nothing stays set after gc (or at once, where the hook lives to roll back).
dl_bundle "$E2E_TMP/k1" 'sleep 60' gpufrac.io/fraction=0.25 gpufrac.io/gpu=0
with_spec "$E2E_TMP/k1" 'del(.hooks.poststop)'
create "$E2E_TMP/k1" "$P-k1"
assert_eq "$(limit_of "$P-k1")" "$GPU0 $Q $Q /$P-k1" "set"
runc kill "$P-k1" KILL
runc delete -f "$P-k1" >/dev/null 2>&1
assert_eq "$(limit_of "$P-k1"):$(entries)" "$GPU0 $Q $Q /$P-k1:1" "killed without poststop: the limit outlives the cgroup"
run "$GPUFRAC" gc --dry-run
assert_contains "$OUT" "Would clear the driver limit of $P-k1@p" "gc --dry-run says what gc would clear"
assert_eq "$(limit_of "$P-k1"):$(entries)" "$GPU0 $Q $Q /$P-k1:1" "and changes nothing"
run "$GPUFRAC" gc
assert_eq "$RC" 0 "gc: $OUT"
assert_contains "$OUT" "Cleared the driver limit of $P-k1@p" "gc says what it cleared"
assert_eq "$(limit_of "$P-k1"):$(entries):$(to_clear)" ":0:0" "gc cleared the killed container's limit"
assert_eq "$(jq .version "$E2E_TMP/state/ledger.json")" 1 "no limit left: the ledger is the version older binaries read"
dl_bundle "$E2E_TMP/k2" 'true' gpufrac.io/fraction=0.25 gpufrac.io/gpu=0
with_spec "$E2E_TMP/k2" 'del(.hooks.poststop) | .hooks.createRuntime[0].env += ["GPUFRAC_FAULT=hook-after-driver-limit"]'
run runc run --bundle "$E2E_TMP/k2" "$P-k2"
assert_eq "$RC" 1 "the hook SIGKILLed once the limit is set: $OUT"
assert_eq "$(limit_of "$P-k2"):$(entries)" "$GPU0 $Q $Q /$P-k2:1" "the limit and its booking are left"
run "$GPUFRAC" gc
assert_eq "$(limit_of "$P-k2"):$(entries):$(to_clear)" ":0:0" "nothing set after the next gc"
for point in driver-limit-after-record driver-limit-after-set; do
  dl_bundle "$E2E_TMP/$point" 'true' gpufrac.io/fraction=0.25 gpufrac.io/gpu=0
  with_spec "$E2E_TMP/$point" '.hooks.createRuntime[0].env += ["GPUFRAC_FAULT='"$point"'"]'
  run runc run --bundle "$E2E_TMP/$point" "$P-$point"
  assert_eq "$RC" 1 "$point: refused"
  assert_contains "$OUT" "gpufrac-hook: $GPUFRAC driver-limit set was killed by signal 9" "$point: the hook's line"
  assert_eq "$(limit_of "$P-$point"):$(entries):$(to_clear)" ":0:0" "$point: the rollback cleared it"
done

# 5. NVIDIA_GPU_MEMORY_LIMIT: never two limits.
dl_bundle "$E2E_TMP/n1" 'true' gpufrac.io/fraction=0.25 gpufrac.io/gpu=0
with_spec "$E2E_TMP/n1" '.process.env += ["NVIDIA_GPU_MEMORY_LIMIT=8192"]'
run runc run --bundle "$E2E_TMP/n1" "$P-n1"
assert_eq "$RC" 1 "the hook refuses a disagreeing NVIDIA_GPU_MEMORY_LIMIT"
assert_contains "$OUT" "gpufrac-hook: NVIDIA_GPU_MEMORY_LIMIT=\\\"8192\\\" disagrees with gpufrac's 20389 MiB" "the line"
assert_eq "$(entries):$(to_clear)" "0:0" "nothing booked"
make_plain_bundle "$E2E_TMP/n2" 'echo "limit $NVIDIA_GPU_MEMORY_LIMIT"' gpufrac.io/fraction=0.25 gpufrac.io/gpu=0
with_spec "$E2E_TMP/n2" '.process.env += ["NVIDIA_GPU_MEMORY_LIMIT=8192"]'
run "$WRAPPER" run --bundle "$E2E_TMP/n2" "$P-n2"
assert_eq "$RC" 0 "gpufrac-runtime: $OUT"
assert_contains "$OUT" "limit 20389" "gpufrac-runtime writes gpufrac's value in NVIDIA's variable"

# 6. Where the driver cannot hold the share: the shim alone, and info says why.
sed "s/^driver-version: .*/driver-version: \"580.95.05\"/" "$MACHINES/$MACHINE" >"$E2E_TMP/r580.yaml"
export GPUFRAC_FAKE_NVML_MACHINE=$E2E_TMP/r580.yaml GPUFRAC_FAKE_NVML_STATE=$FAKE/r580.json
printf '#!/bin/sh\nexport GPUFRAC_FAKE_NVML_MACHINE=%s GPUFRAC_FAKE_NVML_STATE=%s\nexec %s "$@"\n' \
  "$GPUFRAC_FAKE_NVML_MACHINE" "$GPUFRAC_FAKE_NVML_STATE" "$REAL_HOOK" >"$HOOK"
run "$GPUFRAC" info --refresh
assert_contains "$OUT" "0    shim  driver 580.95.05 has no per-cgroup memory limits (r615+)" "info on an r580 machine"
dl_bundle "$E2E_TMP/o1" 'alloc_until_limit_static 1024 </dev/null' gpufrac.io/fraction=0.25 gpufrac.io/gpu=0
run runc run --bundle "$E2E_TMP/o1" "$P-o1"
assert_eq "$RC" 0 "r580: the container runs: $OUT"
assert_contains "$OUT" "$UNSTOPPED" "r580: the shim alone"
assert_eq "$(cat "$FAKE/r580.json.limits" 2>/dev/null)" "" "r580: no driver limit was set"
echo "enforcement: driver" >>"$GPUFRAC_CONFIG"
dl_bundle "$E2E_TMP/o2" 'true' gpufrac.io/fraction=0.25 gpufrac.io/gpu=0
run runc run --bundle "$E2E_TMP/o2" "$P-o2"
assert_eq "$RC" 1 "enforcement: driver on r580 refuses the share"
assert_contains "$OUT" "gpufrac-hook: enforcement: driver: GPU 0 cannot hold the share of $P-o2 with the driver: driver 580.95.05 has no per-cgroup memory limits (r615+); set enforcement: auto to let the shim hold it on this node" \
  "one line saying why"
assert_eq "$(entries)" 0 "nothing booked"
sed -i '/^enforcement:/d' "$GPUFRAC_CONFIG"
for layout in v1 hybrid; do
  sed "s|^cgroup-root: .*|cgroup-root: $GPUFRAC_SOURCE_DIR/tests/fixtures/cgroup/$layout|" "$GPUFRAC_CONFIG" >"$E2E_TMP/$layout.yaml"
  GPUFRAC_FAKE_NVML_MACHINE=$MACHINES/$MACHINE run "$GPUFRAC" --config "$E2E_TMP/$layout.yaml" info
  assert_contains "$OUT" "Memory limits (enforcement: auto, $( [ $layout = v1 ] && echo "cgroup v1" || echo "hybrid cgroup v1/v2"))" \
    "info names the $layout layout"
  assert_contains "$OUT" "0    shim  the node uses" "$layout: the shim holds the shares"
done
finish
