#!/bin/bash
# The third hardening round's stress frame (docs/architecture.md "Trust model"): for a bounded time
# (GPUFRAC_STRESS_S, default 30 s) a tenant in a real runc container (gpufrac-hook; a burst share
# with a compute share, so it reaches its usage region and its GPU's lease file) flips the size,
# contents and mode of every file it can write: its usage region, the lease file, and a file in its
# /dev/shm. Meanwhile the host runs, round after round, `gpufrac status` (text and JSON), a metrics
# scrape, `gpufrac gc`, a neighbour's start through gpufrac-hook and one through gpufrac-runtime
# (both with a compute share on the same GPU, so both join the lease file), and the burst reclaimer
# runs throughout. No host process dies of a signal, no neighbour's start fails, and afterwards an
# owner within its request still gets it (the borrower is stopped).
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/../containers.sh"
source "$(dirname "$0")/../wrapper.sh"
source "$(dirname "$0")/burst_lib.sh"
need_cmd curl
LIAR=$GPUFRAC_BUILD_DIR/tests/burst/burst_liar
[ -x "$LIAR" ] || { echo "FAIL: $LIAR is not built (ninja burst_tests)"; exit 1; }
e2e_tmp
P=gpufrac-e2e-stress-$$
DURATION=${GPUFRAC_STRESS_S:-30}
METRICS_PID=""
e2e_on_exit() {
  runc_cleanup "$P"
  stop_reclaimer
  [ -z "$METRICS_PID" ] || kill "$METRICS_PID" 2>/dev/null || true
}
burst_node a100-40gb-x1.yaml
liar_bundle() { agent_bundle "$@" && cp "$LIAR" "$1/rootfs/bin/burst_liar"; }

liar_bundle "$E2E_TMP/t" gpufrac.io/memory=10Gi gpufrac.io/memory-limit=30Gi gpufrac.io/compute=30
agent_start "$P-t" "$E2E_TMP/t"
assert_eq "$RC:${REPLY%% *}" "0:ready" "the tenant starts: $OUT"
wait_reclaimer
RECLAIMER=$(reclaimer_pid)
agent_fill "$P-t" 1024 25
assert_eq "$OKS" 25 "the tenant borrows: 25 GiB of its request 10"
run runc exec "$P-t" ls /run/gpufrac/compute
assert_contains "$OUT" "$GPU" "the tenant has its GPU's lease file"

"$GPUFRAC" metrics --listen 127.0.0.1:0 2>"$E2E_TMP/server.log" &
METRICS_PID=$!
for _ in $(seq 100); do grep -q '^gpufrac: serving metrics at ' "$E2E_TMP/server.log" && break; sleep 0.05; done
URL=$(sed -n 's/^gpufrac: serving metrics at //p' "$E2E_TMP/server.log")
[ -n "$URL" ] || fail "the metrics server did not start: $(cat "$E2E_TMP/server.log")"

make_bundle "$E2E_TMP/nh" 'true' gpufrac.io/memory=1Gi gpufrac.io/compute=10
make_plain_bundle "$E2E_TMP/nw" 'true' gpufrac.io/memory=1Gi gpufrac.io/compute=10
cp "$E2E_TMP/nw/config.json" "$E2E_TMP/nw.json"  # the wrapper edits the bundle's config.json: a fresh one each time
DEATHS=() FAILED_STARTS=() ROUNDS=0 SCRAPES=0
# host <what> <command...>: runs it; an exit status of 128 or more is a death by a signal.
host() {
  local what=$1 rc
  shift
  set +e
  OUT=$("$@" 2>&1)
  rc=$?
  set -e
  [ "$rc" -lt 128 ] || DEATHS+=("$what: $rc")
  RC=$rc
}
runc exec "$P-t" /bin/burst_liar flip "$DURATION" /run/gpufrac/usage "/run/gpufrac/compute/$GPU" /dev/shm/stress \
  >"$E2E_TMP/flip.out" 2>&1 &
FLIP=$!
while kill -0 "$FLIP" 2>/dev/null; do
  ROUNDS=$((ROUNDS + 1))
  host status "$GPUFRAC" status
  host "status --json" "$GPUFRAC" status --json
  host gc "$GPUFRAC" gc
  [ "$(curl -s -m 5 -o /dev/null -w '%{http_code}' "$URL")" = 200 ] && SCRAPES=$((SCRAPES + 1))
  host "hook start" runc run --bundle "$E2E_TMP/nh" "$P-nh$ROUNDS"
  [ "$RC" = 0 ] || FAILED_STARTS+=("hook $ROUNDS: $RC: $(tail -1 <<<"$OUT")")
  cp "$E2E_TMP/nw.json" "$E2E_TMP/nw/config.json"
  host "wrapper start" "$WRAPPER" run --bundle "$E2E_TMP/nw" "$P-nw$ROUNDS"
  [ "$RC" = 0 ] || FAILED_STARTS+=("wrapper $ROUNDS: $RC: $(tail -1 <<<"$OUT")")
  runc delete -f "$P-nh$ROUNDS" >/dev/null 2>&1 || true
  runc delete -f "$P-nw$ROUNDS" >/dev/null 2>&1 || true
done
wait "$FLIP" || true
assert_contains "$(cat "$E2E_TMP/flip.out")" "flipped " "the tenant flipped its files"
echo "flips: $(cat "$E2E_TMP/flip.out"); rounds: $ROUNDS (status, status --json, gc, a scrape, two starts each)"
printf 'died: %s\n' "${DEATHS[@]:-none}"
printf 'failed start: %s\n' "${FAILED_STARTS[@]:-none}"
assert_eq "${#DEATHS[@]}" 0 "no host process died of a signal"
assert_eq "${#FAILED_STARTS[@]}" 0 "no neighbour's start failed"
assert_eq "$SCRAPES" "$ROUNDS" "every scrape answered 200"
kill -0 "$METRICS_PID" 2>/dev/null || fail "the metrics server died: $(tail -3 "$E2E_TMP/server.log")"
assert_eq "$(reclaimer_pid)" "$RECLAIMER" "the same reclaimer throughout"
[ "$ROUNDS" -ge 3 ] || fail "only $ROUNDS rounds while the files flipped"

# The owner within its request gets it: the borrower is stopped by the driver's view.
agent_bundle "$E2E_TMP/o" gpufrac.io/memory=20Gi
agent_start "$P-o" "$E2E_TMP/o"
assert_eq "$RC:${REPLY%% *}" "0:ready" "the owner starts: $OUT"
agent_fill "$P-o" 1024 20
assert_eq "$OKS" 20 "the owner gets its 20 GiB"
agent_gone "$P-t" || fail "the borrower keeps its loan"
agent_stop "$P-t"
agent_stop "$P-o"
finish
