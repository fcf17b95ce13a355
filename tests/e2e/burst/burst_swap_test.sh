#!/bin/bash
# burst.reclaim: swap with real runc on a simulated 40 GB GPU (a100-40gb-x1: 40536 MiB) whose memory
# every container shares, the fake libcuda.so.1's checkpoint API (tests/fakes/cuda/README.md
# "Checkpoint") and the reclaimer (docs/architecture.md "Swap"):
#  1. A (request 10Gi, limit 30Gi) writes a pattern into 64 MiB and takes 24 GiB more; B (request
#     20Gi) takes its whole request: A's process is swapped out, not killed (it still runs, the
#     driver says CHECKPOINTED, it holds nothing on the GPU), status shows SWAPPED with its bytes,
#     the metrics count the swap-out; a CUDA call of A's waits; once B is gone A is swapped in, its
#     call returns with every byte intact, and A exits normally;
#  1b. A deleted while swapped out: its booking released, no swap state left;
#  2. a driver without the checkpoint API: A's process is stopped, and the log and status say why
#     swap was not used, in one line;
#  3. the same when the node's swap budget (swap.host-memory) has no room for A's bytes.
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/../containers.sh"
source "$(dirname "$0")/burst_lib.sh"
e2e_tmp
P=gpufrac-e2e-swap-$$
CTL=$GPUFRAC_BUILD_DIR/tests/swap/swap_ctl
OLD_CUDA=$(find "$GPUFRAC_BUILD_DIR/tests" -name 'libcuda-old.so' | head -1)
[ -x "$CTL" ] && [ -n "$OLD_CUDA" ] || { echo "FAIL: swap_ctl or libcuda-old.so is not built (ninja burst_tests)"; exit 1; }
e2e_on_exit() { runc_cleanup "$P"; stop_reclaimer; }
swap_state() { LD_LIBRARY_PATH=$GPUFRAC_FAKES_DIR "$CTL" state "$1" 2>&1 || true; }
burst_line() { sed -i "s|^burst: .*|burst: {reclaim: swap, context-allowance: 0, cuda-library: $1}|" "$GPUFRAC_CONFIG"; }
share_of() { jq -c --arg id "$1" ".devices[0].shares[] | select(.container_id == \$id) | $2"; }

