#!/bin/bash
# Compute on MIG and compute instances with real runc and gpufrac-hook (dynamic MIG, the real NVML
# backend over the fake libnvidia-ml.so.1 with its state in a file):
#  1. gpufrac.io/compute picks the profile with memory: memory=4Gi compute=40 gets a 3g.40gb on an
#     H100-80GB (not the 1g.10gb memory alone gets) and a 3g.20gb on an A100-40GB; no arbiter weight;
#  2. three 1c.3g.40gb containers share one GPU instance beside a 4g.40gb, each limited to its
#     equal split and booked against the GPU instance's memory; a fourth is refused in one line;
#  3. a released compute instance is idle and reused; the GPU instance stays while one of its
#     compute instances is booked and goes whole when a request needs its slices;
#  4. the provisioner SIGKILLed at every MIG fault point (and at every ledger write, by count)
#     leaves the node consistent after gpufrac gc: no bare GPU instance, no journal, every compute
#     instance it made written down as made, booked or idle, no GPU instance booked past its memory.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/containers.sh"
e2e_runc_test migci
MIB=$((1024 * 1024))

setup() {  # <machine>: a fresh node with dynamic MIG and shares that may reach MIG
  runc_cleanup "$P"
  e2e_reset_state "$E2E_TMP/root" "$E2E_TMP/cdi" "$E2E_TMP/fake-nvml.json"
  e2e_dynamic_mig_config "$1"
  echo "allocation: {mig-serves-fractions: true}" >>"$E2E_TMP/config.yaml"
  run "$GPUFRAC" info --refresh
  assert_eq "$RC" 0 "inventory of $1 through the fake NVML: $OUT"
  FAKE_STATE=$GPUFRAC_FAKE_NVML_STATE
  GPU=$(jq -r '.gpus[0].uuid' "$E2E_TMP/state/inventory.json")
}
gis() { jq '.gpus[0].gpu_instances | length' "$FAKE_STATE"; }
cis() { jq '[.gpus[0].gpu_instances[].compute_instances[]] | length' "$FAKE_STATE"; }
bare_gis() { jq '[.gpus[0].gpu_instances[] | select(.compute_instances | length == 0)] | length' "$FAKE_STATE"; }
ledger_file() {  # the ledger, or an empty one while nothing was ever booked
  [ -e "$E2E_TMP/state/ledger.json" ] || echo '{"version": 1, "entries": []}' >"$E2E_TMP/state/ledger.json"
  echo "$E2E_TMP/state/ledger.json"
}
ledger() { jq -r "$1" "$(ledger_file)"; }

# bundle <name> <annotation k=v...>: prints its limit file; its hooks get the fake driver's variables.
bundle() {
  local dir=$E2E_TMP/$1
  shift
  rm -rf "$dir"
  make_bundle "$dir" 'cat /run/gpufrac/limits' "$@"
  local fake="[\"GPUFRAC_FAKE_NVML_MACHINE=$GPUFRAC_FAKE_NVML_MACHINE\",\"GPUFRAC_FAKE_NVML_STATE=$FAKE_STATE\"]"
  jq --argjson fake "$fake" '.hooks.createRuntime[0].env += $fake | .hooks.poststop[0].env += $fake' \
    "$dir/config.json" >"$dir/config.json.new" && mv "$dir/config.json.new" "$dir/config.json"
}
# create <name>: runc create (the hook books at createRuntime; the container holds it until deleted).
create() { set +e; runc create --bundle "$E2E_TMP/$1" "$P-$1" >"$E2E_TMP/$1.log" 2>&1 </dev/null; RC=$?; set -e; OUT=$(cat "$E2E_TMP/$1.log"); }
limit_of() { cat "$E2E_TMP/state/containers/$P-$1@"*/limits; }
device_of() { limit_of "$1" | awk '$1 == "device" {print $2}'; }

