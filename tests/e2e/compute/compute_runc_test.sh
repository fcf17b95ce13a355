#!/bin/bash
# Compute shares in real runc containers booked through gpufrac-hook (annotations gpufrac.io/compute,
# compute-mode, priority) on a simulated two-GPU machine, running on the injected fake driver's
# simulated GPU (tests/fakes/cuda/README.md). Shares are measured by the simulated GPU itself: each
# container's achieved GPU time over a 10 s window.
#   1. 30/70 (GPU 0) and eight containers 5,5,10,10,10,15,20,25 (GPU 1) at once, each container
#      started once and switching together from an asynchronous launch loop to one that waits for
#      every kernel, then to CUDA graphs: every share within 2 points, in every window.
#   2. Alone: fair gets >= 97 % of GPU 0; strict 30 gets 30 +- 2 % of GPU 1.
#   3. priority: high beside a batch loop of 4 ms kernels: p99 of its launch-to-start wait within
#      the in-flight bound (max(inflight_us 2 ms, one kernel) + one kernel: 2 kernels, 8 ms) plus
#      the longest kernel (4 ms); the same probe at normal priority waits for the batch's lease
#      (reported).
#   4. 200 SIGKILLs of the lease holder at random moments: the GPU never idles longer than
#      lease + grace (+30 ms), and 30/70 holds within 2 points afterwards.
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/../containers.sh"
source "$(dirname "$0")/compute_lib.sh"
e2e_runc_test compute
e2e_gpu_config a100-40gb-x2.yaml
unset GPUFRAC_FAKE_CUDA_DEVICES # the injected driver knows the machine's GPUs
read -r GPU0 GPU1 < <(jq -r '[.gpus[].uuid] | join(" ")' <<<"$("$GPUFRAC" info --json)")
ST=$E2E_TMP/state
sim_gpu
# share NAME CMD GPU PERCENT [MODE [PRIORITY]]: a container with that compute share on GPU 0 or 1.
share() {
  local name=$1 cmd=$2 gpu=$3 pct=$4
  hook_bundle "$name" "$cmd" gpufrac.io/gpu="$gpu" gpufrac.io/compute="$pct" gpufrac.io/compute-mode="${5:-fair}" \
    gpufrac.io/priority="${6:-normal}"
}

# assert_shares "WINDOW OUTPUT" WHAT NAME:PERCENT...: each within 2 points of its share.
assert_shares() {
  local out=$1 what=$2 spec
  shift 2
  for spec in "$@"; do
    OUT=$out
    assert_near "$(share_of "${spec%:*}")" "${spec#*:}" 2 "$what: share of ${spec%:*}"
  done
}

# 1. Accuracy: three 10 s windows per container start, two GPUs at once.
PHASES="async:12 sync:12 graph:12"
share a "$(synced t1 "$PHASES")" 0 30
share b "$(synced t1 "$PHASES")" 0 70
weights=(5 5 10 10 10 15 20 25)
names=()
for i in "${!weights[@]}"; do
  n=w$i
  names+=("$n")
  share "$n" "$(synced t1 "$PHASES")" 1 "${weights[i]}"
done
for c in a b "${names[@]}"; do start "$c"; done
T0=$(go t1 1)
for phase in 0 1 2; do
  sleep_until $((T0 + (phase * 12 + 1) * 1000000000))
  "$GPUTOOL" window "$SIMGPU" 10 a b >"$E2E_TMP/w$phase-pair" &
  "$GPUTOOL" window "$SIMGPU" 10 "${names[@]}" >"$E2E_TMP/w$phase-eight"
  wait
done
wait_stopped a b "${names[@]}"
for phase in 0 1 2; do
  mode=$(cut -d' ' -f$((phase + 1)) <<<"$PHASES")
  echo "${mode%:*} 30/70: $(tr '\n' ' ' <"$E2E_TMP/w$phase-pair")"
  echo "${mode%:*} eight: $(tr '\n' ' ' <"$E2E_TMP/w$phase-eight")"
  assert_shares "$(cat "$E2E_TMP/w$phase-pair")" "${mode%:*} 30/70" a:30 b:70
  specs=()
  for i in "${!weights[@]}"; do specs+=("w$i:${weights[i]}"); done
  assert_shares "$(cat "$E2E_TMP/w$phase-eight")" "${mode%:*} eight" "${specs[@]}"
