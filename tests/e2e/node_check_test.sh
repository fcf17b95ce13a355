#!/bin/bash
# bench/gpu/node-check.sh (the real-GPU node check) on a simulated node, so it works when a GPU
# machine runs it: both paths (runc + hook, gpufrac-runtime) pass, show the share in nvidia-smi and
# stop the allocation loop at the limit.
source "$(dirname "$0")/lib.sh"
need_root
need_cmd runc
need_cmd jq
run env GPUFRAC_NODE_CHECK_SIMULATED=1 "$GPUFRAC_SOURCE_DIR/bench/gpu/node-check.sh" "$GPUFRAC_BUILD_DIR"
assert_eq "$RC" 0 "node-check on a simulated node: $OUT"
assert_contains "$OUT" "driver 550.54.15, 26 driver files to inject" "it reports what gpufrac injects"
assert_eq "$(grep -c 'NVIDIA A100-SXM4-40GB, 10134 MiB' <<<"$OUT")" 2 "nvidia-smi shows the share on both paths"
assert_eq "$(grep -c 'returned CUDA_ERROR_OUT_OF_MEMORY' <<<"$OUT")" 2 "the loop stops at the limit on both paths"
assert_contains "$OUT" "node check: passed" "the verdict"
finish
