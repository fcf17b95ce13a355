#!/bin/bash
# The simulated GPU of the fake libcuda.so.1 itself, without the shim (tests/fakes/cuda/README.md):
#   1. exact accounting per client; the device never idles while two processes have work queued;
#      the bounded launch queue; events and their elapsed time; capture;
#   2. streams of one context run concurrently (a 20 ms kernel beside 100 kernels of 100 us ends
#      when the longer stream does), the legacy stream synchronises with blocking streams only,
#      the per-thread default stream is a blocking one (simulated times, exact);
#   3. contexts of two processes are time-sliced: both progress, half each, in slices of the
#      file's timeslice (2 ms by default, 10 ms at "medium");
#   4. a loop that waits for each kernel beside an asynchronous one gets one kernel per timeslice
#      of the other (500 us / (500 us + 2 ms) = 20 %), the issue compute shares address;
#   5. driver calls cost CPU time, counted: each launch, record, query and synchronise spins its
#      cost (defaults, GPUFRAC_FAKE_CUDA_COST, 0 = free), a malformed value is one line; with
#      CUDA_LAUNCH_BLOCKING=1 a launch returns once its kernel ran;
#   6. a process killed with work queued never stalls another: its context gets no slice after
#      its death (its queued work is dropped), the other keeps running; 30 processes killed at
#      random moments while they launch (their context slots reused) leave another one running;
#   7. three processes of four threads launching, recording and waiting at random (fake_gpu_stress)
#      beside 15 killed at random: every event completes after its record and before its wait
#      returns, in stream order.
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/compute_lib.sh"
e2e_tmp
sim_gpu

# 1. Accounting, no idle time, queue bound, events, capture.
GPUFRAC_FAKE_CUDA_CLIENT=x run "$LOAD" -k sleep_1ms sync:0.3
runs=$(sed -n 's/^phase sync launches=\([0-9]*\) rc=0$/\1/p' <<<"$OUT")
run "$GPUTOOL" total "$SIMGPU" x
assert_eq "$OUT" "runs=$runs gpu_ns=$((runs * 1000000))" "every run counted exactly once, for its duration"

t0=$(now_ns)
GPUFRAC_FAKE_CUDA_CLIENT=a "$LOAD" -k sleep_1ms async:1 >"$E2E_TMP/a.out" &
GPUFRAC_FAKE_CUDA_CLIENT=b "$LOAD" -k sleep_2ms async:1 >"$E2E_TMP/b.out"
wait
run "$GPUTOOL" gaps "$SIMGPU" $((t0 + 200000000)) $((t0 + 1000000000))
OUT=$(head -1 <<<"$OUT")
assert_eq "$OUT" "max_gap_ns=0 runs=$(sed -n 's/.*runs=\([0-9]*\).*/\1/p' <<<"$OUT") complete=1" \
  "two processes: the device never idles while work is queued"
for c in a:1 b:2; do
  n=$(sed -n 's/^phase async launches=\([0-9]*\) rc=0$/\1/p' "$E2E_TMP/${c%:*}.out")
  run "$GPUTOOL" total "$SIMGPU" "${c%:*}"
  assert_eq "$OUT" "runs=$n gpu_ns=$((n * ${c#*:} * 1000000))" "client ${c%:*} charged exactly its kernels"
done

run "$LOAD" -k sleep_1ms elapsed burst:1100 capture
assert_contains "$OUT" "elapsed ms=3.000 early=600 rc=0" "events complete when their stream gets there"
burst_ms=$(sed -n 's/^burst n=1100 launch_ms=\([0-9]*\)$/\1/p' <<<"$OUT")
[ -n "$burst_ms" ] && [ "$burst_ms" -ge 76 ] || fail "1100 launches of 1 ms with 1024 pending at most take >= 76 ms: $burst_ms"
assert_contains "$OUT" "capture status=1 after=0 sync=900 rc=0" "a capturing stream runs nothing"

# 2. Streams of one context.
run "$LOAD" streams
assert_eq "$OUT" "streams a_ms=20.000 b_ms=10.000 span_ms=20.000 rc=0
legacy after_blocking_ms=11.000 after_nonblocking_ms=1.000 blocking_after_ms=6.000 nonblocking_after_ms=1.000 per_thread_after_ms=6.000" \
  "streams overlap; the legacy stream synchronises with blocking streams"

