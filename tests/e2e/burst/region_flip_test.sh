#!/bin/bash
# A tenant flips its usage region between 0 bytes and its full size in a loop (garbage in its
# header now and then), from inside a real runc container started through gpufrac-hook, while the
# host reads it: `gpufrac status` (text and JSON), a metrics server scraped again and again,
# `gpufrac gc` and the burst reclaimer. None of them dies (no exit status of 128 or more, the same
# metrics server and reclaimer throughout); a region left truncated is flagged by status and
# metrics and said once in the log; the borrower's neighbour still gets its whole request.
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/../containers.sh"
source "$(dirname "$0")/burst_lib.sh"
need_cmd curl
LIAR=$GPUFRAC_BUILD_DIR/tests/burst/burst_liar
[ -x "$LIAR" ] || { echo "FAIL: $LIAR is not built (ninja burst_tests)"; exit 1; }
e2e_tmp
P=gpufrac-e2e-regflip-$$
METRICS_PID=""
e2e_on_exit() {
  runc_cleanup "$P"
  stop_reclaimer
  [ -z "$METRICS_PID" ] || kill "$METRICS_PID" 2>/dev/null || true
}
burst_node a100-40gb-x1.yaml
liar_bundle() { agent_bundle "$@" && cp "$LIAR" "$1/rootfs/bin/burst_liar"; }

liar_bundle "$E2E_TMP/t" gpufrac.io/memory=10Gi gpufrac.io/memory-limit=30Gi
agent_start "$P-t" "$E2E_TMP/t"
assert_eq "$RC:${REPLY%% *}" "0:ready" "the tenant starts: $OUT"
wait_reclaimer
RECLAIMER=$(reclaimer_pid)
agent_fill "$P-t" 1024 25
assert_eq "$OKS" 25 "the tenant borrows: 25 GiB of its request 10"

"$GPUFRAC" metrics --listen 127.0.0.1:0 2>"$E2E_TMP/server.log" &
METRICS_PID=$!
for _ in $(seq 100); do grep -q '^gpufrac: serving metrics at ' "$E2E_TMP/server.log" && break; sleep 0.05; done
URL=$(sed -n 's/^gpufrac: serving metrics at //p' "$E2E_TMP/server.log")
[ -n "$URL" ] || fail "the metrics server did not start: $(cat "$E2E_TMP/server.log")"

# died <status>: an exit status of 128 or more is a death by a signal (135: SIGBUS).
DEATHS=() ROUNDS=0 SCRAPES=0
died() { [ "$1" -lt 128 ] || DEATHS+=("$2: $1"); }
runc exec "$P-t" /bin/burst_liar flip 6 >"$E2E_TMP/flip.out" 2>&1 &
FLIP=$!
while kill -0 "$FLIP" 2>/dev/null; do
  set +e
  "$GPUFRAC" status >/dev/null 2>&1
  died $? status
  "$GPUFRAC" status --json >/dev/null 2>&1
  died $? "status --json"
  "$GPUFRAC" gc >/dev/null 2>&1
  died $? gc
  code=$(curl -s -m 5 -o /dev/null -w '%{http_code}' "$URL")
  set -e
  [ "$code" = 200 ] && SCRAPES=$((SCRAPES + 1))
  ROUNDS=$((ROUNDS + 1))
done
wait "$FLIP" || true
assert_contains "$(cat "$E2E_TMP/flip.out")" "flipped " "the tenant flipped its region"
echo "flips: $(cat "$E2E_TMP/flip.out"); rounds of status, status --json, gc and a scrape: $ROUNDS"
assert_eq "${DEATHS[*]:-}" "" "no host process died of a signal"
assert_eq "$SCRAPES" "$ROUNDS" "every scrape answered 200"
kill -0 "$METRICS_PID" 2>/dev/null || fail "the metrics server died: $(tail -3 "$E2E_TMP/server.log")"
assert_eq "$(reclaimer_pid)" "$RECLAIMER" "the same reclaimer throughout"
[ "$ROUNDS" -ge 3 ] || fail "only $ROUNDS rounds while the region flipped"

# Left truncated: flagged, and the tenant is held at its request.
run runc exec "$P-t" /bin/burst_liar truncate
assert_eq "$OUT" truncated "the tenant's region is empty now"
run "$GPUFRAC" status --json
assert_eq "$RC" 0 "status reads the node"
REGION=$E2E_TMP/state/containers/$(ls "$E2E_TMP/state/containers" | grep "^$P-t")/usage
assert_eq "$(jq -r '.devices[0].shares[0].usage_region_damaged' <<<"$OUT")" \
  "usage region $REGION: 0 bytes; accepted: a regular file of 198336 bytes (gpufrac region version 2)" \
  "status --json flags the region"
run "$GPUFRAC" status
assert_contains "$OUT" "usage region damaged: usage region $REGION: 0 bytes" "status says it"
SCRAPE=$(curl -s -m 5 "$URL")
assert_contains "$SCRAPE" "gpufrac_share_usage_region_damaged{gpu_index=\"0\"" "metrics has the flag"
assert_eq "$(grep '^gpufrac_share_usage_region_damaged{' <<<"$SCRAPE" | sed 's/.* //')" 1 "metrics flags it"
LINE="reclaim: the usage region of $P-t is damaged (its container truncated, grew or overwrote it?): usage region $REGION: "
assert_contains "$(cat "$E2E_TMP/gpufrac.log")" "$LINE" "the reclaimer says it in the log"
assert_eq "$(grep -cF "$LINE" "$E2E_TMP/gpufrac.log")" 1 "once, however often it flipped"

# The owner within its request gets it: the reclaimer stops the borrower by the driver's view.
agent_bundle "$E2E_TMP/o" gpufrac.io/memory=20Gi
agent_start "$P-o" "$E2E_TMP/o"
assert_eq "$RC:${REPLY%% *}" "0:ready" "the owner starts: $OUT"
agent_fill "$P-o" 1024 20
assert_eq "$OKS" 20 "the owner gets its 20 GiB"
agent_gone "$P-t" || fail "the borrower is stopped although its region cannot be read"
assert_eq "$(reclaimer_pid)" "$RECLAIMER" "the same reclaimer throughout"
agent_stop "$P-t"
agent_stop "$P-o"
finish
