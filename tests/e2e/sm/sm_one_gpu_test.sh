#!/bin/bash
# Mode separation on a one-GPU node with real runc (docs/architecture.md "SM sharing"): while an SM
# container runs, a time share is refused through gpufrac-hook in one line naming what the GPU is,
# and nothing is booked; once the GPU is back to time sharing, an SM share is refused beside a time
# share through gpufrac-hook and gpufrac-runtime, nothing booked and no MPS daemon started. A time share
# that only an idle daemon (past its timeout) keeps out is booked once the provisioner stopped it.
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/../containers.sh"
source "$(dirname "$0")/sm_lib.sh"
e2e_runc_test smone
sm_config a100-40gb-x1.yaml "compute: {mps-idle-timeout: 0}"
GPU=GPU-894e9a6d-f600-b098-3d59-138988473c2c
F=$E2E_TMP/fake
WRAPPER=$BIN_DIR/gpufrac-runtime
wait_for() {
  local n=0
  while [ ! -e "$1" ] && [ $n -lt 300 ]; do sleep 0.1; n=$((n + 1)); done
  [ -e "$1" ] || fail "no $1 after 30 s"
}

# 1. An SM container runs: a time share has no GPU.
sm_bundle "$E2E_TMP/s" "mps_probe mark $F/s-ready wait $F/s-go" gpufrac.io/compute=30 gpufrac.io/compute-mode=sm
runc run --bundle "$E2E_TMP/s" "$P-s" >"$E2E_TMP/s.out" 2>&1 &
RS=$!
wait_for "$F/s-ready"
BEFORE=$(ledger .entries)
sm_bundle "$E2E_TMP/t" "true" gpufrac.io/fraction=0.25
run runc run --bundle "$E2E_TMP/t" "$P-t"
assert_eq "$RC" 1 "a time share beside an SM share on the only GPU is refused"
assert_contains "$OUT" 'gpufrac-hook: no GPU can take fraction=0.25: GPU 0 is in SM mode (MPS, 1 SM share)\n' \
  "one line naming what the GPU is"
assert_eq "$(ledger .entries)" "$BEFORE" "nothing is booked"
touch "$F/s-go"
wait $RS || fail "the SM container: $(cat "$E2E_TMP/s.out")"

# 2. The SM share gone and its daemon idle past the timeout (0 here), the next time share is booked:
#    the hook's refusal goes to the provisioner, which stops the daemon and restores the mode first.
DAEMON=$(daemon_field "$GPU" pid)
sm_bundle "$E2E_TMP/t2" "cat /run/gpufrac/limits" gpufrac.io/fraction=0.25
run runc run --bundle "$E2E_TMP/t2" "$P-t2"
assert_eq "$RC" 0 "a time share once the GPU's daemon is idle past its timeout: $OUT"
assert_contains "$OUT" "compute $GPU 250000 fair normal" "it is a time share"
assert_eq "$(compute_mode "$GPU")" "" "the compute mode is DEFAULT again"
test -e "$(mps_dir "$GPU")" && fail "the idle daemon's directory is left"
case "$(awk '{print $3}' "/proc/$DAEMON/stat" 2>/dev/null)" in "" | Z) ;; *) fail "the daemon $DAEMON still runs" ;; esac
grep -q "stopped the MPS daemon of GPU 0" "$E2E_TMP/gpufrac.log" || fail "the log says the daemon was stopped"

# 3. A time share holds the GPU: an SM share is refused, through the hook and through the wrapper.
run "$GPUFRAC" ledger reserve --container t1 --pid $$ --annotation gpufrac.io/fraction=0.25
assert_eq "$RC" 0 "a time share: $OUT"
BEFORE=$(ledger .entries)
sm_bundle "$E2E_TMP/s2" "true" gpufrac.io/compute=30 gpufrac.io/compute-mode=sm
run runc run --bundle "$E2E_TMP/s2" "$P-s2"
assert_eq "$RC" 1 "an SM share beside a time share on the only GPU is refused"
assert_contains "$OUT" 'gpufrac-hook: no GPU can take compute=30 compute-mode=sm: GPU 0 is time-sliced (1 share)\n' \
  "one line naming what the GPU is"
sm_plain_bundle "$E2E_TMP/w" "true"
with_env "$E2E_TMP/w" GPUFRAC_COMPUTE=30 GPUFRAC_COMPUTE_MODE=sm
run "$WRAPPER" --log "$E2E_TMP/runc.log" run --bundle "$E2E_TMP/w" "$P-w"
assert_eq "$RC" 1 "gpufrac-runtime refuses it too"
assert_contains "$OUT" "no GPU can take compute=30 compute-mode=sm: GPU 0 is time-sliced (1 share)" "with the line"
assert_eq "$(ledger .entries)" "$BEFORE" "nothing is booked"
assert_eq "$(ledger '.mps | length')" 0 "the GPU is not recorded in MPS mode"
test -e "$(mps_dir "$GPU")" && fail "no MPS daemon was started"
assert_eq "$(compute_mode "$GPU")" "" "the compute mode stays DEFAULT"
sm_end
finish
