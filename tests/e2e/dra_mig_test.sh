#!/bin/bash
# gpufrac-dra on a dynamic-MIG node: the real binary against the harness of tests/e2e/dra/ (kubelet
# and API server), gpufrac's NVML backend over the fake libnvidia-ml with its state in a file, the
# simulated H100 in MIG mode with no instance. Profile devices are published; prepare makes the
# instance at the allocated placement; a real podman container gets it through the claim's CDI id.
# Scenarios: tests/e2e/dra/mig_scenarios.py.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/containers.sh"
e2e_podman_test dra-mig
need_cmd protoc
PYTHON=/usr/bin/python3
"$PYTHON" -c 'import grpc, google.protobuf' 2>/dev/null || skip "needs python3-grpcio and python3-protobuf"
[ -x "$BIN_DIR/gpufrac-dra" ] || skip "gpufrac-dra was not built"
[ -f "$GPUFRAC_FAKES_DIR/libnvidia-ml.so.1" ] || skip "the fake libnvidia-ml.so.1 was not built"
e2e_on_exit() {
  e2e_kill_tmp_processes
  podman ps -aq --filter "name=^$P" | xargs -r podman rm -f >/dev/null 2>&1 || true
  grep -l "$E2E_TMP" /var/run/cdi/k8s.gpufrac.io-gpu_*.yaml 2>/dev/null | xargs -r rm -f
}
MACHINE=h100-80gb-mig-empty.yaml
e2e_dynamic_mig_config "$MACHINE"
mkdir -p "$E2E_TMP/hooks.d"
run "$GPUFRAC" info --refresh
assert_eq "$RC" 0 "inventory through the fake NVML: $OUT"
make_cuda_rootfs "$E2E_TMP/rootfs"
export E2E_TMP BIN_DIR CUDA_CHECK GPUFRAC_CONFIG
"$PYTHON" "$(dirname "$0")/dra/mig_scenarios.py" || E2E_FAILURES=$((E2E_FAILURES + 1))
finish
