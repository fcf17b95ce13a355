#!/bin/bash
# SM sharing survives SIGKILL (docs/architecture.md "SM sharing"): the provisioner killed at each
# step of a daemon's start (GPUFRAC_FAULT=mps-after-record, mps-after-mode, mps-after-start), through
# the CLI and through gpufrac-hook, and gc killed at each step of its stop (mps-stop-after-quit,
# mps-stop-after-mode), leave a node that `gpufrac gc` (or the next provisioning) brings back to
# consistent: no booking, no GPU recorded in MPS mode, no daemon record or directory, no daemon
# running, the compute mode back to DEFAULT. A daemon record whose pid now names another process is
# never trusted: that process is not signalled.
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/../containers.sh"
source "$(dirname "$0")/sm_lib.sh"
e2e_runc_test smcrash
sm_config a100-40gb-x1.yaml "compute: {mps-idle-timeout: 0}"
GPU=GPU-894e9a6d-f600-b098-3d59-138988473c2c
SM=(--annotation gpufrac.io/compute=30 --annotation gpufrac.io/compute-mode=sm)
e2e_on_exit() { runc_cleanup "$P"; e2e_kill_tmp_processes; }

consistent() {
  assert_eq "$(ledger '[(.entries | length), (.mps // [] | length)]')" "[0,0]" "$1: no booking, no GPU in MPS mode"
  test -e "$(mps_dir "$GPU")" && fail "$1: the daemon's directory is left"
  assert_eq "$(compute_mode "$GPU")" "" "$1: the compute mode is DEFAULT again"
  assert_eq "$(sm_daemons)" "" "$1: no daemon runs"
}
victim() { sleep 600 & VICTIM=$!; }

# 1. Killed while starting, through the CLI: gc undoes it.
for point in mps-after-record mps-after-mode mps-after-start; do
  victim
  run env GPUFRAC_FAULT=$point "$GPUFRAC" mps provision --container k --pid $VICTIM "${SM[@]}"
  assert_eq "$RC" 137 "killed at $point: $OUT"
  kill $VICTIM; wait $VICTIM 2>/dev/null || true
  run "$GPUFRAC" gc
  assert_eq "$RC" 0 "gc after $point: $OUT"
  consistent "gc after $point"
done

# 2. Killed while starting, then the next provisioning recovers it and starts a daemon.
victim
run env GPUFRAC_FAULT=mps-after-start "$GPUFRAC" mps provision --container k --pid $VICTIM "${SM[@]}"
assert_eq "$RC" 137 "killed at mps-after-start again"
run "$GPUFRAC" mps provision --container next --pid $VICTIM "${SM[@]}"
assert_eq "$RC" 0 "the next provisioning: $OUT"
assert_contains "$(jq -r '.notes | join("; ")' <<<"$OUT")" "recovered the MPS daemon record of $GPU (starting)" \
  "it finishes what the killed one left"
assert_eq "$(sm_daemons | wc -w)" 1 "one daemon runs"
kill $VICTIM; wait $VICTIM 2>/dev/null || true
run "$GPUFRAC" gc
consistent "gc after the recovered start"

# 3. gpufrac-hook's provisioner killed at each step of a start: the container does not start; gc
#    undoes the rest.
hook_fault() {  # hook_fault <bundle> <point>: the hook's provisioner gets GPUFRAC_FAULT=<point>
  jq --arg f "GPUFRAC_FAULT=$2" '.hooks.createRuntime[0].env += [$f]' "$1/config.json" >"$1/c.json" &&
    mv "$1/c.json" "$1/config.json"
}
for point in mps-after-record mps-after-mode mps-after-start; do
  sm_bundle "$E2E_TMP/b-$point" "true" gpufrac.io/compute=30 gpufrac.io/compute-mode=sm
  hook_fault "$E2E_TMP/b-$point" $point
  run runc run --bundle "$E2E_TMP/b-$point" "$P-b-$point"
  assert_eq "$RC" 1 "the container does not start (hook's provisioner killed at $point)"
  assert_contains "$OUT" "mps provision was killed by signal 9" "the hook says how its provisioner ended"
  run "$GPUFRAC" gc
  consistent "gc after the hook's provisioner was killed at $point"
done
# ... and at each step of a stop: a time share kept out by an idle daemon has the hook's provisioner
# stop it first.
for point in mps-stop-after-quit mps-stop-after-mode; do
  run "$GPUFRAC" mps provision --container s --pid $$ "${SM[@]}"
  assert_eq "$RC" 0 "an SM share, idle once released: $OUT"
  run "$GPUFRAC" ledger release --container s
  sm_bundle "$E2E_TMP/t-$point" "true" gpufrac.io/fraction=0.25
  hook_fault "$E2E_TMP/t-$point" $point
  run runc run --bundle "$E2E_TMP/t-$point" "$P-t-$point"
  assert_eq "$RC" 1 "the time share's container does not start (hook's provisioner killed at $point)"
  assert_contains "$OUT" "mps provision was killed by signal 9" "the hook says how its provisioner ended"
  run "$GPUFRAC" gc
  consistent "gc after the hook's provisioner was killed at $point"
done

# 4. gc killed while stopping an idle daemon: the next gc finishes.
for point in mps-stop-after-quit mps-stop-after-mode; do
  run "$GPUFRAC" mps provision --container s --pid $$ "${SM[@]}"
  assert_eq "$RC" 0 "an SM share to stop later: $OUT"
  run "$GPUFRAC" ledger release --container s
  run env GPUFRAC_FAULT=$point "$GPUFRAC" gc
  assert_eq "$RC" 137 "gc killed at $point"
  run "$GPUFRAC" gc
  assert_eq "$RC" 0 "the next gc: $OUT"
  consistent "the gc after $point"
done

# 5. A stale record: its pid is now another process (other start time). It is not signalled; a
#    fresh daemon is started and the record replaced.
victim
mkdir -p "$(mps_dir "$GPU")"
printf '{"gpu":"%s","pid":%d,"pid_start":1,"prior_compute_mode":0,"state":"running","time":1}\n' "$GPU" "$VICTIM" \
  >"$(mps_dir "$GPU")/daemon.json"
run "$GPUFRAC" mps provision --container z --pid $$ "${SM[@]}"
assert_eq "$RC" 0 "a booking over a stale record: $OUT"
kill -0 $VICTIM 2>/dev/null || fail "the process that reused the recorded pid was signalled"
[ "$(daemon_field "$GPU" pid)" != "$VICTIM" ] || fail "the record still names the reused pid"
assert_eq "$(daemon_field "$GPU" pid)" "$(cat "$(mps_dir "$GPU")/pipe/nvidia-cuda-mps-control.pid")" \
  "the record names the fresh daemon"
kill $VICTIM; wait $VICTIM 2>/dev/null || true
run "$GPUFRAC" ledger release --container z
run "$GPUFRAC" gc
consistent "gc at the end"
sm_end
finish
