#!/bin/bash
# SM sharing through gpufrac-dra (docs/architecture.md "SM sharing"): the real plugin against the
# harness of tests/e2e/dra/ on a simulated one-GPU node reached through the fake NVML; scenarios in
# tests/e2e/dra/sm_scenarios.py (a claim with the opaque parameter computeMode: sm, the refusals).
# A time-share claim after the SM claim ended switches the GPU back at once: the daemon is stopped and
# the compute mode restored by then.
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/../containers.sh"
source "$(dirname "$0")/../dra/dra_lib.sh"
source "$(dirname "$0")/sm_lib.sh"
e2e_podman_test smdra
dra_need_harness
e2e_on_exit() {
  e2e_kill_tmp_processes
  dra_remove_specs
}
sm_config a100-40gb-x1.yaml "compute: {mps-idle-timeout: 0}"
mkdir -p "$E2E_TMP/hooks.d"
make_rootfs "$E2E_TMP/rootfs"
sm_rootfs "$E2E_TMP/rootfs"
dra_scenarios sm_scenarios.py
# What follows checks what the scenarios left: after a failed one it would only repeat that failure
# (the EXIT trap still stops every daemon).
if [ "$E2E_FAILURES" -ne 0 ]; then finish; fi
grep -q "stopped the MPS daemon of GPU 0" "$E2E_TMP/gpufrac.log" || fail "the log says the time share stopped the daemon"
assert_eq "$(compute_mode GPU-894e9a6d-f600-b098-3d59-138988473c2c)" "" "the compute mode is DEFAULT again"
sm_end
finish
