#!/bin/bash
# bench/gpu/node-check.sh (the real-GPU node check) on a simulated node, so it works when a GPU
# machine runs it: both paths (runc + hook, gpufrac-runtime) pass, show the share in nvidia-smi and
# stop the allocation loop at the limit; it says which memory-limit path it checked: the shim's on the
# r550 machine, the driver's on the r615 one (its limit set on the container's cgroup, none left).
source "$(dirname "$0")/lib.sh"
need_root
need_cmd runc
need_cmd jq
run env GPUFRAC_NODE_CHECK_SIMULATED=1 "$GPUFRAC_SOURCE_DIR/bench/gpu/node-check.sh" "$GPUFRAC_BUILD_DIR"
assert_eq "$RC" 0 "node-check on a simulated node: $OUT"
assert_contains "$OUT" "driver 550.54.15, 26 driver files to inject" "it reports what gpufrac injects"
assert_contains "$OUT" "memory limits: checking the shim path (driver 550.54.15 has no per-cgroup memory limits (r615+))" \
  "it says which memory-limit path it checks"
assert_eq "$(grep -c 'NVIDIA A100-SXM4-40GB, 10134 MiB' <<<"$OUT")" 2 "nvidia-smi shows the share on both paths"
assert_eq "$(grep -c 'returned CUDA_ERROR_OUT_OF_MEMORY' <<<"$OUT")" 2 "the loop stops at the limit on both paths"
assert_contains "$OUT" "node check: passed" "the verdict"
# The r615 machine through the fake NVML (where the host has a cgroup v2 hierarchy): the driver path.
if [ -e /sys/fs/cgroup/cgroup.controllers ] || [ -e /sys/fs/cgroup/unified/cgroup.controllers ]; then
  run env GPUFRAC_NODE_CHECK_SIMULATED=r615 "$GPUFRAC_SOURCE_DIR/bench/gpu/node-check.sh" "$GPUFRAC_BUILD_DIR"
  assert_eq "$RC" 0 "node-check on the simulated r615 machine: $OUT"
  assert_contains "$OUT" "memory limits: checking the driver path (driver 615.20.03, cgroup v2, and the shim)" \
    "it says it checks the driver path"
  assert_contains "$OUT" "driver path: the driver holds hard $((81559 / 4 << 20)) bytes (the share) on " "set at create"
  assert_contains "$OUT" "driver path: no limit left once the container is deleted" "cleared at delete"
  assert_contains "$OUT" "node check: passed" "the verdict on r615"
fi
finish
