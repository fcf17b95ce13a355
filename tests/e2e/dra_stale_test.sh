#!/bin/bash
# gpufrac-dra on a node whose inventory cache no longer matches it (its simulated machine file
# changes) while a claim holds a share, with no container engine: what an operator sees in the log
# and in the kubelet's answers, and the way back (gpufrac info --refresh). The real binary against
# the harness of tests/e2e/dra/ (stale_scenarios.py).
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/containers.sh"
source "$(dirname "$0")/dra/dra_lib.sh"
need_root
dra_need_harness
e2e_tmp
e2e_on_exit() {
  e2e_kill_tmp_processes
  dra_remove_specs
}
e2e_gpu_config a100-40gb-x1.yaml
cp "$MACHINES/a100-40gb-x1.yaml" "$E2E_TMP/machine.yaml"
sed -i "s|machine: $MACHINES/a100-40gb-x1.yaml|machine: $E2E_TMP/machine.yaml|" "$GPUFRAC_CONFIG"
dra_scenarios stale_scenarios.py
finish
