#!/bin/bash
# gpufrac-dra with a claim whose opaque configuration for gpufrac.io carries a memoryLimit above
# what it consumes: the real binary against the harness of tests/e2e/dra/ (kubelet and API server),
# the booking (request and limit), the limit file a real podman container sees through the claim's
# CDI id, and one-line refusals. Scenarios: tests/e2e/dra/burst_scenarios.py.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/containers.sh"
source "$(dirname "$0")/dra/dra_lib.sh"
e2e_podman_test dra-burst
dra_need_harness
e2e_on_exit() {
  e2e_kill_tmp_processes
  dra_remove_specs
}
e2e_gpu_config a100-40gb-x1.yaml
mkdir -p "$E2E_TMP/hooks.d"
make_cuda_rootfs "$E2E_TMP/rootfs"
dra_scenarios burst_scenarios.py
finish
