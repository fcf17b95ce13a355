#!/bin/bash
# A lying tenant (real runc, gpufrac-hook, the shim, the reclaimer; a simulated 40 GB GPU whose
# memory every container shares). A container can write anything into its own usage region; the
# reclaimer believes none of it and decides from the driver's per-process view alone:
#  1. a borrower that hides what it holds (its region says 0 B) is flagged, and is still the one
#     stopped when an owner needs its memory back;
#  2. a container at its request that claims to be an owner in need (a request for memory back,
#     with its usage hidden) gets "not an owner" and its neighbour within its request keeps running;
#  3. a borrower that truncates its region (SIGBUS for a process that touches a mapping of it; the
#     reclaimer reads it with pread) neither ends the reclaimer nor escapes being stopped.
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/../containers.sh"
source "$(dirname "$0")/burst_lib.sh"
LIAR=$GPUFRAC_BUILD_DIR/tests/burst/burst_liar
[ -x "$LIAR" ] || { echo "FAIL: $LIAR is not built (ninja burst_tests)"; exit 1; }
e2e_tmp
P=gpufrac-e2e-burstlie-$$
e2e_on_exit() { runc_cleanup "$P"; stop_reclaimer; }
burst_node a100-40gb-x1.yaml
liar_bundle() { agent_bundle "$@" && cp "$LIAR" "$1/rootfs/bin/burst_liar"; }

# 1. The borrower hides its loan.
liar_bundle "$E2E_TMP/a" gpufrac.io/memory=10Gi gpufrac.io/memory-limit=30Gi
agent_start "$P-a" "$E2E_TMP/a"
assert_eq "$RC:${REPLY%% *}" "0:ready" "A starts: $OUT"
A_PID=${REPLY#ready }
wait_reclaimer
agent_fill "$P-a" 1024 25
assert_eq "$OKS" 25 "A borrows: 25 GiB of its request 10"
run runc exec "$P-a" /bin/burst_liar hide
assert_eq "$OUT" hidden "A's region now says it holds nothing"
run "$GPUFRAC" status --json
assert_eq "$(jq -c '.devices[0].shares[0].used_bytes' <<<"$OUT")" 0 "status shows what the region says"
for _ in $(seq 100); do
  run "$GPUFRAC" status --json
  [ "$(jq -r '.reclaims.flags | length' <<<"$OUT")" = 1 ] && break
  sleep 0.05
done
assert_eq "$(jq -c '.reclaims.flags[0] | [.container, .region_bytes, .driver_bytes]' <<<"$OUT")" \
  "[\"$P-a\",0,$((25 * GIB))]" "the reclaimer flags A's region: the driver sees 25 GiB"
run "$GPUFRAC" status
assert_contains "$OUT" "$P-a on GPU 0: its region says 0 B, the driver sees 25.0 GiB" "status shows the flag"
agent_bundle "$E2E_TMP/b" gpufrac.io/memory=20Gi
agent_start "$P-b" "$E2E_TMP/b"
agent_fill "$P-b" 1024 20
assert_eq "$OKS" 20 "B, within its request, gets its 20 GiB"
agent_gone "$P-a" || fail "A is stopped although its region claims nothing"
assert_contains "$(cat "$E2E_TMP/gpufrac.log")" "reclaim: stopped process $A_PID of $P-a" "the log names A"
agent_stop "$P-a"
agent_stop "$P-b"

# 2. A container at its request claims to need more, to get a neighbour within its request stopped.
liar_bundle "$E2E_TMP/c" gpufrac.io/memory=10Gi
agent_bundle "$E2E_TMP/n" gpufrac.io/memory=10Gi gpufrac.io/memory-limit=12Gi
agent_start "$P-c" "$E2E_TMP/c"
agent_start "$P-n" "$E2E_TMP/n"
agent_fill "$P-c" 1024 10
agent_fill "$P-n" 1024 10
assert_eq "$OKS" 10 "the neighbour holds its request (10 GiB of its limit 12)"
run runc exec "$P-c" /bin/burst_liar hide
run runc exec "$P-c" /bin/burst_liar ask 4096
assert_eq "$OUT" "answer 4" "C, at its request by the driver's view, is not an owner in need (GPUFRAC_RECLAIM_NOT_OWNER)"
agent "$P-n" i
assert_eq "${REPLY%% *}" info "the neighbour within its request keeps running"
assert_contains "$(cat "$E2E_TMP/gpufrac.log")" "reclaim for $P-c on $GPU: not an owner: $P-c asks for 4.0 GiB, and the driver sees it hold 10.0 GiB of its request 10.0 GiB: not an owner in need" \
  "the log says why"
run "$GPUFRAC" status --json
assert_eq "$(jq -c '.reclaims.stopped' <<<"$OUT")" 1 "no process stopped for the liar"
agent_stop "$P-c"
agent_stop "$P-n"

# 3. The borrower cuts its region short under the reclaimer's mapping.
liar_bundle "$E2E_TMP/t" gpufrac.io/memory=10Gi gpufrac.io/memory-limit=30Gi
agent_start "$P-t" "$E2E_TMP/t"
T_PID=${REPLY#ready }
wait_reclaimer
RECLAIMER=$(reclaimer_pid)
agent_fill "$P-t" 1024 25
assert_eq "$OKS" 25 "T borrows 15 GiB"
run runc exec "$P-t" /bin/burst_liar truncate
assert_eq "$OUT" truncated "T's region is empty now"
sleep 0.5
assert_eq "$(reclaimer_pid)" "$RECLAIMER" "the reclaimer survives the truncated region"
agent_start "$P-o" "$E2E_TMP/b"
agent_fill "$P-o" 1024 20
assert_eq "$OKS" 20 "the owner gets its 20 GiB"
agent_gone "$P-t" || fail "T is stopped although its region cannot be read"
assert_contains "$(cat "$E2E_TMP/gpufrac.log")" "reclaim: stopped process $T_PID of $P-t" "the log names T"
assert_contains "$(cat "$E2E_TMP/gpufrac.log")" "reclaim: the usage region of $P-t is damaged (its container truncated, grew or overwrote it?)" \
  "the log says why T's region is not read"
assert_eq "$(reclaimer_pid)" "$RECLAIMER" "the same reclaimer throughout"
agent_stop "$P-t"
agent_stop "$P-o"
finish
