#!/bin/bash
# The reclaimer's keeper (real runc, gpufrac-hook, the shim, a simulated 40 GB GPU whose memory
# every container shares): an owner's request for memory back always finds a reclaimer.
#  1. A (request 10Gi, limit 30Gi) borrows 25 GiB; B (request 20Gi) starts; the reclaimer is killed
#     while the loan is out: its keeper takes over, and B still gets its 20 GiB (A's process stopped);
#  2. a killed keeper is replaced by the reclaimer within about a second;
#  3. with no burst booking left both leave, and gc removes their files.
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/../containers.sh"
source "$(dirname "$0")/burst_lib.sh"
e2e_tmp
P=gpufrac-e2e-burstkeep-$$
e2e_on_exit() { runc_cleanup "$P"; stop_reclaimer; }
burst_node a100-40gb-x1.yaml
wait_keeper() {
  for _ in $(seq 100); do [ -n "$(keeper_pid)" ] && [ "$(keeper_pid)" != "${1:-}" ] && return 0; sleep 0.05; done
  fail "no new keeper runs"
}

# 1. The reclaimer killed with a loan out.
agent_bundle "$E2E_TMP/a" gpufrac.io/memory=10Gi gpufrac.io/memory-limit=30Gi
agent_start "$P-a" "$E2E_TMP/a"
assert_eq "$RC:${REPLY%% *}" "0:ready" "A starts: $OUT"
A_PID=${REPLY#ready }
wait_reclaimer
wait_keeper
agent_fill "$P-a" 1024 25
assert_eq "$OKS" 25 "A borrows 25 GiB"
agent_bundle "$E2E_TMP/b" gpufrac.io/memory=20Gi
agent_start "$P-b" "$E2E_TMP/b"
assert_eq "$RC:${REPLY%% *}" "0:ready" "B starts: $OUT"
OLD=$(reclaimer_pid)
KEEPER=$(keeper_pid)
kill -9 "$OLD"
agent_fill "$P-b" 1024 20
assert_eq "$OKS" 20 "B gets its 20 GiB although the reclaimer was killed"
agent_gone "$P-a" || fail "A's process is stopped"
assert_eq "$(reclaimer_pid)" "${KEEPER:-none}" "the keeper is the reclaimer now"
LOG=$(cat "$E2E_TMP/gpufrac.log")
assert_contains "$LOG" "reclaim: the reclaimer stopped while a booking has a burst limit; its keeper takes over" "the log says so"
assert_contains "$LOG" "reclaim: stopped process $A_PID of $P-a" "the new reclaimer stopped A's process"

# 2. A killed keeper is replaced (A's booking keeps the reclaimer running until A is deleted).
wait_keeper "$KEEPER"
RECLAIMER=$(reclaimer_pid)
KEEPER=$(keeper_pid)
[ -n "$KEEPER" ] && kill -9 "$KEEPER"
wait_keeper "$KEEPER"
assert_eq "$(reclaimer_pid)" "$RECLAIMER" "the reclaimer started a new keeper and runs on"

# 3. Nothing left once no booking has a burst limit.
agent_stop "$P-a"
agent_stop "$P-b"
for _ in $(seq 200); do [ -z "$(reclaimer_pid)$(keeper_pid)" ] && break; sleep 0.05; done
assert_eq "$(reclaimer_pid):$(keeper_pid)" ":" "the reclaimer and its keeper leave"
run "$GPUFRAC" gc
assert_contains "$OUT" "Removed the burst reclaimer's files (no booking has a burst limit)." "gc removes their files"
assert_eq "$(ls "$E2E_TMP/state" | grep -c -e reclaims.json -e reclaimer. || true)" 0 "nothing of them is left"
