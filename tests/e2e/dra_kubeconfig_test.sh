#!/bin/bash
# gpufrac-dra's connection to the API server and its quarter shares, with no container engine: the
# real binary against the harness of tests/e2e/dra/ (its API server over TLS with a test CA made
# here by openssl, verifying client certificates) on a simulated H100-80GB not in MIG mode.
# Kubeconfigs in every form the plugin accepts connect; the ones that cannot work stop it before it
# registers, with one line; quarters and eighths of the GPU are placed and prepared. Scenarios:
# tests/e2e/dra/kubeconfig_scenarios.py.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/containers.sh"
source "$(dirname "$0")/dra/dra_lib.sh"
need_root
need_cmd openssl
dra_need_harness
e2e_tmp
e2e_on_exit() { e2e_kill_tmp_processes; }
# The shipped H100-80GB machines are in MIG mode: the same GPU with MIG mode off.
mkdir -p "$E2E_TMP/machines" "$E2E_TMP/cdi"
sed 's/enabled: true/enabled: false/' "$MACHINES/h100-80gb-mig-empty.yaml" >"$E2E_TMP/machines/h100-80gb-x1.yaml"
MACHINES=$E2E_TMP/machines
e2e_gpu_config h100-80gb-x1.yaml
export DRA_CDI_DIR=$E2E_TMP/cdi
dra_scenarios kubeconfig_scenarios.py
finish