# 3. Two processes, time-sliced: half each, in slices of the timeslice.
# slices_of TAG: "slices=.. ran_ns=.. longest_ns=.." of TAG in $OUT.
slices_of() { sed -n "s/^$1 //p" <<<"$OUT"; }
for level in default:2000000 medium:10000000; do
  GPUFRAC_FAKE_CUDA_TIMESLICE=${level%:*} sim_gpu
  GPUFRAC_FAKE_CUDA_CLIENT=p "$LOAD" async:3 >/dev/null &
  GPUFRAC_FAKE_CUDA_CLIENT=q "$LOAD" async:3 >/dev/null &
  sleep 1
  t0=$(now_ns)
  window 1.5 p q
  t1=$(now_ns)
  echo "two busy processes, timeslice ${level%:*}: $(tr '\n' ' ' <<<"$OUT")"
  assert_near "$(share_of p)" 50 2 "${level%:*}: p gets half"
  assert_near "$(share_of q)" 50 2 "${level%:*}: q gets half"
  run "$GPUTOOL" slices "$SIMGPU" "$t0" "$t1" p q
  echo "$OUT"
  for c in p q; do
    assert_contains "$(slices_of $c)" " longest_ns=${level#*:}" "${level%:*}: $c runs in slices of the timeslice"
  done
  wait
done

# 4. A loop waiting for each 500 us kernel beside an asynchronous one: one kernel per timeslice.
sim_gpu
GPUFRAC_FAKE_CUDA_CLIENT=async "$LOAD" async:3 >/dev/null &
GPUFRAC_FAKE_CUDA_CLIENT=sync "$LOAD" sync:3 >/dev/null &
sleep 1
window 1.5 async sync
echo "without arbitration: $(tr '\n' ' ' <<<"$OUT")"
assert_near "$(share_of sync)" 20 2 "the waiting loop gets 500 us per 2 ms timeslice of the other"
wait

# 5. CPU cost of driver calls, counted.
run "$LOAD" cost:500
assert_eq "$OUT" "cost launch calls=500 cost_ns=3000 spun=1
cost record calls=500 cost_ns=1000 spun=1
cost query calls=500 cost_ns=300 spun=1
cost sync calls=500 cost_ns=1000 spun=1" "default costs: launch 3 us, record 1 us, query 0.3 us, synchronise 1 us"
GPUFRAC_FAKE_CUDA_COST="launch=5us,record=0,query=1.5us,sync=2ms" run "$LOAD" cost:50
assert_eq "$OUT" "cost launch calls=50 cost_ns=5000 spun=1
cost record calls=50 cost_ns=0 spun=1
cost query calls=50 cost_ns=1500 spun=1
cost sync calls=50 cost_ns=2000000 spun=1" "costs set from the environment"
GPUFRAC_FAKE_CUDA_COST=0 run "$LOAD" cost:50
assert_eq "$(grep -c 'cost_ns=0 ' <<<"$OUT")" 4 "0: every call free: $OUT"
for bad in "launch=3" "launch=3us,flush=1us" "launch=-1us"; do
  GPUFRAC_FAKE_CUDA_COST=$bad run "$LOAD" cost:1
  assert_eq "$RC" 3 "$bad refused at cuInit"
  assert_contains "$OUT" "fake libcuda: GPUFRAC_FAKE_CUDA_COST: bad entry \"" "$bad: one line naming the variable"
  assert_contains "$OUT" "; accepted: 0 (every call free) or launch|record|query|sync=<N>ns|us|ms or 0, comma-separated" \
    "$bad: the accepted form"
done
GPUFRAC_FAKE_CUDA_TIMESLICE=2 run "$LOAD" cost:1
assert_eq "$RC" 3 "a timeslice without a unit is refused"
assert_contains "$OUT" "fake libcuda: GPUFRAC_FAKE_CUDA_TIMESLICE: bad value \"2\"; accepted: default, short, medium, long or <N>ns|us|ms from 1us to 1000ms" \
  "one line naming the timeslice variable"
