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
  # NVML lists MIG profiles only while MIG mode is on (docs/machines.md), and so does a machine file.
  if grep -q "enabled: true" "$m"; then
    assert_contains "$OUT" "MIG profiles of GPU" "profiles for $m"
  else
    assert_not_contains "$OUT" "MIG profiles of GPU" "no profiles with MIG off for $m"
  fi
  gpus=$(grep -c "^  - name:" "$m")
  run "$GPUFRAC" info --json --machine "$m"
  assert_eq "$RC" 0 "info --json $m"
  assert_eq "$(jq '.gpus | length' <<<"$OUT")" "$gpus" "GPU count in JSON for $m"
done

# Compute instances found on a node (mig-parted's split of two 3g.20gb): each with its SMs.
run "$GPUFRAC" info --machine "$MACHINES/a100-40gb-mig-ci.yaml"
assert_contains "$OUT" "0    2   0   2c.3g.20gb  28   0:4        0:2      19.5 GiB (shared)  MIG-4a6f3c21" \
  "info lists a compute instance with its SMs, placements and shared memory"
assert_contains "$OUT" "1c 14 SMs x3 {0,1,2}, 2c 28 SMs {0}, 3g 42 SMs {0}" "and its profile's compute instances"
run "$GPUFRAC" info --json --machine "$MACHINES/a100-40gb-mig-ci.yaml"
assert_eq "$(jq -c '[.gpus[0].mig.instances[] | [.compute_slices, .ci_start, .multiprocessors]]' <<<"$OUT")" \
  "[[1,0,14],[1,1,14],[1,2,14],[2,0,28],[1,2,14]]" "the JSON carries them"

# The cache the hook reads: written by --refresh under the configured state dir.
e2e_config a100-80gb-mig.yaml
run "$GPUFRAC" info --refresh
assert_eq "$RC" 0 "info --refresh"
assert_eq "$(jq -r '.gpus[0].mig.instances[0].profile' "$E2E_TMP/state/inventory.json")" "3g.40gb" "cached inventory"

# The real backend (dlopen) over the fake libnvidia-ml.so.1 built on the same machine file: the same
# table and the same JSON as --machine, apart from the source line.
FAKE_NVML=${GPUFRAC_FAKES_DIR:-}/libnvidia-ml.so.1
if [ -f "$FAKE_NVML" ]; then
  for machine in a100-80gb-mig.yaml dgx-8gpu-mixed.yaml; do
    rm -rf "$E2E_TMP/root"
    run "$GPUFRAC" simulate init-root --machine "$MACHINES/$machine" --root "$E2E_TMP/root" --no-nodes \
      --driver-kit "$GPUFRAC_FAKES_DIR/driver-kit"
    assert_eq "$RC" 0 "simulated host root for $machine"
    e2e_config "$machine" "nvml: {backend: nvml, library: $FAKE_NVML}"
    sed -i '/backend: simulated/d' "$E2E_TMP/config.yaml"
    run "$GPUFRAC" info --machine "$MACHINES/$machine"
    expected=$OUT
    GPUFRAC_FAKE_NVML_MACHINE=$MACHINES/$machine run "$GPUFRAC" info
    assert_eq "$RC" 0 "info through the fake NVML for $machine"
    assert_eq "$(head -n 1 <<<"$OUT")" "Driver 550.54.15  (nvml:$FAKE_NVML)" "source line through NVML"
    assert_eq "$(tail -n +2 <<<"$OUT")" "$(tail -n +2 <<<"$expected")" "NVML table equals --machine for $machine"
    run "$GPUFRAC" info --json --machine "$MACHINES/$machine"
    expected=$(jq -S 'del(.source, .origin)' <<<"$OUT")  # origins differ by backend, by design
    GPUFRAC_FAKE_NVML_MACHINE=$MACHINES/$machine run "$GPUFRAC" info --json
    assert_eq "$(jq -S 'del(.source, .origin)' <<<"$OUT")" "$expected" "NVML JSON equals --machine for $machine"
  done
  assert_contains "$OUT" '"uuid": "MIG-b6578160-61d1-a063-5b45-747170b303b1"' "MIG UUID read through NVML"
  # A loaded library whose driver is not there (the fake without a machine): one line, exit 2.
  run "$GPUFRAC" info
  assert_eq "$RC" 2 "exit code when NVML cannot initialise"
  assert_contains "$OUT" "gpufrac: NVML could not be initialised through $FAKE_NVML: Driver Not Loaded (9)" "init error"
  assert_eq "$(grep -c '^gpufrac:' <<<"$OUT")" 1 "one gpufrac line"
else
  fail "no fake libnvidia-ml.so.1 at $FAKE_NVML (build the fake_nvml target)"
fi

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
