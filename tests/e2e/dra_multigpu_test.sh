#!/bin/bash
# gpufrac-dra with a two-device claim on a simulated two-GPU node: the real binary against the
# harness of tests/e2e/dra/ (kubelet and API server); both devices booked or neither, each with its
# own limit, seen by a real podman container through the claim's CDI id. Scenarios:
# tests/e2e/dra/multi_gpu_scenarios.py.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/containers.sh"
source "$(dirname "$0")/dra/dra_lib.sh"
dra_podman_run dra-mg a100-40gb-x2.yaml multi_gpu_scenarios.py
finish