# CUDA_LAUNCH_BLOCKING=1: every launch returns once its kernel ran (in a loop that synchronises after
# each, a 20 ms kernel's launch call takes at least 20 ms; without it the call returns at once and the
# synchronise waits); another value is refused in one line.
CUDA_LAUNCH_BLOCKING=1 run "$LOAD" -k sleep_20ms sync:0.3
assert_le 20000 "$(sed -n 's/^wait sync max_us=\([0-9]*\)$/\1/p' <<<"$OUT")" "blocking: the kernel (20000 us) within the longest launch call (us)"
CUDA_LAUNCH_BLOCKING=0 run "$LOAD" -k sleep_20ms sync:0.3
assert_le "$(sed -n 's/^wait sync max_us=\([0-9]*\)$/\1/p' <<<"$OUT")" 10000 "asynchronous: a launch call returns at once (us)"
CUDA_LAUNCH_BLOCKING=yes run "$LOAD" cost:1
assert_eq "$RC" 3 "CUDA_LAUNCH_BLOCKING=yes refused at cuInit"
assert_contains "$OUT" 'fake libcuda: CUDA_LAUNCH_BLOCKING: bad value "yes"; accepted: 1 (launches return when their kernel ran) or 0' \
  "one line naming CUDA_LAUNCH_BLOCKING"

# 6. A process killed with 50 s of work queued: no slice after its death, the other keeps going.
sim_gpu
GPUFRAC_FAKE_CUDA_CLIENT=killed "$LOAD" -k sleep_50ms async:0 >/dev/null &
victim=$!
GPUFRAC_FAKE_CUDA_CLIENT=other "$LOAD" -k sleep_1ms sync:3 >"$E2E_TMP/other.out" &
other=$!
"$GPUTOOL" wait "$SIMGPU" killed 200 && "$GPUTOOL" wait "$SIMGPU" other 100 || fail "the processes did not start"
kill -KILL "$victim"
wait "$victim" 2>/dev/null || true
dead=$(now_ns)
sleep 1
run "$GPUTOOL" slices "$SIMGPU" $((dead + 10000000)) "$(now_ns)" killed other
echo "after the kill: $(tr '\n' ' ' <<<"$OUT")"
assert_contains "$OUT" "killed slices=0 ran_ns=0 longest_ns=0" "a dead process's context gets no slice"
assert_not_contains "$OUT" "other slices=0 " "the other process keeps running"
wait "$other" || fail "the other process failed: $(cat "$E2E_TMP/other.out")"
assert_contains "$(cat "$E2E_TMP/other.out")" "phase sync launches=" "the other process finished its phase"

sim_gpu
GPUFRAC_FAKE_CUDA_CLIENT=steady "$LOAD" -k sleep_1ms sync:5 >"$E2E_TMP/steady.out" &
steady=$!
for _ in $(seq 30); do
  GPUFRAC_FAKE_CUDA_CLIENT=k "$LOAD" -k sleep_200us async:0 >/dev/null 2>&1 &
  sleep "0.0$((RANDOM % 10))$((RANDOM % 10))"
  kill -KILL $!
  wait $! 2>/dev/null || true
done
timeout 30 tail --pid=$steady -f /dev/null || fail "a process hung after 30 kills of its neighbours"
wait $steady || fail "the steady process failed: $(cat "$E2E_TMP/steady.out")"
assert_contains "$(cat "$E2E_TMP/steady.out")" "phase sync launches=" "the steady process finished its phase"
run "$GPUTOOL" total "$SIMGPU" k
assert_not_contains "$OUT" "runs=0 " "the killed processes launched"

# 7. Random work of several processes, some killed: consistent answers.
STRESS=$GPUFRAC_BUILD_DIR/tests/compute/fake_gpu_stress
sim_gpu
for i in 1 2 3; do GPUFRAC_FAKE_CUDA_CLIENT=s$i "$STRESS" 6 >"$E2E_TMP/stress$i.out" 2>&1 & done
for _ in $(seq 15); do
  GPUFRAC_FAKE_CUDA_CLIENT=victim "$STRESS" 60 >/dev/null 2>&1 &
  sleep "0.$((RANDOM % 4))"
  kill -KILL $!
  wait $! 2>/dev/null || true
done
wait
for i in 1 2 3; do
  assert_contains "$(cat "$E2E_TMP/stress$i.out")" "stress ok events=" "stress process $i: $(head -3 "$E2E_TMP/stress$i.out")"
done
finish
