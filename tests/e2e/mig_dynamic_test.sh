#!/bin/bash
# Dynamic MIG with real runc on the simulated H100 (mig.mode dynamic, the real NVML backend over the
# fake libnvidia-ml.so.1 with its state in a file): a container asking gpufrac.io/mig-profile=1g.10gb
# gets a new instance (GPU node, both capability nodes, the instance's memory as its limit) through
# gpufrac-hook -> gpufrac mig provision; once it stops, the instance is idle (status says so) and the
# next request reuses it; the CDI spec lists it. A provisioner killed between the GPU instance and the
# compute instance (GPUFRAC_FAULT=mig-after-gi) leaves nothing half-made after gc or the next request.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/containers.sh"
source "$(dirname "$0")/wrapper.sh"
e2e_runc_test mig
MACHINE=h100-80gb-mig-empty.yaml
e2e_dynamic_mig_config "$MACHINE"
# As on a node where nothing ran nvidia-modprobe -f: no capability node exists yet, and the
# provisioner the hook runs (with the hook's bounding set) makes the new instance's two.
rm -f "$E2E_TMP/root/dev/nvidia-caps/"nvidia-cap*
run "$GPUFRAC" info --refresh
assert_eq "$RC" 0 "inventory through the fake NVML: $OUT"
FAKE_STATE=$GPUFRAC_FAKE_NVML_STATE
gis() { jq '.gpus[0].gpu_instances | length' "$FAKE_STATE"; }
bare_gis() { jq '[.gpus[0].gpu_instances[] | select(.compute_instances | length == 0)] | length' "$FAKE_STATE"; }
minor_of() { awk -v k="$1" '$1 == k {print $2}' "$E2E_TMP/root/proc/driver/nvidia-caps/mig-minors"; }
hex() { printf '%x' "$1"; }

# mig_bundle <dir>: a bundle asking for 1g.10gb whose hooks also get the fake driver's variables
# (a real node needs none: its hooks.d JSON or spec carries PATH and GPUFRAC_CONFIG only).
mig_bundle() {
  make_bundle "$1" 'cat /run/gpufrac/limits; ls /dev/nvidia-caps; for n in /dev/nvidia0 /dev/nvidia-caps/*; do
    stat -c "%n %F %t:%T" "$n"; done' gpufrac.io/mig-profile=1g.10gb
  local fake="[\"GPUFRAC_FAKE_NVML_MACHINE=$GPUFRAC_FAKE_NVML_MACHINE\",\"GPUFRAC_FAKE_NVML_STATE=$FAKE_STATE\"]"
  jq --argjson fake "$fake" '.hooks.createRuntime[0].env += $fake | .hooks.poststop[0].env += $fake' \
    "$1/config.json" >"$1/config.json.new" && mv "$1/config.json.new" "$1/config.json"
}

# 1. The first container: a new 1g.10gb instance, its nodes and its limit.
mig_bundle "$E2E_TMP/b1"
run runc run --bundle "$E2E_TMP/b1" "$P-1"
assert_eq "$RC" 0 "runc run with mig-profile=1g.10gb on a dynamic GPU: $OUT"
MIG=$(grep -o 'device MIG-[0-9a-f-]*' <<<"$OUT" | cut -d' ' -f2)
assert_contains "$MIG" "MIG-" "the limit file names a MIG device"
assert_contains "$OUT" "device $MIG $((9984 * 1024 * 1024))" "the limit is the instance's memory (9984 MiB)"
assert_eq "$(gis)" 1 "one GPU instance was created"
GI=$(jq -r --arg u "$MIG" '.gpus[0].mig.instances[] | select(.uuid == $u) | .gi' "$E2E_TMP/state/inventory.json")
GI_MINOR=$(minor_of "gpu0/gi$GI/access")
CI_MINOR=$(minor_of "gpu0/gi$GI/ci0/access")
assert_contains "$OUT" "/dev/nvidia0 character special file c3:0" "the parent GPU node 195:0"
assert_contains "$OUT" "/dev/nvidia-caps/nvidia-cap$GI_MINOR character special file 1fd:$(hex "$GI_MINOR")" \
  "the GPU instance capability node (509:$GI_MINOR)"
assert_contains "$OUT" "/dev/nvidia-caps/nvidia-cap$CI_MINOR character special file 1fd:$(hex "$CI_MINOR")" \
  "the compute instance capability node (509:$CI_MINOR)"
assert_eq "$(grep -c 'nvidia-cap' <<<"$(grep -v character <<<"$OUT")")" 2 "exactly two capability nodes"
assert_eq "$(find "$E2E_TMP/root/dev/nvidia-caps" -type c -perm 0400 | wc -l)" 2 \
  "the provisioner made the two host capability nodes (mode 0400, as nvidia-modprobe does)"

