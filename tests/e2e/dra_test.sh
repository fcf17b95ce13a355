#!/bin/bash
# gpufrac-dra, the Kubernetes DRA kubelet plugin, end to end: the real binary against the harness
# of tests/e2e/dra/ (a 1.36 kubelet over the plugin's real sockets, with the Kubernetes protos, and
# an in-process API server that checks every body against the resource.k8s.io/v1 schema), on a
# simulated one-GPU node; the CDI ids it returns start real podman containers whose shim enforces
# the claim's share. Scenarios: tests/e2e/dra/scenarios.py. Specs go to /var/run/cdi (podman 4.3.1
# reads no other directory), named by claim uids drawn per run; removed on exit.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/containers.sh"
source "$(dirname "$0")/dra/dra_lib.sh"
e2e_podman_test dra
dra_need_harness
e2e_on_exit() {
  e2e_kill_tmp_processes
  dra_remove_specs
}
e2e_gpu_config a100-40gb-x1.yaml
mkdir -p "$E2E_TMP/hooks.d"
make_cuda_rootfs "$E2E_TMP/rootfs"
dra_scenarios scenarios.py
finish
