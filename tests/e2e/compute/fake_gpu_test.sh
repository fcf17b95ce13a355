#!/bin/bash
# The simulated GPU of the fake libcuda.so.1 itself, without the shim: exact accounting per
# client, one kernel at a time across processes (no overlap, no idle gap while work is queued),
# the bounded launch queue, events and their elapsed time, capture. And the issue compute shares
# address: without arbitration an asynchronous loop takes nearly the whole GPU from a loop that
# waits for each kernel, whatever their shares.
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/compute_lib.sh"
e2e_tmp
sim_gpu

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

# The issue: no shares, an asynchronous loop beside one that waits for every kernel.
sim_gpu
GPUFRAC_FAKE_CUDA_CLIENT=async "$LOAD" async:3 >/dev/null &
GPUFRAC_FAKE_CUDA_CLIENT=sync "$LOAD" sync:3 >/dev/null &
sleep 1
window 1.5 async sync
echo "without arbitration: $(tr '\n' ' ' <<<"$OUT")"
assert_le "$(share_of sync)" 5 "the waiting loop is starved"
wait
finish
