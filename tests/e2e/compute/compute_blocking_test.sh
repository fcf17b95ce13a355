#!/bin/bash
# Launches that return when their kernel is done (CUDA_LAUNCH_BLOCKING=1), in real runc containers
# booked through gpufrac-hook on the simulated GPU: 200 ms kernels, compute 30/70, with a synchronise
# after each kernel (GPU 0) and without (GPU 1) at once, over 16 s: each share within 4 points of its
# weight. The GPU time is spent inside the launch call and the event recorded after it is already
# complete, so the holder must be busy during the call (not taken for idle, charged the call) and
# hand the lease on at its end.
#   Also: the launches did block (a launch call took the kernel's 200 ms), and no line from the shim.
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/../containers.sh"
source "$(dirname "$0")/compute_lib.sh"
e2e_runc_test blocking
e2e_gpu_config a100-40gb-x2.yaml
unset GPUFRAC_FAKE_CUDA_DEVICES # the injected driver knows the machine's GPUs
read -r GPU0 GPU1 < <(jq -r '[.gpus[].uuid] | join(" ")' <<<"$("$GPUFRAC" info --json)")
ST=$E2E_TMP/state
sim_gpu

# blocking NAME: the container's launches return once their kernel ran.
blocking() {
  jq '.process.env += ["CUDA_LAUNCH_BLOCKING=1"]' "$E2E_TMP/$1/config.json" >"$E2E_TMP/$1/c.json"
  mv "$E2E_TMP/$1/c.json" "$E2E_TMP/$1/config.json"
}
hook_bundle s30 "$(synced t1 -k sleep_200ms sync:18)" gpufrac.io/gpu=0 gpufrac.io/compute=30
hook_bundle s70 "$(synced t1 -k sleep_200ms sync:18)" gpufrac.io/gpu=0 gpufrac.io/compute=70
hook_bundle a30 "$(synced t1 -k sleep_200ms async:18)" gpufrac.io/gpu=1 gpufrac.io/compute=30
hook_bundle a70 "$(synced t1 -k sleep_200ms async:18)" gpufrac.io/gpu=1 gpufrac.io/compute=70
for c in s30 s70 a30 a70; do blocking "$c" && start "$c"; done
T0=$(go t1 1)
sleep_until $((T0 + 1000000000))
"$GPUTOOL" window "$SIMGPU" 16 s30 s70 >"$E2E_TMP/w-sync" &
"$GPUTOOL" window "$SIMGPU" 16 a30 a70 >"$E2E_TMP/w-async"
wait
wait_stopped s30 s70 a30 a70
for m in sync:s async:a; do
  OUT=$(cat "$E2E_TMP/w-${m%:*}")
  echo "200 ms blocking launches, ${m%:*} loop: $(tr '\n' ' ' <<<"$OUT")"
  assert_near "$(share_of "${m#*:}30")" 30 4 "200 ms blocking launches, ${m%:*} loop: share of the 30 % container"
  assert_near "$(share_of "${m#*:}70")" 70 4 "200 ms blocking launches, ${m%:*} loop: share of the 70 % container"
done
for c in s30 s70 a30 a70; do
  out=$(cat "$E2E_TMP/$c.out")
  assert_contains "$out" "launches=" "$c ran its loop"
  assert_contains "$out" " rc=0" "$c: every launch succeeded"
  # The longest launch call held at least the kernel's 200 ms: the kernel ran inside it.
  assert_le 200000 "$(sed -n 's/^wait .* max_us=\([0-9]*\).*/\1/p' <<<"$out")" "$c: the kernel (200000 us) within its longest launch call (us)"
  assert_not_contains "$out" "gpufrac:" "$c: no message from the shim"
done
assert_eq "$(slots "$ST" "$GPU0"):$(slots "$ST" "$GPU1")" "0:0" "every slot freed at poststop"
finish
