#!/bin/bash
# 200 processes book 0.25 of a GPU at once on a simulated 2x A100-40GB machine: exactly 8 win,
# 192 get the capacity refusal, the ledger parses and its sums match; 8 releases empty it.
source "$(dirname "$0")/lib.sh"
e2e_tmp
need_cmd jq
e2e_config a100-40gb-x2.yaml
"$GPUFRAC" info --refresh >/dev/null

# Every booking names a live process, so no reservation reclaims another mid-test.
sleep 3600 &
SLEEPER=$!
e2e_on_exit() { kill "$SLEEPER" 2>/dev/null || true; }

OUTDIR=$E2E_TMP/out
mkdir -p "$OUTDIR"
pids=()
for i in $(seq 1 200); do
  (
    rc=0
    "$GPUFRAC" ledger reserve --container "s$i" --annotation gpufrac.io/fraction=0.25 --pid "$SLEEPER" \
      >"$OUTDIR/$i.out" 2>&1 || rc=$?
    echo "$rc" >"$OUTDIR/$i.rc"
  ) &
  pids+=($!)
done
wait "${pids[@]}"

won=$(grep -lx 0 "$OUTDIR"/*.rc | wc -l)
refused=$(grep -lx 1 "$OUTDIR"/*.rc | wc -l)
assert_eq "$won" 8 "successful reservations"
assert_eq "$refused" 192 "refused reservations"
expected="gpufrac: no GPU has 9.9 GiB free for fraction=0.25: GPU 0 0 B, GPU 1 0 B"
for rc in $(grep -lx 1 "$OUTDIR"/*.rc); do
  assert_eq "$(cat "${rc%.rc}.out")" "$expected" "refusal message of ${rc##*/}"
done

LEDGER=$E2E_TMP/state/ledger.json
assert_eq "$(jq '.version' "$LEDGER")" 4 "ledger version (compute shares: each quarter books a quarter of the time)"
assert_eq "$(jq '.entries | length' "$LEDGER")" 8 "entries"
assert_eq "$(jq '[.entries[].container_id] | unique | length' "$LEDGER")" 8 "distinct containers"
assert_eq "$(jq -c '[.entries | group_by(.gpu_index)[] | {gpu: .[0].gpu_index, n: length, bytes: (map(.bytes) | add)}]' "$LEDGER")" \
  '[{"gpu":0,"n":4,"bytes":42505076736},{"gpu":1,"n":4,"bytes":42505076736}]' "per-GPU sums"
assert_eq "$(jq -c '[.entries | group_by(.gpu_index)[] | map(.compute) | add]' "$LEDGER")" '[1000000,1000000]' \
  "per-GPU compute sums"
assert_eq "$(jq "[.entries[] | select(.pid != $SLEEPER)] | length" "$LEDGER")" 0 "pids"
winners=$(for rc in $(grep -lx 0 "$OUTDIR"/*.rc); do f=${rc##*/}; echo "s${f%.rc}"; done | sort | tr '\n' ' ')
assert_eq "$(jq -r '.entries[].container_id' "$LEDGER" | sort | tr '\n' ' ')" "$winners" "winners are booked"

run "$GPUFRAC" status --json
assert_eq "$RC" 0 "status"
assert_eq "$(jq -c '[.devices[] | [.reserved, .free, (.shares | length)]]' <<<"$OUT")" \
  '[[42505076736,0,4],[42505076736,0,4]]' "status sums"

for c in $winners; do
  run "$GPUFRAC" ledger release --container "$c"
  assert_eq "$OUT" "released 1 booking(s) of $c" "release $c"
done
assert_eq "$(jq -cS '.' "$LEDGER")" '{"entries":[],"version":1}' "empty ledger after releases"
run "$GPUFRAC" ledger release --container s1
assert_eq "$RC:$OUT" "0:released 0 booking(s) of s1" "release is idempotent"
finish
