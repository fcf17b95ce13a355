#!/bin/bash
# A wedged MPS server (docs/architecture.md "SM sharing"): a server that stays in FAULT after its
# clients have gone (the fake daemon's GPUFRAC_FAKE_MPS_FAULT_STAYS) is shown in FAULT with no
# client, and the next SM booking of the GPU restarts the daemon, so its containers get a fresh server.
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/../containers.sh"
source "$(dirname "$0")/sm_lib.sh"
e2e_runc_test smwedged
sm_config a100-40gb-x1.yaml
GPU=GPU-894e9a6d-f600-b098-3d59-138988473c2c
SM=(--annotation gpufrac.io/compute=20 --annotation gpufrac.io/compute-mode=sm)

# The daemon starts for a booking made by hand, with the fake daemon's knob in its environment.
run env GPUFRAC_FAKE_MPS_FAULT_STAYS=1 "$GPUFRAC" mps provision --container w1 --pid $$ "${SM[@]}"
assert_eq "$RC" 0 "the first SM share: $OUT"
OLD=$(daemon_field "$GPU" pid)

# A client faults and exits: the server stays in FAULT, with no client.
sm_bundle "$E2E_TMP/f" "mps_probe launch 3 sleep_1ms" gpufrac.io/compute=30 gpufrac.io/compute-mode=sm
with_env "$E2E_TMP/f" GPUFRAC_FAKE_CUDA_MPS_FAULT=1
run runc run --bundle "$E2E_TMP/f" "$P-f"
assert_contains "$OUT" "launch: 0 ok, then CUDA_ERROR_ILLEGAL_ADDRESS" "the client faults: $OUT"
SERVER=$(mps_ctl "$GPU" get_server_list)
run "$GPUFRAC" status --json
assert_eq "$(jq -c '.devices[0].mps | [.state, .server_pid, .clients]' <<<"$OUT")" "[\"FAULT\",$SERVER,0]" \
  "status: FAULT with no client left"

# The next SM booking restarts the daemon; a container then runs on a fresh server.
run "$GPUFRAC" mps provision --container w2 --pid $$ "${SM[@]}"
assert_eq "$RC" 0 "the next SM booking: $OUT"
assert_eq "$(jq -r '.notes[0]' <<<"$OUT")" \
  "the MPS server $SERVER of $GPU stayed in FAULT with no client left: a fresh daemon" "it says why"
NEW=$(daemon_field "$GPU" pid)
[ -n "$NEW" ] && [ "$NEW" != "$OLD" ] || fail "a fresh daemon: $NEW, the old one was $OLD"
assert_eq "$(compute_mode "$GPU")" 3 "the GPU stays in EXCLUSIVE_PROCESS mode"
sm_bundle "$E2E_TMP/n" "mps_probe launch 2 sleep_1ms" gpufrac.io/compute=30 gpufrac.io/compute-mode=sm
run runc run --bundle "$E2E_TMP/n" "$P-n"
assert_contains "$OUT" "launch: 2 ok, then done" "a container runs on the fresh server: $OUT"
assert_eq "$(mps_ctl "$GPU" "get_server_status $(mps_ctl "$GPU" get_server_list)")" ACTIVE "the fresh server is ACTIVE"
for c in w1 w2; do run "$GPUFRAC" ledger release --container $c; done
sm_end
finish
