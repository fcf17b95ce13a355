#!/bin/bash
# What a new operator trips over with real runc containers (issue "the operator's first hour"):
# a misspelt GPUFRAC_* variable or gpufrac.io/ annotation is refused with did-you-mean (by the hook
# and by gpufrac-runtime), or warned about and dropped under requests.unknown: warn; with
# log: {target: stderr} a hook error is printed once; a device node missing under host-root says
# what makes it; and the hook refuses a stale inventory while a share is booked, then takes the new
# machine once nothing is: a simulated machine changed, and a real node (the fake NVML) that lost a
# GPU, which the static hook has `gpufrac info --refresh` rediscover.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/containers.sh"
e2e_runc_test operator
e2e_gpu_config a100-40gb-x2.yaml
WRAPPER=$BIN_DIR/gpufrac-runtime
CONFIG=$E2E_TMP/config.yaml
entries() { jq '.entries | length' "$E2E_TMP/state/ledger.json" 2>/dev/null || echo 0; }
# with_env <bundle> VAR=VALUE...: adds variables to the container's environment.
with_env() {
  local dir=$1 env
  shift
  env=$(printf '%s\n' "$@" | jq -R . | jq -s .)
  jq --argjson env "$env" '.process.env += $env' "$dir/config.json" >"$dir/c.json" && mv "$dir/c.json" "$dir/config.json"
}
# runc create (and the wrapper's, which execs it) hands the container its stdio: a file, never the
# capture, which would wait for the container.
create() { set +e; runc create --bundle "$1" "$2" >"$1.log" 2>&1; RC=$?; set -e; OUT=$(cat "$1.log"); }
wrapper_create() { set +e; "$WRAPPER" create --bundle "$1" "$2" >"$1.log" 2>&1; RC=$?; set -e; OUT=$(cat "$1.log"); }

echo "== a misspelt variable, with no request beside it: refused with did-you-mean"
make_bundle "$E2E_TMP/t1" 'true'
with_env "$E2E_TMP/t1" GPUFRAC_FRACTON=0.25
run runc run --bundle "$E2E_TMP/t1" "$P-t1"
assert_eq "$RC" 1 "GPUFRAC_FRACTON refused"
assert_contains "$OUT" 'gpufrac-hook: \"GPUFRAC_FRACTON\" in the container'"'"'s environment is not a gpufrac request (did you mean GPUFRAC_FRACTION?); use GPUFRAC_FRACTION, GPUFRAC_MEMORY' "the hook's line"
assert_eq "$(entries)" 0 "nothing booked"

echo "== a misspelt annotation beside a good one: refused with did-you-mean"
make_bundle "$E2E_TMP/t2" 'true' gpufrac.io/fraction=0.25 gpufrac.io/prioirty=high
run runc run --bundle "$E2E_TMP/t2" "$P-t2"
assert_eq "$RC" 1 "gpufrac.io/prioirty refused"
assert_contains "$OUT" 'gpufrac-hook: \"gpufrac.io/prioirty\": unknown gpufrac annotation (did you mean gpufrac.io/priority?)' "the hook's line"
assert_eq "$(entries)" 0 "nothing booked"

echo "== gpufrac-runtime refuses the same"
make_plain_bundle "$E2E_TMP/w1" 'true'
with_env "$E2E_TMP/w1" GPUFRAC_FRACTION=0.25 GPUFRAC_COMPUTE_MOD=strict
cp "$E2E_TMP/w1/config.json" "$E2E_TMP/w1.orig.json"
wrapper_create "$E2E_TMP/w1" "$P-w1"
assert_eq "$RC" 1 "the wrapper refuses GPUFRAC_COMPUTE_MOD"
assert_contains "$OUT" 'gpufrac: "GPUFRAC_COMPUTE_MOD" in the container'"'"'s environment is not a gpufrac request (did you mean GPUFRAC_COMPUTE_MODE?)' "the wrapper's line"
cmp -s "$E2E_TMP/w1/config.json" "$E2E_TMP/w1.orig.json" || fail "config.json changed on a refusal"
assert_eq "$(entries)" 0 "nothing booked"

echo "== requests.unknown: warn: a warning in the log, and the container starts without it"
echo "requests: {unknown: warn}" >>"$CONFIG"
make_bundle "$E2E_TMP/t3" 'cat /run/gpufrac/limits' gpufrac.io/fraction=0.25 gpufrac.io/prioirty=high
run runc run --bundle "$E2E_TMP/t3" "$P-t3"
assert_eq "$RC" 0 "starts under warn: $OUT"
assert_contains "$OUT" "device GPU-" "with its share"
assert_contains "$(cat "$E2E_TMP/gpufrac.log")" '"gpufrac.io/prioirty": unknown gpufrac annotation (did you mean gpufrac.io/priority?)' "the warning in the log"
make_bundle "$E2E_TMP/t4" 'test -e /run/gpufrac/limits && echo limited || echo unlimited'
with_env "$E2E_TMP/t4" GPUFRAC_FRACTON=0.25
run runc run --bundle "$E2E_TMP/t4" "$P-t4"
assert_eq "$RC" 0 "a variable typo alone starts under warn: $OUT"
assert_contains "$OUT" "unlimited" "and without a share"
sed -i '/^requests:/d' "$CONFIG"

