#!/bin/bash
# gpufrac-dra against API server answers that are not what they should be, with no container
# engine: the slice LIST answered cut mid-object, with fields of the wrong types, or announcing
# 1 GiB (over the client's 64 MiB bound). The plugin keeps running and serving the kubelet's
# sockets, logs one line per change of state, and re-creates the slices once the API server answers
# properly. The real binary against the harness of tests/e2e/dra/ (api_scenarios.py).
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/containers.sh"
need_root
need_cmd protoc
PYTHON=/usr/bin/python3
"$PYTHON" -c 'import grpc, google.protobuf' 2>/dev/null || skip "needs python3-grpcio and python3-protobuf"
[ -x "$BIN_DIR/gpufrac-dra" ] || skip "gpufrac-dra was not built"
e2e_tmp
e2e_on_exit() { e2e_kill_tmp_processes; }
e2e_gpu_config a100-40gb-x1.yaml
export E2E_TMP BIN_DIR GPUFRAC_CONFIG
"$PYTHON" "$(dirname "$0")/dra/api_scenarios.py" || E2E_FAILURES=$((E2E_FAILURES + 1))
finish
