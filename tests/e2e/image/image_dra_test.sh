#!/bin/bash
# gpufrac-dra from the image, as the rendered dra overlay's DaemonSet starts it (translated to
# podman run), in-cluster against the harness's API server enforcing the rendered RBAC and its
# kubelet, on a simulated A100-40GB: waits for the node's ready file (one line; one line for
# another version), then registers, publishes, prepares quarter claims, and a podman container
# with a claim's CDI device gets its share. Scenarios: tests/e2e/dra/image_scenarios.py.
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/../containers.sh"
source "$(dirname "$0")/../dra/dra_lib.sh"
source "$(dirname "$0")/image_lib.sh"
e2e_podman_test image_dra
dra_need_harness
"$PYTHON" -c 'import yaml' 2>/dev/null || skip "needs python3-yaml"
# The node's root the DaemonSet's hostPaths are rebased under: short, as a pod uid in a socket's
# name leaves little of the 107 characters a Unix socket's path may have.
HOST_ROOT=$(mktemp -d /tmp/gfi.XXXXXX)
e2e_on_exit() {
  podman rm -f "$P-dra" >/dev/null 2>&1 || true
  e2e_kill_tmp_processes
  dra_remove_specs
  grep -l "$HOST_ROOT/" /var/run/cdi/k8s.gpufrac.io-gpu_*.yaml 2>/dev/null | xargs -r rm -f
  rm -rf "$HOST_ROOT"
}
image_ensure
e2e_gpu_config a100-40gb-x1.yaml
mkdir -p "$E2E_TMP/hooks.d" "$HOST_ROOT/run/gpufrac"
make_cuda_rootfs "$E2E_TMP/rootfs"
image_render overlays/dra "$E2E_TMP/dra.yaml"
# The plugin's config (the ConfigMap's file in the test): the simulated node, the state where the
# DaemonSet's /run/gpufrac hostPath lands, the log on stderr (the pod's log).
cat >"$E2E_TMP/plugin-config.yaml" <<EOF2
state-dir: $HOST_ROOT/run/gpufrac
host-root: $E2E_TMP/root
nvml: {backend: simulated, machine: $MACHINES/a100-40gb-x1.yaml}
log: {target: stderr, level: info}
shim: {path: $SHIM}
hook: {path: $HOOK}
cli: {path: $GPUFRAC}
EOF2
export IMAGE IMAGE_VERSION HOST_ROOT CONTAINER_PREFIX=$P PLUGIN_CONFIG=$E2E_TMP/plugin-config.yaml
dra_scenarios image_scenarios.py
finish