echo "== log: {target: stderr}: a hook error once"
sed -i 's|^log: .*|log: {target: stderr}|' "$CONFIG"
make_bundle "$E2E_TMP/t5" 'true' gpufrac.io/fraction=1.5
run runc run --bundle "$E2E_TMP/t5" "$P-t5"
assert_eq "$RC" 1 "refused"
assert_eq "$(grep -o 'is out of range' <<<"$OUT" | wc -l)" 1 "the error appears once: $OUT"
make_bundle "$E2E_TMP/t6" 'true'
with_env "$E2E_TMP/t6" GPUFRAC_FRACTON=0.25
run runc run --bundle "$E2E_TMP/t6" "$P-t6"
assert_eq "$(grep -o 'did you mean GPUFRAC_FRACTION' <<<"$OUT" | wc -l)" 1 "the refusal appears once: $OUT"
sed -i "s|^log: .*|log: {target: file, file: $E2E_TMP/gpufrac.log, level: debug}|" "$CONFIG"

echo "== a device node missing under host-root"
mv "$E2E_TMP/root/dev/nvidia0" "$E2E_TMP/nvidia0.away"
make_bundle "$E2E_TMP/t7" 'true' gpufrac.io/fraction=0.25 gpufrac.io/gpu=0
run runc run --bundle "$E2E_TMP/t7" "$P-t7"
assert_eq "$RC" 1 "refused without /dev/nvidia0"
assert_contains "$OUT" "gpufrac-hook: device node $E2E_TMP/root/dev/nvidia0: No such file or directory; host-root $E2E_TMP/root has no /dev/nvidia0 (a simulated node: gpufrac simulate init-root --machine FILE --root ROOT makes it; a GPU node: host-root /, where the driver makes it)" "names host-root and init-root"
assert_eq "$(entries)" 0 "nothing booked"
make_plain_bundle "$E2E_TMP/w3" 'true' gpufrac.io/fraction=0.25 gpufrac.io/gpu=0
cp "$E2E_TMP/w3/config.json" "$E2E_TMP/w3.orig.json"
wrapper_create "$E2E_TMP/w3" "$P-w3"
assert_eq "$RC" 2 "gpufrac-runtime refuses it before runc"
assert_contains "$OUT" "gpufrac: device node $E2E_TMP/root/dev/nvidia0: No such file or directory; host-root $E2E_TMP/root has no /dev/nvidia0 (a simulated node: gpufrac simulate init-root" "the wrapper names host-root and init-root"
cmp -s "$E2E_TMP/w3/config.json" "$E2E_TMP/w3.orig.json" || fail "config.json changed on a refusal"
assert_eq "$(entries)" 0 "nothing booked"
mv "$E2E_TMP/nvidia0.away" "$E2E_TMP/root/dev/nvidia0"

echo "== the machine changes while a share is booked: the hook refuses, then refreshes"
make_bundle "$E2E_TMP/s1" 'sleep 60' gpufrac.io/fraction=0.25
create "$E2E_TMP/s1" "$P-s1"
assert_eq "$RC" 0 "a running share: $OUT"
make_sim_root dgx-8gpu-mixed.yaml
sed -i "s|a100-40gb-x2.yaml|dgx-8gpu-mixed.yaml|" "$CONFIG"
make_bundle "$E2E_TMP/s2" 'true' gpufrac.io/fraction=0.25
run runc run --bundle "$E2E_TMP/s2" "$P-s2"
assert_eq "$RC" 1 "refused on a stale inventory"
assert_contains "$OUT" "gpufrac-hook: the inventory cache $E2E_TMP/state/inventory.json no longer matches this node (the machine file is now $MACHINES/dgx-8gpu-mixed.yaml, was $MACHINES/a100-40gb-x2.yaml); 1 booking holds devices from it, so it was not refreshed: run gpufrac info --refresh" "says what changed"
make_plain_bundle "$E2E_TMP/w2" 'true'
with_env "$E2E_TMP/w2" GPUFRAC_FRACTION=0.25
wrapper_create "$E2E_TMP/w2" "$P-w2"
assert_contains "$OUT" "no longer matches this node" "gpufrac-runtime refuses it too"
runc delete -f "$P-s1" >/dev/null
assert_eq "$(entries)" 0 "the share is released"
make_bundle "$E2E_TMP/s3" 'cat /run/gpufrac/limits' gpufrac.io/fraction=0.25 gpufrac.io/gpu=3
run runc run --bundle "$E2E_TMP/s3" "$P-s3"
assert_eq "$RC" 0 "nothing booked: the hook refreshed the cache and books on the new machine: $OUT"
assert_contains "$OUT" "device GPU-8a98cff7-aeee-75e2-0b21-3a879ff3a1c5" "GPU 3 of the DGX"
assert_eq "$(jq '.gpus | length' "$E2E_TMP/state/inventory.json")" 8 "the cache lists the 8 GPUs"

