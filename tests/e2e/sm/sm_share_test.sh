#!/bin/bash
# SM sharing with real runc on the simulated two-GPU A100 node (docs/architecture.md "SM sharing"):
# gpufrac-hook and gpufrac-runtime book SM shares (gpufrac.io/compute-mode: sm) through `gpufrac mps
# provision`, which switches an empty GPU to MPS (compute mode EXCLUSIVE_PROCESS, the fake
# nvidia-cuda-mps-control started under the state directory); the containers are MPS clients of it
# with their SM percent and memory; time shares and SM shares never share a GPU; the daemon stops and
# the compute mode comes back once the last SM share has been gone for the idle timeout.
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/../containers.sh"
source "$(dirname "$0")/sm_lib.sh"
e2e_runc_test sm
sm_config a100-40gb-x2.yaml "compute: {mps-idle-timeout: 2}"
WRAPPER=$BIN_DIR/gpufrac-runtime
PROBE='mps_probe alloc 512 launch 3 sleep_1ms; ls /dev/shm; cat /run/gpufrac/limits'

# 1. The hook: the first SM share switches GPU 0 to MPS and starts its daemon; the container is a
#    client with its percent (set by the shim: a hook cannot set the environment) and its memory.
sm_bundle "$E2E_TMP/a" "$PROBE" gpufrac.io/compute=30 gpufrac.io/compute-mode=sm
run runc run --bundle "$E2E_TMP/a" "$P-a"
assert_eq "$RC" 0 "runc run with compute=30 compute-mode=sm: $OUT"
assert_contains "$OUT" "CUDA_MPS_PIPE_DIRECTORY=/run/gpufrac/mps/pipe
CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=30
CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=$GPU0=12160M
cuInit: CUDA_SUCCESS
context: CUDA_SUCCESS" "an MPS client capped at 30 % and 12160 MiB (30 % of 40536 MiB)"
assert_contains "$OUT" "gpufrac: cuMemAlloc_v2 of 536870912 refused: limit 12750684160 on $GPU0, 12348030976 in use by this container" \
  "the shim holds the limit"
assert_contains "$OUT" "alloc: 23 x 512 MiB = 11776 MiB, then CUDA_ERROR_OUT_OF_MEMORY" "the 24th 512 MiB is refused"
assert_contains "$OUT" "launch: 3 ok, then done" "its kernels run"
SERVER=$(mps_ctl "$GPU0" get_server_list)
assert_contains "$OUT" "cuda.shm.$SERVER" "the container's /dev/shm is the server's shm directory"
assert_contains "$OUT" "mps $GPU0 30" "the limit file names the SM share"
assert_not_contains "$OUT" "compute $GPU0" "an SM share has no compute line (no arbiter)"
assert_eq "$(compute_mode "$GPU0")" 3 "GPU 0 is in EXCLUSIVE_PROCESS mode"
assert_eq "$(daemon_field "$GPU0" state)" running "the daemon's record"
DAEMON=$(daemon_field "$GPU0" pid)
assert_eq "$(cat "$(mps_dir "$GPU0")/pipe/nvidia-cuda-mps-control.pid")" "$DAEMON" "the record names the daemon"
assert_eq "$(ledger '.version')" 7 "SM shares make the ledger version 7"
assert_eq "$(ledger '.entries | length')" 0 "the booking is released at poststop"
assert_eq "$(ledger '[.mps[].gpu]')" "[\"$GPU0\"]" "GPU 0 stays in MPS mode (idle) after it"
test -e "$E2E_TMP/state/compute/$GPU0" && fail "an SM share got an arbiter"

finish