done
for c in a b "${names[@]}"; do
  assert_contains "$(cat "$E2E_TMP/$c.out")" "phase graph launches=" "$c ran its phases"
  assert_not_contains "$(cat "$E2E_TMP/$c.out")" "gpufrac:" "$c: no message from the shim"
done

# 2. Alone: fair takes the whole GPU, strict its share.
share fair "$(synced t2 async:12)" 0 30
share strict "$(synced t2 async:12)" 1 30 strict
start fair
start strict
T0=$(go t2 1)
sleep_until $((T0 + 1000000000))
window 10 fair strict
wait_stopped fair strict
echo "alone: $(tr '\n' ' ' <<<"$OUT")"
busy=$(busy_of fair)
awk -v b="$busy" 'BEGIN { exit !(b >= 97) }' || fail "fair alone: $busy % of the GPU, expected >= 97"
assert_near "$(busy_of strict)" 30 2 "strict 30 alone"

# 3. Priority: a probe beside a batch loop of 4 ms kernels, high (GPU 0) and normal (GPU 1).
share batch0 "$(synced t3 -k sleep_4ms async:9)" 0 90
share probe0 "$(synced t3 -k sleep_100us wait:1 probe:400:5000)" 0 10 fair high
share batch1 "$(synced t3 -k sleep_4ms async:9)" 1 90
share probe1 "$(synced t3 -k sleep_100us wait:1 probe:400:5000)" 1 10
for c in batch0 probe0 batch1 probe1; do start "$c"; done
go t3 1 >/dev/null
wait_stopped probe0 probe1 batch0 batch1
high=$(grep '^probe' "$E2E_TMP/probe0.out")
normal=$(grep '^probe' "$E2E_TMP/probe1.out")
echo "priority high: $high; normal: $normal"
p99=$(sed -n 's/.* p99_us=\([0-9]*\).*/\1/p' <<<"$high")
assert_le "$p99" 12000 "high priority p99 launch wait (us): in-flight bound 8 ms + longest kernel 4 ms"

# 4. 200 SIGKILLs of whoever holds the lease; each container restarts its loop.
loop='while true; do compute_load -k sleep_1ms async:0; done'
share ka "$loop" 0 30
share kb "$loop" 0 70
start ka
start kb
"$GPUTOOL" wait "$SIMGPU" ka 100 && "$GPUTOOL" wait "$SIMGPU" kb 100 || fail "kill test containers did not start"
t0=$(now_ns)
kills=0
while [ "$kills" -lt 200 ]; do
  sleep "0.0$((RANDOM % 4))$((RANDOM % 10))"
  pid=$(holder_pid "$ST" "$GPU0")
  [ "$pid" != 0 ] && kill -KILL "$pid" 2>/dev/null && kills=$((kills + 1))
done
t1=$(now_ns)
run "$GPUTOOL" gaps "$SIMGPU" "$t0" "$t1"
echo "after $kills kills in $(((t1 - t0) / 1000000)) ms: $(tr '\n' ' ' <<<"$OUT")"
assert_contains "$OUT" "complete=1" "the simulated GPU kept every run of the kill phase"
gap=$(sed -n 's/^max_gap_ns=\([0-9]*\).*/\1/p' <<<"$OUT")
assert_le "$gap" 100000000 "longest idle time of the GPU after a kill (lease 20 + grace 50 ms + 30 ms)"
window 10 ka kb
echo "after the kills: $(tr '\n' ' ' <<<"$OUT")"
assert_shares "$OUT" "after 200 kills" ka:30 kb:70
runc kill --all "$P-ka" KILL
runc kill --all "$P-kb" KILL
wait_stopped ka kb
assert_eq "$(slots "$ST" "$GPU0"):$(slots "$ST" "$GPU1")" "0:0" "every slot freed at poststop"
finish
