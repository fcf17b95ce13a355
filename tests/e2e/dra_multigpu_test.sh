#!/bin/bash
# gpufrac-dra with a two-device claim on a simulated two-GPU node: the real binary against the
# harness of tests/e2e/dra/ (kubelet and API server); both devices booked or neither, each with its
# own limit, seen by a real podman container through the claim's CDI id. Scenarios:
# tests/e2e/dra/multi_gpu_scenarios.py.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/containers.sh"
source "$(dirname "$0")/dra/dra_lib.sh"
e2e_podman_test dra-mg
dra_need_harness
e2e_on_exit() {
  e2e_kill_tmp_processes
  dra_remove_specs
}
e2e_gpu_config a100-40gb-x2.yaml
mkdir -p "$E2E_TMP/hooks.d"
make_cuda_rootfs "$E2E_TMP/rootfs"
dra_scenarios multi_gpu_scenarios.py
finish
