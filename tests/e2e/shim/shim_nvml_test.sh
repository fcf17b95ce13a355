#!/bin/bash
# NVML reports the limit: nvmlDeviceGetMemoryInfo and _v2 (version field honoured) on the fake
# libnvidia-ml.so.1, the handle matched to the limit file by its UUID (GPU or MIG); with a burst
# limit, the limit as total and as free what the container may take now.
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/shim_lib.sh"
e2e_tmp
[ -f "$GPUFRAC_FAKES_DIR/libnvidia-ml.so.1" ] || { echo "FAIL: the fake NVML is not built (ninja fake_nvml)"; exit 1; }
fake_nvml_usable || skip "the fake NVML is built with sanitizers"
NVML=$SHIM_BIN/shim_nvml
REAL=$((40536 * MI))
L=$((4 * GI))
export GPUFRAC_FAKE_NVML_MACHINE=$MACHINES/a100-40gb-x1.yaml

run "$NVML"
assert_contains "$OUT" "uuid $GPU0" "the machine's GPU"
assert_contains "$OUT" "v1 total=$REAL free=$REAL used=0 rc=0" "baseline v1"

shim_limits nvml "$GPU0=$L"
shim_run "$NVML"
assert_eq "$RC" 0 "exit"
assert_contains "$OUT" "dlsym nvmlDeviceGetMemoryInfo libgpufrac-limits.so:nvmlDeviceGetMemoryInfo" "dlsym of NVML"
assert_contains "$OUT" "v1 total=$L free=$L used=0 rc=0" "v1 shows the limit"
assert_contains "$OUT" "v2 total=$L reserved=0 free=$L used=0 rc=0" "v2 shows the limit"
assert_contains "$OUT" "v2-bad-version rc=25" "v2 with a wrong version: NVML_ERROR_ARGUMENT_VERSION_MISMATCH"

# Another process of the container holds 1 GiB: NVML in this one sees it.
holder_start alloc cuMemAlloc_v2 "$GI"
shim_run "$NVML"
assert_contains "$OUT" "v1 total=$L free=$((L - GI)) used=$GI rc=0" "v1 with 1 GiB in use"
assert_contains "$OUT" "v2 total=$L reserved=0 free=$((L - GI)) used=$GI rc=0" "v2 with 1 GiB in use"
holder_stop

# A burst limit (docs/architecture.md "Burstable memory"): total is the limit; free is what the
# container may take now, its request less what it uses while no reclaimer lends it more.
shim_limits burst "$GPU0=$((8 * GI))"
echo "burst $GPU0 $((2 * GI))" >>"$GPUFRAC_LIMITS_FILE"
shim_run "$NVML"
assert_contains "$OUT" "v1 total=$((8 * GI)) free=$((2 * GI)) used=0 rc=0" "v1: a burst limit as the total, the request free"
assert_contains "$OUT" "v2 total=$((8 * GI)) reserved=0 free=$((2 * GI)) used=0 rc=0" "v2: the same"
holder_start alloc cuMemAlloc_v2 "$GI"
shim_run "$NVML"
assert_contains "$OUT" "v1 total=$((8 * GI)) free=$GI used=$GI rc=0" "v1: 1 GiB of the 2 GiB request in use"
holder_stop

# A limit above the device reports the device; a device absent from the limit file is untouched.
shim_limits big "$GPU0=$((100 * GI))"
shim_run "$NVML"
assert_contains "$OUT" "v1 total=$REAL free=$REAL used=0 rc=0" "limit above the device"
shim_limits other "$GPU1=$L"
shim_run "$NVML"
assert_contains "$OUT" "v2 total=$REAL reserved=0 free=$REAL used=0 rc=0" "device not in the limit file"

# A MIG device handle is matched by its MIG UUID.
export GPUFRAC_FAKE_NVML_MACHINE=$MACHINES/a100-80gb-mig.yaml
run "$NVML" mig
mig=$(printf '%s\n' "$OUT" | sed -n 's/^uuid //p')
assert_contains "$mig" "MIG-" "first MIG device"
shim_limits mig "$mig=$((2 * GI))"
shim_run "$NVML" mig
assert_contains "$OUT" "v1 total=$((2 * GI)) free=$((2 * GI)) used=0 rc=0" "MIG device limited"
finish
