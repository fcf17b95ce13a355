#!/bin/bash
# gpufrac status and gc on a simulated MIG machine: bookings by hand (gpufrac ledger), table and
# JSON output, pending bookings, reclaim after the container's process exits, exit codes.
source "$(dirname "$0")/lib.sh"
e2e_tmp
need_cmd jq
e2e_config a100-80gb-mig.yaml
LEDGER=$E2E_TMP/state/ledger.json

sleep 3600 &
SLEEPER=$!
e2e_on_exit() { kill "$SLEEPER" 2>/dev/null || true; }

run "$GPUFRAC" status
assert_eq "$RC" 0 "status on an empty node"
assert_contains "$OUT" "0    9   0   MIG 1g.10gb                       MIG-7e3ba276  0 B   0 B       9.5 GiB   9.5 GiB   0
     [............................................................]" "free instance row and its bar"
assert_contains "$OUT" "No shares." "no shares"

run "$GPUFRAC" ledger reserve --container web --annotation gpufrac.io/mig-profile=1g.10gb --pid "$SLEEPER"
assert_eq "$RC:$OUT" "0:booked 9.5 GiB on MIG-7e3ba276-cba9-efe9-9fe8-6c419f56af4e for web: idle MIG instance 1g.10gb on GPU 0 gi 9 ci 0" "reserve"
run "$GPUFRAC" ledger reserve --container batch --annotation gpufrac.io/mig-profile=1g.10gb --source wrapper
assert_eq "$RC" 0 "pending reserve"
run "$GPUFRAC" ledger reserve --container late --annotation gpufrac.io/mig-profile=1g.10gb
assert_eq "$RC:$OUT" "1:gpufrac: no idle MIG instance of profile 1g.10gb: GPU 0 gi 9 ci 0 in use by web, GPU 0 gi 10 ci 0 in use by batch" "refusal"

run "$GPUFRAC" status
assert_eq "$RC" 0 "status"
assert_contains "$OUT" "0    9   0   MIG 1g.10gb                       MIG-7e3ba276  -     9.5 GiB   0 B       9.5 GiB   1
     [aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa]" "booked instance: reserved, usage unknown"
assert_contains "$OUT" "A      0    9   0   web        mig-profile=1g.10gb  9.5 GiB   -     hook     $SLEEPER" "running share row"
assert_contains "$OUT" "B      0    10  0   batch      mig-profile=1g.10gb  9.5 GiB   -     wrapper  -" "pending share row: its own letter"
assert_contains "$OUT" "0    10  0   MIG 1g.10gb                       MIG-6ab7d7ee  -     9.5 GiB   0 B       9.5 GiB   1
     [bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb]" "the letter names the same container in its bar"
assert_contains "$OUT" "pending" "pending state"
run "$GPUFRAC" status --json
assert_eq "$(jq -c '[.devices[] | select(.type == "mig") | [.mig.gi, .reserved, .free, (.shares | map(.state))]]' <<<"$OUT")" \
  '[[1,0,42144366592,[]],[5,0,20937965568,[]],[9,10200547328,0,["running"]],[10,10200547328,0,["pending"]]]' "status JSON"

run "$GPUFRAC" ledger attach --container batch --pid "$SLEEPER"
assert_eq "$RC:$OUT" "0:attached pid $SLEEPER to 1 booking(s) of batch" "attach"
run "$GPUFRAC" gc
assert_eq "$RC:$OUT" "0:Nothing to reclaim.
2 bookings kept." "gc with live containers"

kill "$SLEEPER"
wait "$SLEEPER" 2>/dev/null || true
run "$GPUFRAC" status --json
assert_eq "$(jq -c '[.devices[].shares[].state]' <<<"$OUT")" '["exited","exited"]' "dead shares shown as exited"
run "$GPUFRAC" gc --json
assert_eq "$RC" 0 "gc"
assert_eq "$(jq -c '[.reclaimed[] | [.container_id, .why]]' <<<"$OUT")" \
  "[[\"web\",\"process $SLEEPER exited\"],[\"batch\",\"process $SLEEPER exited\"]]" "gc reclaims both"
assert_eq "$(jq -c '.entries' "$LEDGER")" '[]' "ledger empty after gc"

# Exit codes and one-line messages.
run "$GPUFRAC" ledger reserve --container x --annotation gpufrac.io/fraction=abc
assert_eq "$RC:$OUT" '1:gpufrac: gpufrac.io/fraction: "abc" is not a fraction; use a decimal 0 < f <= 1 with at most 6 decimals, e.g. 0.25' "bad annotation"
run "$GPUFRAC" ledger reserve --container ../x --annotation gpufrac.io/fraction=0.5
assert_eq "$RC" 1 "bad container id"
echo '{"version": 7, "entries": []}' >"$LEDGER"
run "$GPUFRAC" status
assert_eq "$RC:$OUT" "2:gpufrac: $LEDGER: ledger version \"7\" is not 1, 2, 3, 4 or 5; it was written by another gpufrac version" "newer ledger"
run "$GPUFRAC" gc
assert_eq "$RC" 2 "gc on a newer ledger"
assert_eq "$(printf '%s\n' "$OUT" | wc -l)" 1 "one line"
finish