# 1. Compute picks the profile together with memory.
setup h100-80gb-mig-empty.yaml
run "$GPUFRAC" mig plan --annotation gpufrac.io/memory=4Gi
assert_eq "$OUT" "dynamic MIG: new 1g.10gb@0 on GPU 0 (7 usable memory slices left)" "memory alone: a 1g.10gb"
bundle h1 gpufrac.io/memory=4Gi gpufrac.io/compute=40
create h1
assert_eq "$RC" 0 "memory=4Gi compute=40 on an H100: $OUT"
H1=$(device_of h1)
assert_contains "$(limit_of h1)" "device $H1 $((40448 * MIB))" "the limit is the 3g.40gb's memory"
assert_not_contains "$(limit_of h1)" "compute $H1" "no compute line: the MIG device owns its SMs"
run "$GPUFRAC" status --json
assert_eq "$(jq -r --arg u "$H1" '.devices[] | select(.uuid == $u) | "\(.mig.profile) \(.multiprocessors)"' <<<"$OUT")" \
  "3g.40gb 60" "a 3g.40gb: 60 of the 7g's 132 SMs, 40 % needs 53"
assert_eq "$(ledger '.entries[0] | "\(.request) \(.compute // "none")"')" "memory=4Gi compute=40 none" \
  "the booking keeps the request and books no arbiter weight"
runc delete -f "$P-h1"
setup a100-40gb-mig-empty.yaml
bundle a1 gpufrac.io/memory=4Gi gpufrac.io/compute=40
create a1
assert_eq "$RC" 0 "memory=4Gi compute=40 on an A100: $OUT"
assert_contains "$(limit_of a1)" "device $(device_of a1) $((19968 * MIB))" "a 3g.20gb: 42 of the 7g's 98 SMs for 40"
runc delete -f "$P-a1"

# 2. Three compute instances share one GPU instance; a fourth is refused.
setup h100-80gb-mig-empty.yaml
bundle big gpufrac.io/mig-profile=4g.40gb
create big
assert_eq "$RC" 0 "a 4g.40gb holds slices 0-3: $OUT"
for c in c1 c2 c3; do
  bundle $c gpufrac.io/mig-profile=1c.3g.40gb
  create $c
  assert_eq "$RC" 0 "$c asks for 1c.3g.40gb: $OUT"
  assert_contains "$(limit_of $c)" "device $(device_of $c) $((13482 * MIB))" "$c is limited to a third of 40448 MiB"
done
assert_eq "$(printf '%s\n' "$(device_of c1)" "$(device_of c2)" "$(device_of c3)" | sort -u | wc -l)" 3 \
  "three compute instances"
assert_eq "$(gis) $(cis)" "2 4" "in one GPU instance beside the 4g.40gb"
run "$GPUFRAC" status --json
assert_eq "$(jq --arg u "$(device_of c2)" '.devices[] | select(.uuid == $u) | .gpu_instance.reserved' <<<"$OUT")" \
  "$((3 * 13482 * MIB))" "their bookings are counted against the GPU instance's memory"
run "$GPUFRAC" status
assert_contains "$OUT" "1c.3g.40gb x3 (3 booked)" "status shows the GPU instance with its compute instances"
bundle c4 gpufrac.io/mig-profile=1c.3g.40gb
create c4
[ "$RC" != 0 ] || fail "a fourth 1c.3g.40gb is refused"
assert_contains "$OUT" "no MIG instance for mig-profile=1c.3g.40gb fits on a dynamic MIG GPU, even after destroying idle ones: GPU 0: 4g.40gb@0" \
  "one line naming what is in the way"
assert_eq "$(ledger "[.entries[] | select(.container_id == \"$P-c4\")] | length")" 0 "nothing booked for it"

# 3. Release, reuse, lazy destruction.
C2=$(device_of c2)
runc delete -f "$P-c2"
assert_eq "$(ledger "[.mig_idle[] | select(.uuid == \"$C2\")] | length")" 1 "c2's compute instance is idle"
bundle c5 gpufrac.io/mig-profile=1c.3g.40gb
create c5
assert_eq "$RC" 0 "c5: $OUT"
assert_eq "$(device_of c5)" "$C2" "c5 reuses it"
assert_eq "$(cis)" 4 "no compute instance made for the reuse"
for c in c1 c3 c5; do runc delete -f "$P-$c"; done
run "$GPUFRAC" gc
assert_eq "$(gis) $(cis)" "2 4" "idle compute instances are kept for reuse until the timeout"
run "$GPUFRAC" mig provision --container whole --pid $$ --annotation gpufrac.io/mig-profile=3g.40gb
assert_eq "$RC" 0 "a 3g.40gb needs the slices: $OUT"
assert_eq "$(jq '.destroyed[0].uuids | length' <<<"$OUT")" 3 "the split GPU instance goes whole"
assert_eq "$(gis) $(cis)" "2 2" "a 4g.40gb and a 3g.40gb"
assert_eq "$(jq -c '.compute_instances | sort' "$E2E_TMP/state/mig-$GPU.made")" \
  "$(jq -c '[.gpus[0].gpu_instances[].compute_instances[].uuid] | sort' "$FAKE_STATE")" \
  "the made list follows: the destroyed compute instances are gone from it"
runc delete -f "$P-big"

# 4. Killed at every fault point: after gc the node is consistent.
setup h100-80gb-mig-empty.yaml
consistent() {
  run "$GPUFRAC" gc
  assert_eq "$RC" 0 "$1: gc: $OUT"
  [ ! -e "$E2E_TMP/state/mig-$GPU.journal" ] || fail "$1: the journal is left"
  local made=$E2E_TMP/state/mig-$GPU.made
  [ -e "$made" ] || echo '{"compute_instances": []}' >"$made"
  # One jq over the driver's state, the ledger and the made list: GPU instances without compute
  # instance, compute instances not written down as made, neither booked nor idle, and GPU
  # instances booked past their memory (a 3g.40gb's 40448 MiB).
  assert_eq "$(jq -rn --slurpfile f "$FAKE_STATE" --slurpfile l "$(ledger_file)" --slurpfile m "$made" '
      [$f[0].gpus[0].gpu_instances[] | .compute_instances[].uuid] as $cis
      | (($l[0].entries | map(.device_uuid)) + ($l[0].mig_idle // [] | map(.uuid))) as $held
      | "bare \([$f[0].gpus[0].gpu_instances[] | select(.compute_instances | length == 0)] | length)"
        + " unmade \($cis - $m[0].compute_instances | length)"
        + " loose \($cis - $held | length)"
        + " over \([$l[0].entries | group_by(.mig.gi)[] | map(.bytes) | add | select(. > 40448 * 1048576)] | length)"')" \
    "bare 0 unmade 0 loose 0 over 0" "$1: the node is consistent"
}
# reset [booked]: the node as setup left it (the host root kept), optionally with one 1c.3g.40gb
# booked, so that the next request adds a compute instance to its GPU instance.
reset() {
  rm -rf "$FAKE_STATE" "$E2E_TMP/state/ledger"* "$E2E_TMP/state/mig-"*
  run "$GPUFRAC" info --refresh
  if [ "${1:-}" = booked ]; then
    run "$GPUFRAC" mig provision --container first --pid $$ --annotation gpufrac.io/mig-profile=1c.3g.40gb
    assert_eq "$RC" 0 "the first compute instance: $OUT"
  fi
}
# kill_at <point> <container>: the provisioner killed there (137), or through (0).
kill_at() {
  run env GPUFRAC_FAULT=$1 "$GPUFRAC" mig provision --container "$2" --pid $$ \
    --annotation gpufrac.io/mig-profile=1c.3g.40gb
}
reset
kill_at mig-after-gi k
assert_eq "$RC" 137 "killed between the GPU instance and its compute instance: $OUT"
consistent mig-after-gi
for way in new booked; do
  reset $way
  kill_at mig-after-ci k
  assert_eq "$RC" 137 "killed after making the compute instance ($way GPU instance): $OUT"
  consistent "mig-after-ci ($way)"
  # Every ledger transaction of the provisioner, by count, until it gets through.
  for point in ledger-after-lock ledger-after-temp-write ledger-before-rename; do
    killed=0
    for at in 1 2 3 4 5 6 7 8; do
      reset $way
      kill_at "$point@$at" k
      [ "$RC" = 0 ] && break
      assert_eq "$RC" 137 "killed at $point@$at ($way): $OUT"
      assert_eq "$(ledger '[.entries[] | select(.container_id == "k")] | length')" 0 "$point@$at: k has no booking"
      consistent "$point@$at ($way)"
      killed=$((killed + 1))
    done
    [ "$RC" = 0 ] || fail "$point ($way): still killed after 8"
    [ "$killed" -gt 0 ] || fail "$point ($way): never reached"
    echo "$way GPU instance: killed at $point $killed times before the provisioner got through"
  done
done
kill_at none last
assert_eq "$RC" 0 "after the kills a request is served: $OUT"
consistent "at the end"
finish
