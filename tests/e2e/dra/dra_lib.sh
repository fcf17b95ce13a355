# Shared by the tests/e2e/dra*_test.sh scripts (sourced after lib.sh and containers.sh): the
# harness's needs, the cleanup of the CDI specs gpufrac-dra wrote, and the run of one scenario file.

# Skips unless the kubelet and API server harness (python3 grpc, protoc) and gpufrac-dra are here.
dra_need_harness() {
  need_cmd protoc
  PYTHON=/usr/bin/python3
  "$PYTHON" -c 'import grpc, google.protobuf' 2>/dev/null || skip "needs python3-grpcio and python3-protobuf"
  [ -x "$BIN_DIR/gpufrac-dra" ] || skip "gpufrac-dra was not built"
}

# The claims' CDI specs in /var/run/cdi (podman 4.3.1 reads no other directory) that this run
# wrote: those of the ledger's DRA bookings, and any that names this run's directory.
dra_remove_specs() {
  if [ -f "$E2E_TMP/state/ledger.json" ]; then
    for uid in $(jq -r '.entries[] | select(.source == "dra") | .container_id' "$E2E_TMP/state/ledger.json"); do
      rm -f "/var/run/cdi/k8s.gpufrac.io-gpu_$uid.yaml"
    done
  fi
  grep -l "$E2E_TMP" /var/run/cdi/k8s.gpufrac.io-gpu_*.yaml 2>/dev/null | xargs -r rm -f
}

# Runs tests/e2e/dra/<file>; a failure counts as one.
dra_scenarios() {
  export E2E_TMP BIN_DIR CUDA_CHECK GPUFRAC_CONFIG
  "$PYTHON" "$(dirname "${BASH_SOURCE[0]}")/$1" || E2E_FAILURES=$((E2E_FAILURES + 1))
}

# The plain DRA run on a simulated node: a podman test named <name> over machine <machine.yaml>,
# the harness needed, this run's processes and specs removed on exit, a CUDA rootfs for the claims'
# containers, then tests/e2e/dra/<scenarios.py>.
dra_podman_run() {
  e2e_podman_test "$1"
  dra_need_harness
  e2e_on_exit() {
    e2e_kill_tmp_processes
    dra_remove_specs
  }
  e2e_gpu_config "$2"
  mkdir -p "$E2E_TMP/hooks.d"
  make_cuda_rootfs "$E2E_TMP/rootfs"
  dra_scenarios "$3"
}
