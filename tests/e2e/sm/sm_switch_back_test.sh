#!/bin/bash
# A GPU handed back from SM mode (docs/architecture.md "SM sharing"), on a one-GPU node with the
# default compute.mps-idle-timeout (600 s), with real runc: status says when the idle GPU switches
# back, and a time share that arrives a second after the last SM share ended stops the idle daemon
# and is booked at once, through gpufrac-hook and through gpufrac-runtime. The timeout only keeps a
# daemon warm for the next SM share.
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/../containers.sh"
source "$(dirname "$0")/sm_lib.sh"
e2e_runc_test smback
sm_config a100-40gb-x1.yaml
GPU=GPU-894e9a6d-f600-b098-3d59-138988473c2c
WRAPPER=$BIN_DIR/gpufrac-runtime

# sm_then_idle <name>: an SM container runs and ends; its GPU stays in SM mode, idle.
sm_then_idle() {
  sm_bundle "$E2E_TMP/$1" "mps_probe launch 1 sleep_1ms" gpufrac.io/compute=30 gpufrac.io/compute-mode=sm
  run runc run --bundle "$E2E_TMP/$1" "$P-$1"
  assert_eq "$RC" 0 "the SM container $1: $OUT"
  assert_eq "$(compute_mode "$GPU")" 3 "GPU 0 is in EXCLUSIVE_PROCESS mode after $1"
  DAEMON=$(daemon_field "$GPU" pid)
}
# switched_back <output>: the time share got GPU 0, back in time sharing, its daemon stopped.
switched_back() {
  assert_contains "$1" "compute $GPU 250000 fair normal" "the time share is booked on GPU 0"
  assert_eq "$(compute_mode "$GPU")" "" "the compute mode is DEFAULT again"
  assert_eq "$(ledger '.mps // [] | length')" 0 "GPU 0 is no longer recorded in MPS mode"
  test -e "$(mps_dir "$GPU")" && fail "the idle daemon's directory is left"
  case "$(awk '{print $3}' "/proc/$DAEMON/stat" 2>/dev/null)" in "" | Z) ;; *) fail "the daemon $DAEMON still runs" ;; esac
}

# 1. Status: the idle GPU goes back at a time share, or at the idle timeout.
sm_then_idle s1
run "$GPUFRAC" status --json
assert_eq "$(jq -c '.devices[0].mps.switch_back.on_time_share' <<<"$OUT")" true "status --json: at a time share"
LEFT=$(jq '.devices[0].mps.switch_back.timeout_in_s' <<<"$OUT")
[ "$LEFT" -gt 590 ] && [ "$LEFT" -le 600 ] || fail "status --json: the timeout in $LEFT s (590 to 600 expected)"
run "$GPUFRAC" status
assert_contains "$OUT" "at a time share, or in " "status says when the GPU switches back"

# 2. Through the hook, a second after the SM share ended.
sleep 1
sm_bundle "$E2E_TMP/t1" "cat /run/gpufrac/limits" gpufrac.io/fraction=0.25
run runc run --bundle "$E2E_TMP/t1" "$P-t1"
assert_eq "$RC" 0 "a time share a second after the last SM share ended, through the hook: $OUT"
switched_back "$OUT"
grep -q "stopped the MPS daemon of GPU 0" "$E2E_TMP/gpufrac.log" || fail "the log says the daemon was stopped"

# 3. Through gpufrac-runtime.
sm_then_idle s2
sleep 1
sm_plain_bundle "$E2E_TMP/w" "cat /run/gpufrac/limits"
with_env "$E2E_TMP/w" GPUFRAC_FRACTION=0.25
run "$WRAPPER" --log "$E2E_TMP/runc.log" run --bundle "$E2E_TMP/w" "$P-w"
assert_eq "$RC" 0 "a time share a second after the last SM share ended, through gpufrac-runtime: $OUT"
switched_back "$OUT"

# 4. An SM share still running keeps the GPU in SM mode: the time share is refused as before.
run "$GPUFRAC" mps provision --container busy --pid $$ --annotation gpufrac.io/compute=30 \
  --annotation gpufrac.io/compute-mode=sm
assert_eq "$RC" 0 "an SM share: $OUT"
run "$GPUFRAC" ledger reserve --container t3 --pid $$ --annotation gpufrac.io/fraction=0.25
assert_eq "$RC:$OUT" "1:gpufrac: no GPU can take fraction=0.25: GPU 0 is in SM mode (MPS, 1 SM share)" \
  "a time share beside a live SM share is refused"
run "$GPUFRAC" ledger release --container busy
sm_end
finish
