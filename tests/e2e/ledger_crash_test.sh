#!/bin/bash
# Crash safety: the reserving process is SIGKILLed at each ledger fault point (GPUFRAC_FAULT), 500
# times. The ledger must always be valid JSON of version 4 (its shares book compute; version 1 while
# empty) holding exactly the committed bookings,
# and after `gpufrac gc` it must hold no booking of a dead process and no stale temp file.
source "$(dirname "$0")/lib.sh"
e2e_tmp
need_cmd jq
e2e_config a100-40gb-x2.yaml "allocation: {max-shares-per-gpu: 0}"
"$GPUFRAC" info --refresh >/dev/null
LEDGER=$E2E_TMP/state/ledger.json
RUNS=${GPUFRAC_CRASH_RUNS:-500}
POINTS=(ledger-after-lock ledger-after-temp-write ledger-before-rename)

# Processes the bookings belong to; some are killed along the way so their shares die.
POOL=()
new_sleeper() { sleep 3600 & POOL[$1]=$!; }
for k in 0 1 2 3; do new_sleeper $k; done
e2e_on_exit() { kill "${POOL[@]}" 2>/dev/null || true; }

temp_files() { find "$E2E_TMP/state" -name '.ledger.json.tmp.*' | wc -l; }

valid_ledger() {
  jq -e '(.entries | type == "array") and ((.version == 4 and keys == ["entries", "mig_idle", "version"])
    or (.version == 1 and keys == ["entries", "version"] and (.entries | length) == 0))' "$LEDGER" >/dev/null
}

crashed=0
for i in $(seq 0 $((RUNS - 1))); do
  point=${POINTS[i % 3]}
  run "$GPUFRAC" ledger reserve --container "ok$i" --annotation gpufrac.io/fraction=0.01 --pid "${POOL[i % 4]}"
  [ "$RC" = 0 ] || fail "run $i: committed reserve failed: $OUT"
  run env GPUFRAC_FAULT="$point" "$GPUFRAC" ledger reserve --container "crash$i" \
    --annotation gpufrac.io/fraction=0.01 --pid "${POOL[(i + 1) % 4]}"
  [ "$RC" = 137 ] || fail "run $i ($point): expected SIGKILL (137), got $RC: $OUT"
  [ "$point" = ledger-after-lock ] || crashed=$((crashed + 1))
  valid_ledger || fail "run $i ($point): ledger is not a valid ledger: $(head -c 300 "$LEDGER")"
  state=$(jq -r --arg ok "ok$i" --arg crash "crash$i" \
    '[any(.entries[]; .container_id == $ok), any(.entries[]; .container_id == $crash)] | @tsv' "$LEDGER")
  assert_eq "$state" "true	false" "run $i ($point): committed booking kept, crashed one absent"
  if [ $((i % 50)) = 49 ]; then  # a container dies: its bookings belong to a dead process now
    kill "${POOL[i % 4]}"
    wait "${POOL[i % 4]}" 2>/dev/null || true
    new_sleeper $((i % 4))
  fi
  if [ "$i" -ge 40 ]; then "$GPUFRAC" ledger release --container "ok$((i - 40))" >/dev/null; fi
  [ "$E2E_FAILURES" = 0 ] || break
done
assert_eq "$(temp_files)" "$crashed" "temp files left by writers killed after writing them"

# Each fault point in release and gc too: the old ledger survives.
before=$(cat "$LEDGER")
for point in "${POINTS[@]}"; do
  for op in "ledger release --container ok$((RUNS - 1))" "gc"; do
    kill "${POOL[0]}" 2>/dev/null || true  # gives gc something to write
    run env GPUFRAC_FAULT="$point" "$GPUFRAC" $op
    assert_eq "$RC" 137 "$op killed at $point"
    valid_ledger || fail "$op killed at $point: ledger damaged"
  done
done
assert_eq "$(cat "$LEDGER")" "$before" "ledger unchanged by killed release and gc"

# Kill two more containers, then collect.
kill "${POOL[1]}" "${POOL[2]}"
wait "${POOL[1]}" "${POOL[2]}" 2>/dev/null || true
run "$GPUFRAC" gc --json
assert_eq "$RC" 0 "gc"
reclaimed=$(jq '.reclaimed | length' <<<"$OUT")
[ "$reclaimed" -gt 0 ] || fail "gc reclaimed nothing although containers died"
assert_eq "$(jq '.temp_files_removed | length' <<<"$OUT")" "$((crashed + 4))" "gc removed the temp files"
assert_eq "$(temp_files)" 0 "no temp file left"
valid_ledger || fail "ledger damaged after gc"

# Every remaining booking belongs to a live process with the recorded start time.
while IFS=$'\t' read -r id pid start; do
  [ -r "/proc/$pid/stat" ] || { fail "$id: pid $pid is dead but still booked"; continue; }
  now_start=$(sed 's/.*) //' "/proc/$pid/stat" | awk '{print $20}')
  assert_eq "$now_start" "$start" "$id: start time of pid $pid"
done < <(jq -r '.entries[] | [.container_id, .pid, .pid_start] | @tsv' "$LEDGER")
assert_eq "$(jq '[.entries[] | select(.pid == 0)] | length' "$LEDGER")" 0 "no pending booking"
finish
