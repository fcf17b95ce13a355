#!/bin/bash
# 100 processes SIGKILLed at random moments while they allocate and free in a loop (eight APIs,
# 1 to 8 MiB): afterwards the host counts no live usage, a new process gets the whole limit at
# once (its start reclaims the dead slots, no lock can be left held), and the host can reclaim
# what is left. Also: a slot whose pid was reused by another process, and a slot left in
# RECLAIMING by a reclaimer that died, are both reclaimed when the bytes are needed.
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/shim_lib.sh"
e2e_tmp
L=$((64 * MI))
apis=(cuMemAlloc_v2 cuMemAllocAsync cuMemCreate cuArrayCreate_v2 cuMemAllocFromPoolAsync cuMemAllocManaged
  cuMemAllocPitch_v2 cuMemAllocAsync_ptsz)
shim_limits kill "$GPU0=$L"

killed=0
for batch in 1 2 3 4 5; do
  pids=()
  for i in $(seq 20); do
    env LD_PRELOAD="$SHIM" "$PROBE" loop "${apis[RANDOM % 8]}" $(((RANDOM % 8 + 1) * MI)) >/dev/null 2>&1 &
    pids+=($!)
  done
  for pid in "${pids[@]}"; do
    sleep "0.0$((RANDOM % 30))"
    kill -KILL "$pid"
    killed=$((killed + 1))
  done
  wait "${pids[@]}" 2>/dev/null || true
done
assert_eq "$killed" 100 "processes killed"

run "$TOOL" usage "$REGION"
assert_contains "$OUT" "live=0 " "no live process after the kills"
assert_contains "$OUT" "device 0 $GPU0 used=0 " "no live usage on the host"
echo "after the kills: $(printf '%s\n' "$OUT" | tr '\n' ' ')"
run timeout 20 env LD_PRELOAD="$SHIM" "$PROBE" meminfo fill cuMemAlloc_v2 "$MI"
assert_eq "$RC" 0 "a new process runs at once"
assert_contains "$OUT" "meminfo free=$L total=$L rc=0" "usage back to zero for a new process"
assert_contains "$OUT" "fill cuMemAlloc_v2 each=$MI ok=64 rc=2" "the whole limit"
run "$TOOL" reclaim "$REGION"
assert_eq "$OUT" "reclaimed=1" "the host reclaims the last (exited) process"
run "$TOOL" raw "$REGION"
assert_contains "$OUT" "dev0=0 " "every slot back to zero"

# A pid now running something else (this shell, with another start time), and a reclaimer that
# died half-way (state RECLAIMING, pid of a process that has exited).
shim_limits reuse "$GPU0=$L"
gone=$(sh -c 'echo $$')
while kill -0 "$gone" 2>/dev/null; do gone=$((gone + 1)); done
"$TOOL" set-slot "$REGION" 3 $$ 1 1 0 $((32 * MI))
"$TOOL" set-slot "$REGION" 7 "$gone" 12345 2 0 $((16 * MI))
run "$TOOL" usage "$REGION"
assert_contains "$OUT" "live=0 dead=2" "both slots are dead for the host"
assert_contains "$OUT" "used=0 stale=$((48 * MI))" "stale bytes"
run timeout 20 env LD_PRELOAD="$SHIM" "$PROBE" fill cuMemAlloc_v2 "$MI"
assert_contains "$OUT" "fill cuMemAlloc_v2 each=$MI ok=64 rc=2" "reused pid and dead reclaimer reclaimed"
finish
