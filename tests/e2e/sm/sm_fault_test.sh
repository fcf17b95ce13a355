#!/bin/bash
# A fatal fault of one MPS client (docs/architecture.md "SM sharing"): the server of its GPU goes to
# FAULT and every client connected then gets the error (MPS cannot contain it to one client); status
# and the metrics show FAULT; a new SM share of that GPU is refused while clients remain; once they
# have exited, the next SM container gets a fresh server.
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/../containers.sh"
source "$(dirname "$0")/sm_lib.sh"
e2e_runc_test smfault
sm_config a100-40gb-x1.yaml
GPU=GPU-894e9a6d-f600-b098-3d59-138988473c2c
F=$E2E_TMP/fake
wait_for() {
  local n=0
  while [ ! -e "$1" ] && [ $n -lt 300 ]; do sleep 0.1; n=$((n + 1)); done
  [ -e "$1" ] || fail "no $1 after 30 s"
}

# A bystander client: connected, then it waits for the test and launches.
sm_bundle "$E2E_TMP/h" "mps_probe launch 1 sleep_1ms mark $F/h-ready wait $F/go launch 2 sleep_1ms" \
  gpufrac.io/compute=50 gpufrac.io/compute-mode=sm
runc run --bundle "$E2E_TMP/h" "$P-h" >"$E2E_TMP/h.out" 2>&1 &
RH=$!
wait_for "$F/h-ready"
SERVER=$(mps_ctl "$GPU" get_server_list)
assert_eq "$(mps_ctl "$GPU" "get_server_status $SERVER")" ACTIVE "the server is ACTIVE"

# The faulting client: its second launch is an illegal address.
sm_bundle "$E2E_TMP/f" "mps_probe launch 5 sleep_1ms" gpufrac.io/compute=30 gpufrac.io/compute-mode=sm
with_env "$E2E_TMP/f" GPUFRAC_FAKE_CUDA_MPS_FAULT=2
run runc run --bundle "$E2E_TMP/f" "$P-f"
assert_eq "$RC" 0 "the faulting container ran: $OUT"
assert_contains "$OUT" "launch: 1 ok, then CUDA_ERROR_ILLEGAL_ADDRESS" "its second launch faults"
grep -q "fatal fault reported by client" "$E2E_TMP/state/mps/$GPU/log/control.log" || fail "the daemon logs the fault"

run "$GPUFRAC" status --json
assert_eq "$(jq -c '.devices[0] | [.compute_mode, .mps.state, .mps.server_pid, .mps.clients]' <<<"$OUT")" \
  "[\"sm\",\"FAULT\",$SERVER,1]" "status --json: the server in FAULT, one client left"
run "$GPUFRAC" status
grep -qE "^0 +${GPU:0:12} +sm +[0-9]+ +$SERVER +FAULT +1 " <<<"$OUT" || fail "status: the server in FAULT, 1 client: $OUT"
run "$GPUFRAC" metrics --textfile "$E2E_TMP"
assert_contains "$(cat "$E2E_TMP/gpufrac.prom")" "gpufrac_gpu_mps_server_fault{gpu_index=\"0\",gpu_uuid=\"$GPU\",device_uuid=\"$GPU\"} 1" \
  "metrics: FAULT"

# A new SM share of the GPU while the bystander still runs: refused, nothing booked.
BEFORE=$(jq -c .entries "$E2E_TMP/state/ledger.json")
run "$GPUFRAC" mps provision --container late --pid $$ --annotation gpufrac.io/compute=10 --annotation gpufrac.io/compute-mode=sm
assert_eq "$RC:$OUT" "1:gpufrac: the MPS server $SERVER of $GPU is in FAULT until its 1 client exits (a fatal GPU fault of one client ends every client's work); try again then" \
  "refused while the server is in FAULT"
assert_eq "$(jq -c .entries "$E2E_TMP/state/ledger.json")" "$BEFORE" "nothing is booked"

# The bystander learns of the fault at its next launch, and exits.
touch "$F/go"
wait $RH || fail "the bystander container: $(cat "$E2E_TMP/h.out")"
assert_contains "$(cat "$E2E_TMP/h.out")" "launch: 0 ok, then CUDA_ERROR_ILLEGAL_ADDRESS" \
  "every client of the server gets the fault"

# All affected clients gone: the next SM container gets a fresh server.
sm_bundle "$E2E_TMP/n" "mps_probe launch 2 sleep_1ms mark $F/n-ready wait $F/n-go" gpufrac.io/compute=30 \
  gpufrac.io/compute-mode=sm
runc run --bundle "$E2E_TMP/n" "$P-n" >"$E2E_TMP/n.out" 2>&1 &
RN=$!
wait_for "$F/n-ready"
NEW=$(mps_ctl "$GPU" get_server_list)
[ -n "$NEW" ] && [ "$NEW" != "$SERVER" ] || fail "a fresh server: got [$NEW], the faulted one was $SERVER"
assert_eq "$(mps_ctl "$GPU" "get_server_status $NEW")" ACTIVE "the fresh server is ACTIVE"
touch "$F/n-go"
wait $RN || fail "the next container: $(cat "$E2E_TMP/n.out")"
assert_contains "$(cat "$E2E_TMP/n.out")" "launch: 2 ok, then done" "its kernels run"
sm_end
finish
