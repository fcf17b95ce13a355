#!/bin/bash
# The fake libcuda.so.1 itself (tests/fakes/cuda/README.md): its device list, default device,
# error on a malformed list, fixed totals and memory info, without the shim.
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/shim_lib.sh"
e2e_tmp
unset GPUFRAC_LIMITS_FILE

run "$PROBE" -d 2 meminfo alloc cuMemAlloc_v2 $((4 * GI)) meminfo alloc cuMemAlloc_v2 $((7 * GI)) totalmem 0
assert_eq "$OUT" "meminfo free=$((10 * GI)) total=$((10 * GI)) rc=0
alloc cuMemAlloc_v2 $((4 * GI)) rc=0
meminfo free=$((6 * GI)) total=$((10 * GI)) rc=0
alloc cuMemAlloc_v2 $((7 * GI)) rc=2
totalmem $((40 * GI)) rc=0" "device 2 is the 10 GiB MIG instance"

GPUFRAC_FAKE_CUDA_DEVICES= run "$PROBE" meminfo
assert_eq "$RC" 3 "no devices"
unset GPUFRAC_FAKE_CUDA_DEVICES
run "$PROBE" meminfo
assert_eq "$OUT" "meminfo free=$((40536 * MI)) total=$((40536 * MI)) rc=0" "default: the a100-40gb-x1 GPU"
GPUFRAC_FAKE_CUDA_DEVICES="GPU-1234=1Gi" run "$PROBE" meminfo
assert_eq "$RC" 3 "malformed list"
assert_contains "$OUT" 'fake libcuda: GPUFRAC_FAKE_CUDA_DEVICES: bad entry "GPU-1234=1Gi"; accepted: GPU-<uuid>=<bytes>[,MIG-<uuid>=<bytes>...], at most 32' \
  "message"
finish
