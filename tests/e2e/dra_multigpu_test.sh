#!/bin/bash
# gpufrac-dra with a two-device claim on a simulated two-GPU node: the real binary against the
# harness of tests/e2e/dra/ (kubelet and API server); both devices booked or neither, each with its
# own limit, seen by a real podman container through the claim's CDI id. Scenarios:
# tests/e2e/dra/multi_gpu_scenarios.py.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/containers.sh"
e2e_podman_test dra-mg
need_cmd protoc
PYTHON=/usr/bin/python3
"$PYTHON" -c 'import grpc, google.protobuf' 2>/dev/null || skip "needs python3-grpcio and python3-protobuf"
[ -x "$BIN_DIR/gpufrac-dra" ] || skip "gpufrac-dra was not built"
e2e_on_exit() {
  e2e_kill_tmp_processes
  if [ -f "$E2E_TMP/state/ledger.json" ]; then
    for uid in $(jq -r '.entries[] | select(.source == "dra") | .container_id' "$E2E_TMP/state/ledger.json"); do
      rm -f "/var/run/cdi/k8s.gpufrac.io-gpu_$uid.yaml"
    done
  fi
  grep -l "$E2E_TMP" /var/run/cdi/k8s.gpufrac.io-gpu_*.yaml 2>/dev/null | xargs -r rm -f
}
e2e_gpu_config a100-40gb-x2.yaml
mkdir -p "$E2E_TMP/hooks.d"
make_cuda_rootfs "$E2E_TMP/rootfs"
export E2E_TMP BIN_DIR CUDA_CHECK GPUFRAC_CONFIG
"$PYTHON" "$(dirname "$0")/dra/multi_gpu_scenarios.py" || E2E_FAILURES=$((E2E_FAILURES + 1))
finish
