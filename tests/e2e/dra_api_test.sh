#!/bin/bash
# gpufrac-dra against API server answers that are not what they should be, with no container
# engine: the slice LIST answered cut mid-object, with fields of the wrong types, or announcing
# 1 GiB (over the client's 64 MiB bound). The plugin keeps running and serving the kubelet's
# sockets, logs one line per change of state, and re-creates the slices once the API server answers
# properly. The real binary against the harness of tests/e2e/dra/ (api_scenarios.py).
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/containers.sh"
source "$(dirname "$0")/dra/dra_lib.sh"
need_root
dra_need_harness
e2e_tmp
e2e_on_exit() { e2e_kill_tmp_processes; }
e2e_gpu_config a100-40gb-x1.yaml
dra_scenarios api_scenarios.py
finish