# 1. Swapped out for the owner, swapped in once it is gone.
burst_node a100-40gb-x1.yaml
burst_line "$GPUFRAC_FAKES_DIR/libcuda.so.1"
agent_bundle "$E2E_TMP/a" gpufrac.io/memory=10Gi gpufrac.io/memory-limit=30Gi
agent_start "$P-a" "$E2E_TMP/a"
assert_eq "$RC:${REPLY%% *}" "0:ready" "A starts: $OUT"
A_PID=${REPLY#ready }
wait_reclaimer
for _ in 1 2 3 4; do agent "$P-a" "w 16" && assert_eq "$REPLY" ok "A writes a pattern into 16 MiB"; done
agent_fill "$P-a" 1024 24
assert_eq "$OKS" 24 "A takes 24 GiB more while alone (request 10Gi, limit 30Gi)"
A_BYTES=$((24 * GIB + 64 * MIB))
agent_bundle "$E2E_TMP/b" gpufrac.io/memory=20Gi
agent_start "$P-b" "$E2E_TMP/b"
assert_eq "$RC:${REPLY%% *}" "0:ready" "B is admitted: $OUT"
agent_fill "$P-b" 1024 20
assert_eq "$OKS" 20 "B gets its whole request of 20 GiB"
assert_eq "$(runc state "$P-a" | jq -r .status)" running "A's container still runs"
kill -0 "$A_PID" || fail "A's process still exists"
assert_eq "$(swap_state "$A_PID")" CHECKPOINTED "the driver holds A's process CHECKPOINTED"
assert_contains "$(cat "$E2E_TMP/gpufrac.log")" "reclaim: swapped out process $A_PID of $P-a (24.1 GiB" \
  "the log names the swap-out"
assert_not_contains "$(cat "$E2E_TMP/gpufrac.log")" "reclaim: stopped process" "nothing is killed"
run "$GPUFRAC" status --json
assert_eq "$(share_of "$P-a" '[.swapped.bytes, .swapped.owner]' <<<"$OUT")" "[$A_BYTES,\"$P-b\"]" \
  "status --json: A is swapped, its bytes, for B"
assert_eq "$(jq -c '.reclaims | [.stopped, .swapped_out, .events[-1].action, .events[-1].pid]' <<<"$OUT")" \
  "[0,1,\"swapped out\",$A_PID]" "status --json: one swap-out, no stop"
run "$GPUFRAC" status
assert_contains "$OUT" "SWAPPED: $P-a 24.1 GiB in host memory since" "status shows SWAPPED, bytes and since"
assert_contains "$OUT" "swapped out process $A_PID of $P-a" "status lists the swap-out"
SWAP_FILE=$(ls "$E2E_TMP/state/containers/$P-a"@*/swap 2>/dev/null || true)
[ -n "$SWAP_FILE" ] && assert_eq "$(jq -c '[.phase, .owner, (.processes | map(.pid))]' "$SWAP_FILE")" \
  "[\"swapped\",\"$P-b\",[$A_PID]]" "the swap state, in A's container directory"
run "$GPUFRAC" metrics --textfile "$E2E_TMP"
METRICS=$(cat "$E2E_TMP/gpufrac.prom")
assert_contains "$METRICS" "gpufrac_gpu_swap_outs_total{gpu_index=\"0\",gpu_uuid=\"$GPU\"} 1" "metrics: swap-outs per GPU"
assert_eq "$(grep -c "^gpufrac_share_swap_outs_total{.*container_id=\"$P-a\".*} 1$" <<<"$METRICS")" 1 "metrics: A's swap-out"
assert_eq "$(grep -c "^gpufrac_share_swapped_bytes{.*container_id=\"$P-a\".*} $A_BYTES$" <<<"$METRICS")" 1 \
  "metrics: A's bytes in host memory"
# A's next CUDA call waits while it is swapped out, and returns once it is swapped in.
A=$P-a
AGENT_N[$A]=$((${AGENT_N[$A]} + 1))
echo c >&"${AGENT_FD[$A]}"
sleep 0.5
assert_eq "$(grep -c "^${AGENT_N[$A]} " "$E2E_TMP/a.out" || true)" 0 "A's call waits while it is swapped out"
agent_stop "$P-b"
agent_wait "$A" "${AGENT_N[$A]}"
assert_eq "$REPLY" "checked 64" "A is swapped in once B is gone: every byte of its pattern is intact"
assert_eq "$(swap_state "$A_PID")" RUNNING "A's process runs again"
assert_contains "$(cat "$E2E_TMP/gpufrac.log")" "reclaim: swapped in process $A_PID of $P-a" "the log names the swap-in"
[ ! -e "$SWAP_FILE" ] || fail "no swap state is left"
run "$GPUFRAC" status --json
assert_eq "$(share_of "$P-a" .swapped <<<"$OUT")" null "status: A is no longer swapped"
run "$GPUFRAC" metrics --textfile "$E2E_TMP"
METRICS=$(cat "$E2E_TMP/gpufrac.prom")
assert_eq "$(grep -c "^gpufrac_share_swapped_in_bytes_total{.*container_id=\"$P-a\".*} $A_BYTES$" <<<"$METRICS")" 1 \
  "metrics: A's bytes swapped in"
agent_fill "$P-a" 1024 1
assert_eq "$OKS" 1 "A allocates again"
agent "$P-a" x
assert_eq "$REPLY" bye "A exits normally"
agent_stop "$P-a"
assert_eq "$(jq '.entries | length' "$E2E_TMP/state/ledger.json")" 0 "both released"
stop_reclaimer

# 1b. A container deleted while it is swapped out: its booking released, no swap state left.
agent_start "$P-a1" "$E2E_TMP/a"
A_PID=${REPLY#ready }
agent "$P-a1" "w 16"
agent_fill "$P-a1" 1024 24
agent_start "$P-b1" "$E2E_TMP/b"
agent_fill "$P-b1" 1024 20
assert_eq "$OKS:$(swap_state "$A_PID")" "20:CHECKPOINTED" "A is swapped out again"
agent_stop "$P-a1"
assert_eq "$(jq -c '[.entries[].container_id]' "$E2E_TMP/state/ledger.json")" "[\"$P-b1\"]" "A's booking is released"
assert_eq "$(swap_state "$A_PID")" CUDA_ERROR_NOT_INITIALIZED "A's process is gone"
assert_eq "$(ls "$E2E_TMP/state/containers/"*/swap 2>/dev/null || true)" "" "no swap state is left"
run "$GPUFRAC" status --json
assert_eq "$(jq -c '[.devices[0].shares[] | select(.swapped != null)] | length' <<<"$OUT")" 0 "status: nothing swapped"
agent_stop "$P-b1"
stop_reclaimer

# 2. A driver without the checkpoint API: kill, with the reason in one line.
burst_line "$OLD_CUDA"
agent_start "$P-a2" "$E2E_TMP/a"
A_PID=${REPLY#ready }
wait_reclaimer
agent_fill "$P-a2" 1024 25
assert_eq "$OKS" 25 "A takes 25 GiB"
agent_start "$P-b2" "$E2E_TMP/b"
agent_fill "$P-b2" 1024 20
assert_eq "$OKS" 20 "B gets its whole request"
agent_gone "$P-a2" || fail "A's process is stopped: swap cannot be used"
WHY="CUDA driver library $OLD_CUDA has no checkpoint API (cuCheckpointProcessLock and the rest); swap needs driver r570 / CUDA 12.8 or newer"
assert_contains "$(cat "$E2E_TMP/gpufrac.log")" "reclaim: stopped process $A_PID of $P-a2" "the log names the stop"
assert_contains "$(grep "stopped process $A_PID" "$E2E_TMP/gpufrac.log")" "; swap not used: $WHY" "with why, on its line"
run "$GPUFRAC" status
assert_contains "$OUT" "stopped process $A_PID of $P-a2 (it held 25.0 GiB) for $P-b2; swap not used: $WHY" "status says why"
run "$GPUFRAC" status --json
assert_eq "$(jq -r '.reclaims.events[-1].reason' <<<"$OUT")" "$WHY" "status --json: the reason"
agent_stop "$P-a2"
agent_stop "$P-b2"
stop_reclaimer

# 3. The node's swap budget (swap.host-memory) too small for A's bytes: kill, with the reason.
burst_line "$GPUFRAC_FAKES_DIR/libcuda.so.1"
echo "swap: {host-memory: 1Gi}" >>"$GPUFRAC_CONFIG"
agent_start "$P-a3" "$E2E_TMP/a"
A_PID=${REPLY#ready }
wait_reclaimer
agent_fill "$P-a3" 1024 25
agent_start "$P-b3" "$E2E_TMP/b"
agent_fill "$P-b3" 1024 20
assert_eq "$OKS" 20 "B gets its whole request"
agent_gone "$P-a3" || fail "A's process is stopped: the swap does not fit the node's budget"
assert_contains "$(grep "stopped process $A_PID" "$E2E_TMP/gpufrac.log")" \
  "; swap not used: the node's swap budget (swap.host-memory: 1.0 GiB) has 1.0 GiB left and the swap needs 25.0 GiB" \
  "the log says why"
agent_stop "$P-a3"
agent_stop "$P-b3"
stop_reclaimer
finish
