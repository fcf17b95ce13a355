#!/bin/bash
# gpufrac-dra on a dynamic-MIG node: the real binary against the harness of tests/e2e/dra/ (kubelet
# and API server), gpufrac's NVML backend over the fake libnvidia-ml with its state in a file, the
# simulated H100 in MIG mode with no instance. Profile devices are published; prepare makes the
# instance at the allocated placement; a real podman container gets it through the claim's CDI id.
# Scenarios: tests/e2e/dra/mig_scenarios.py.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/containers.sh"
source "$(dirname "$0")/dra/dra_lib.sh"
e2e_podman_test dra-mig
dra_need_harness
[ -f "$GPUFRAC_FAKES_DIR/libnvidia-ml.so.1" ] || skip "the fake libnvidia-ml.so.1 was not built"
e2e_on_exit() {
  e2e_kill_tmp_processes
  podman ps -aq --filter "name=^$P" | xargs -r podman rm -f >/dev/null 2>&1 || true
  dra_remove_specs
}
MACHINE=h100-80gb-mig-empty.yaml
e2e_dynamic_mig_config "$MACHINE"
mkdir -p "$E2E_TMP/hooks.d"
run "$GPUFRAC" info --refresh
assert_eq "$RC" 0 "inventory through the fake NVML: $OUT"
make_cuda_rootfs "$E2E_TMP/rootfs"
dra_scenarios mig_scenarios.py
finish
