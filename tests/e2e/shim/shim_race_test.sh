#!/bin/bash
# 16 processes of one container share one limit exactly: released together from a gate, each
# allocates 64 KiB at a time (eight different APIs) until refused and holds what it got. The sum
# never exceeds the 8 GiB limit and comes within one request per process of it; a 17th process
# then fills the rest to exactly the limit (no reservation leaked by a refusal). Three rounds.
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/shim_lib.sh"
e2e_tmp
L=$((8 * GI))
C=$((64 * 1024))
N=16
apis=(cuMemAlloc_v2 cuMemAllocAsync cuMemCreate cuMemAllocPitch_v2 cuMemAllocManaged cuArrayCreate_v2
  cuMemAllocFromPoolAsync cuMemAllocAsync_ptsz)

# Waits (at most 60 s) until every file $E2E_TMP/out.* of this round has a line $1.
wait_all() {
  for _ in $(seq 600); do
    [ "$(cat "$E2E_TMP"/out.* 2>/dev/null | grep -c "^$1\$")" -eq "$N" ] && return 0
    sleep 0.1
  done
  fail "the $N processes did not all reach \"$1\""
  cat "$E2E_TMP"/out.*
  exit 1
}

for round in 1 2 3; do
  shim_limits "race$round" "$GPU0=$L"
  rm -f "$E2E_TMP"/out.* "$E2E_TMP/go" "$E2E_TMP/gate"
  mkfifo "$E2E_TMP/go"
  pids=()
  for i in $(seq 0 $((N - 1))); do
    env LD_PRELOAD="$SHIM" "$PROBE" gate "$E2E_TMP/gate" fill "${apis[i % 8]}" "$C" hold <"$E2E_TMP/go" >"$E2E_TMP/out.$i" 2>&1 &
    pids+=($!)
  done
  exec {go}>"$E2E_TMP/go" # every process opens its stdin now
  wait_all ready
  touch "$E2E_TMP/gate" # and allocates from now on
  wait_all holding
  sum=0
  for f in "$E2E_TMP"/out.*; do
    line=$(grep '^fill ' "$f")
    ok=$(sed -n 's/.* ok=\([0-9]*\) .*/\1/p' <<<"$line")
    each=$(sed -n 's/.* each=\([0-9]*\) .*/\1/p' <<<"$line")
    assert_contains "$line" "rc=2" "round $round: $f refused at the end"
    sum=$((sum + ok * each))
  done
  echo "round $round: $sum of $L bytes by $N processes: $(grep -ho "ok=[0-9]*" "$E2E_TMP"/out.* | tr "\n" " ")"
  [ "$sum" -le "$L" ] || fail "round $round: $sum bytes allocated under a limit of $L"
  [ "$sum" -gt $((L - N * 512 * 1024)) ] || fail "round $round: only $sum of $L bytes allocated"
  run "$TOOL" usage "$REGION"
  assert_contains "$OUT" "live=$N dead=0" "round $round: live processes"
  assert_contains "$OUT" "used=$sum stale=0" "round $round: host sum"
  shim_run "$PROBE" fill cuMemAlloc_v2 "$C"
  assert_contains "$OUT" "fill cuMemAlloc_v2 each=$C ok=$(((L - sum) / C)) rc=2" "round $round: the rest, exactly"
  exec {go}>&-
  wait "${pids[@]}"
  run "$TOOL" usage "$REGION"
  assert_contains "$OUT" "live=0 dead=$((N + 1))" "round $round: all exited"
  assert_contains "$OUT" "used=0 stale=$L limit=$L" "round $round: live usage 0 on the host"
  shim_run "$PROBE" meminfo
  assert_eq "$OUT" "meminfo free=$L total=$L rc=0" "round $round: a new process sees the whole limit"
  run "$TOOL" raw "$REGION"
  assert_contains "$OUT" "dev0=0 " "round $round: dead slots reclaimed"
  rm -f "$E2E_TMP/go"
done
finish
