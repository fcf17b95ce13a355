#!/bin/bash
# gpufrac info on every shipped machine (table and JSON), and a clear error without a driver.
source "$(dirname "$0")/lib.sh"
e2e_tmp
need_cmd jq

for m in "$MACHINES"/*.yaml; do
  run "$GPUFRAC" info --machine "$m"
  assert_eq "$RC" 0 "info $m"
  assert_contains "$OUT" "GPU  NAME" "GPU table for $m"
  assert_contains "$OUT" "Control nodes: /dev/nvidiactl 195:255" "control nodes for $m"
  if grep -q "instances:" "$m"; then assert_contains "$OUT" "MIG instances" "MIG table for $m"; fi
  if grep -q "profiles:" "$m"; then assert_contains "$OUT" "MIG profiles of GPU 0" "profiles for $m"; fi
  gpus=$(grep -c "^  - name:" "$m")
  run "$GPUFRAC" info --json --machine "$m"
  assert_eq "$RC" 0 "info --json $m"
  assert_eq "$(jq '.gpus | length' <<<"$OUT")" "$gpus" "GPU count in JSON for $m"
done

# The cache the hook reads: written by --refresh under the configured state dir.
e2e_config a100-80gb-mig.yaml
run "$GPUFRAC" info --refresh
assert_eq "$RC" 0 "info --refresh"
assert_eq "$(jq -r '.gpus[0].mig.instances[0].profile' "$E2E_TMP/state/inventory.json")" "3g.40gb" "cached inventory"

# No driver library: one line naming it and suggesting --machine, exit 2.
if ! ldconfig -p | grep -q libnvidia-ml.so.1; then
  unset GPUFRAC_CONFIG
  echo "nvml: {backend: nvml}" >"$E2E_TMP/real.yaml"
  run "$GPUFRAC" --config "$E2E_TMP/real.yaml" info
  assert_eq "$RC" 2 "exit code without a driver"
  assert_contains "$OUT" "gpufrac: NVIDIA driver library libnvidia-ml.so.1 was not found" "missing-driver message"
  assert_contains "$OUT" "--machine" "suggests --machine"
  assert_eq "$(printf '%s\n' "$OUT" | wc -l)" 1 "one line"
fi
finish