echo "== a real node (the fake libnvidia-ml.so.1): its GPUs swapped"
# The cache of a two-GPU node, through NVML; then the node has one other GPU (the driver's procfs
# lists it). With a share held the hook refuses naming the GPUs gone and new; with nothing booked it runs
# `gpufrac info --refresh` (it never loads NVML itself) and books on the node as it is.
runc delete -f "$P-s3" >/dev/null 2>&1 || true
e2e_reset_state "$E2E_TMP/root"
sed -i -e "s|^nvml: .*|nvml: {backend: nvml, library: $GPUFRAC_FAKES_DIR/libnvidia-ml.so.1}|" \
  -e "s|^log: .*|log: {target: file, file: $E2E_TMP/gpufrac.log, level: debug}|" "$CONFIG"
export GPUFRAC_FAKE_NVML_MACHINE=$MACHINES/a100-40gb-x2.yaml
make_sim_root a100-40gb-x2.yaml
run "$GPUFRAC" info --refresh
assert_eq "$RC" 0 "info --refresh through NVML: $OUT"
assert_eq "$(jq -c '.origin.gpus' "$E2E_TMP/state/inventory.json")" \
  '["GPU-5ae7c110-fc7e-c29d-ca0b-696c52a0358c","GPU-d7dabd4b-76ee-eb23-0267-a749de0199b5"]' "the cache records the GPUs"
assert_eq "$(jq -r '.origin.driver' "$E2E_TMP/state/inventory.json")" "550.54.15" "and the driver"
# fake_nvml_bundle <dir> <command>: a bundle whose hooks see the fake NVML's machine (tests only).
fake_nvml_bundle() {
  make_bundle "$1" "$2" gpufrac.io/fraction=0.25
  jq --arg m "GPUFRAC_FAKE_NVML_MACHINE=$GPUFRAC_FAKE_NVML_MACHINE" '.hooks.createRuntime[0].env += [$m]' \
    "$1/config.json" >"$1/c.json" && mv "$1/c.json" "$1/config.json"
}
fake_nvml_bundle "$E2E_TMP/r1" 'sleep 60'
create "$E2E_TMP/r1" "$P-r1"
assert_eq "$RC" 0 "a share on the two-GPU node: $OUT"
export GPUFRAC_FAKE_NVML_MACHINE=$MACHINES/a100-40gb-x1.yaml
rm -rf "$E2E_TMP/root"
make_sim_root a100-40gb-x1.yaml
fake_nvml_bundle "$E2E_TMP/r2" 'cat /run/gpufrac/limits'
run runc run --bundle "$E2E_TMP/r2" "$P-r2"
assert_eq "$RC" 1 "refused while a share is held"
assert_contains "$OUT" "gpufrac-hook: the inventory cache $E2E_TMP/state/inventory.json no longer matches this node (GPUs gone: GPU-5ae7c110-fc7e-c29d-ca0b-696c52a0358c, GPU-d7dabd4b-76ee-eb23-0267-a749de0199b5; GPUs new: GPU-894e9a6d-f600-b098-3d59-138988473c2c); 1 booking holds devices from it" "names the GPUs gone and new"
run "$GPUFRAC" status
assert_eq "$RC" 1 "status refuses too"
assert_contains "$OUT" "no longer matches this node (GPUs gone:" "status says what changed"
runc delete -f "$P-r1" >/dev/null
run "$GPUFRAC" status --json
assert_eq "$RC" 0 "nothing booked: status reads the node through NVML: $OUT"
assert_eq "$(jq -r '[.devices[].uuid] | join(" ")' <<<"$OUT")" "GPU-894e9a6d-f600-b098-3d59-138988473c2c" "status shows the new GPU"
assert_eq "$(jq '.gpus | length' "$E2E_TMP/state/inventory.json")" 2 "a reader leaves the cache to the next booking"
run runc run --bundle "$E2E_TMP/r2" "$P-r2"
assert_eq "$RC" 0 "nothing booked: the hook had gpufrac refresh the cache: $OUT"
assert_contains "$OUT" "device GPU-894e9a6d-f600-b098-3d59-138988473c2c 10626269184" "a quarter of the new GPU"
assert_eq "$(jq '.gpus | length' "$E2E_TMP/state/inventory.json")" 1 "the cache lists the one GPU"
assert_contains "$(cat "$E2E_TMP/gpufrac.log")" "the inventory cache no longer matched the node and nothing was booked: refreshed it" "the log says so"
finish