# 2. After it stopped: no booking, the instance idle (ledger version 2), status shows it.
assert_eq "$(jq '.entries | length' "$E2E_TMP/state/ledger.json")" 0 "the booking is released at poststop"
assert_eq "$(jq -r '.version' "$E2E_TMP/state/ledger.json")" 2 "an idle record makes the ledger version 2"
assert_eq "$(jq -r '.mig_idle[0].uuid' "$E2E_TMP/state/ledger.json")" "$MIG" "the instance is recorded idle"
run "$GPUFRAC" status --json
assert_eq "$(jq -r --arg u "$MIG" '.devices[] | select(.uuid == $u) | .state' <<<"$OUT")" idle "status --json: idle"
run "$GPUFRAC" status
assert_contains "$OUT" "Idle dynamic MIG instances (kept for reuse)" "status lists idle instances"
assert_contains "$OUT" "0    $GI   0   MIG 1g.10gb  ${MIG:0:12}  idle" "status row of the idle instance"

# 3. The CDI spec lists the new instance.
run "$GPUFRAC" cdi list
assert_contains "$OUT" "gpufrac.io/gpu=$MIG" "gpufrac cdi list shows the new MIG instance"
grep -q "$MIG" "$E2E_TMP/cdi/gpufrac.yaml" || fail "the spec file names $MIG"

# 4. The next request reuses it: same MIG UUID, no new GPU instance.
mig_bundle "$E2E_TMP/b2"
run runc run --bundle "$E2E_TMP/b2" "$P-2"
assert_eq "$RC" 0 "second container: $OUT"
assert_contains "$OUT" "device $MIG " "the second container gets the same instance"
assert_eq "$(gis)" 1 "no GPU instance was created for the reuse"
grep -q "reused" "$E2E_TMP/gpufrac.log" || fail "the log says the instance was reused"

# 5. Crash between GPU instance and compute instance: gc undoes it.
run env GPUFRAC_FAULT=mig-after-gi "$GPUFRAC" mig provision --container crash1 \
  --annotation gpufrac.io/mig-profile=3g.40gb
assert_eq "$RC" 137 "the provisioner is killed at mig-after-gi: $OUT"
assert_eq "$(bare_gis)" 1 "a GPU instance without compute instance is left"
test -e "$E2E_TMP/state/mig-$(jq -r '.gpus[0].uuid' "$E2E_TMP/state/inventory.json").journal" ||
  fail "the journal names it"
run "$GPUFRAC" gc
assert_eq "$RC" 0 "gc: $OUT"
assert_contains "$OUT" "destroyed half-made GPU instance" "gc says what it undid"
assert_eq "$(bare_gis)" 0 "gc destroyed the half-made GPU instance"
assert_eq "$(gis)" 1 "the idle 1g.10gb stays"

# 6. The same crash, undone by the next request, which then gets its instance.
run env GPUFRAC_FAULT=mig-after-gi "$GPUFRAC" mig provision --container crash2 \
  --annotation gpufrac.io/mig-profile=3g.40gb
assert_eq "$RC" 137 "killed again: $OUT"
run "$GPUFRAC" mig provision --container next --annotation gpufrac.io/mig-profile=3g.40gb
assert_eq "$RC" 0 "the next request: $OUT"
assert_eq "$(jq -r '.mig.profile' <<<"$OUT")" 3g.40gb "it gets a 3g.40gb"
assert_contains "$(jq -r '.notes[0]' <<<"$OUT")" "destroyed half-made GPU instance" "after undoing the crash"
assert_eq "$(bare_gis)" 0 "nothing half-made is left"
assert_eq "$(gis)" 2 "the idle 1g.10gb and the new 3g.40gb"
assert_eq "$(jq '[.entries[] | select(.container_id | startswith("crash"))] | length' "$E2E_TMP/state/ledger.json")" 0 \
  "the killed provisioners booked nothing"

# 7. gpufrac-runtime provisions too (containerd, Docker): it runs the same provisioner before runc
#    starts, books pending, and the container gets the new instance; at its end the instance is idle.
make_plain_bundle "$E2E_TMP/w1" 'cat /run/gpufrac/limits; ls /dev/nvidia-caps | wc -l' gpufrac.io/mig-profile=2g.20gb
run "$WRAPPER" --log "$E2E_TMP/runc.log" run --bundle "$E2E_TMP/w1" "$P-w1"
assert_eq "$RC" 0 "gpufrac-runtime run with mig-profile=2g.20gb: $OUT"
WMIG=$(grep -o 'device MIG-[0-9a-f-]*' <<<"$OUT" | cut -d' ' -f2)
assert_contains "$WMIG" "MIG-" "the wrapped container's limit file names a MIG device"
assert_eq "$(jq -r --arg u "$WMIG" '.gpus[0].mig.instances[] | select(.uuid == $u) | .profile' \
  "$E2E_TMP/state/inventory.json")" 2g.20gb "it is a new 2g.20gb instance, in the refreshed inventory"
assert_eq "$(gis)" 3 "the wrapper created one GPU instance"
assert_eq "$(jq '[.mig_idle[] | select(.uuid == "'"$WMIG"'")] | length' "$E2E_TMP/state/ledger.json")" 1 \
  "after the container the instance is idle"

# 8. The hook stays static: it never links NVML or the dynamic loader.
run readelf -d "$HOOK"
assert_not_contains "$OUT" "NEEDED" "gpufrac-hook needs no shared library"
finish
