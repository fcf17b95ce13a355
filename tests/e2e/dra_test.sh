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
dra_podman_run dra a100-40gb-x1.yaml scenarios.py
finish
