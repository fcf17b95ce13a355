#!/bin/bash
# A tenant that rewrites the compute arbiter's queue lanes (issue 43 item 1; docs/design-queue-lanes.md),
# in real runc containers booked through gpufrac-hook on the simulated GPU: a victim (compute 70, an
# asynchronous launch loop of 12 s) beside a container with compute 30 that runs the same loop while
# `arbiter_hostile lanes` tries to write every other slot's lane (read-only to it: EROFS) and keeps
# moving its own slot's vtime behind vclock. The hostile share stays within 35 % of the GPU over 10 s,
# and status names its slot. Failed on layout 2 (every lane in the shared read-write lease file, the
# tool pushed the others' ahead): the victim, pushed behind, waited past its bound and ran
# unarbitrated, the hostile share got about 50 %, and status named the victim's lane.
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/../containers.sh"
source "$(dirname "$0")/compute_lib.sh"
e2e_runc_test lanes
e2e_gpu_config a100-40gb-x2.yaml
unset GPUFRAC_FAKE_CUDA_DEVICES # the injected driver knows the machine's GPUs
read -r GPU0 _ < <(jq -r '[.gpus[].uuid] | join(" ")' <<<"$("$GPUFRAC" info --json)")
ST=$E2E_TMP/state
HOSTILE=$GPUFRAC_BUILD_DIR/tests/compute/arbiter_hostile
sim_gpu

hook_bundle victim "$(synced t async:12)" gpufrac.io/gpu=0 gpufrac.io/compute=70
hook_bundle hostile "arbiter_hostile lanes 13 & $(synced t async:12); wait" gpufrac.io/gpu=0 gpufrac.io/compute=30
add_program "$E2E_TMP/hostile/rootfs" "$HOSTILE" /bin/arbiter_hostile
start victim
start hostile
T0=$(go t 1)
sleep_until $((T0 + 1000000000))
window 10 victim hostile
why=$("$GPUFRAC" status --json | jq -r --arg g "$GPU0" '.devices[] | select(.uuid == $g) | .compute_arbiter_tampered // [] | .[]')
"$GPUFRAC" metrics --textfile "$E2E_TMP" || fail "gpufrac metrics --textfile"
tampering() { grep "^gpufrac_share_compute_arbiter_tampering{.*container_id=\"[^\"]*-$1\"" "$E2E_TMP/gpufrac.prom" | awk '{print $NF}'; }
wait_stopped victim hostile
echo "lanes: $(head -1 "$E2E_TMP/hostile.out") | $(tr '\n' ' ' <<<"$OUT") | status: $why"
assert_contains "$(cat "$E2E_TMP/hostile.out")" "lanes devices=1 others=EROFS" \
  "the tenant rewrote its own lane, and could not open the others' for writing"
assert_le "$(share_of hostile)" 35 "the lane-rewriting compute-30 share's part of the GPU (%)"
assert_contains "$why" "-hostile@" "status names the tampering container's slot"
assert_eq "$(tampering hostile):$(tampering victim)" "1:0" "the metrics name the tampering share, not its victim"
assert_eq "$("$GPUFRAC" status --json | jq '[.devices[].shares[]] | length')" 0 "every booking released"
assert_eq "$(slots "$ST" "$GPU0")" 0 "every slot freed"
finish
