#!/bin/bash
# The fake libcuda.so.1's checkpoint API (tests/fakes/cuda/README.md "Checkpoint"), driven by
# another process (swap_ctl) on a GPU every process shares (GPUFRAC_FAKE_NVML_STATE):
#   1. lock, checkpoint, restore, unlock: the states in order; while checkpointed the process holds
#      nothing on the GPU (NVML lists no process, the GPU's memory is all free); every byte of its
#      allocations is back after the restore; a CUDA call made while locked returns only after unlock;
#   2. every wrong transition is CUDA_ERROR_ILLEGAL_STATE and changes nothing; a pid without CUDA is
#      CUDA_ERROR_NOT_INITIALIZED; any thread id of the process names it;
#   3. a lock waits for submitted work: with a kernel that outlasts the lock's timeout the lock is
#      CUDA_ERROR_TIMEOUT and the process stays RUNNING;
#   4. a restore while another process holds the GPU's memory is CUDA_ERROR_OUT_OF_MEMORY and the
#      process stays CHECKPOINTED; once the memory is free the restore succeeds, the bytes intact;
#      under GPUFRAC_FAKE_CUDA_RESTORE_OOM=poison every later restore is CUDA_ERROR_OPERATING_SYSTEM;
#   5. a process killed while checkpointed (or locked) frees everything: the GPU is all free, its
#      pid is CUDA_ERROR_NOT_INITIALIZED.
source "$(dirname "$0")/../lib.sh"
need_cmd timeout
BIN=$GPUFRAC_BUILD_DIR/tests/swap
TARGET=$BIN/swap_target CTL=$BIN/swap_ctl
[ -x "$TARGET" ] && [ -x "$CTL" ] || { echo "FAIL: swap_target or swap_ctl is not built (ninja swap_tests)"; exit 1; }
e2e_tmp
export LD_LIBRARY_PATH=$GPUFRAC_FAKES_DIR GPUFRAC_FAKE_NVML_MACHINE=$MACHINES/a100-40gb-x1.yaml
export GPUFRAC_FAKE_NVML_STATE=$E2E_TMP/nvml.json GPUFRAC_FAKE_CUDA_COST=0
MIB=$((1 << 20))
BLOCKS=4 BLOCK=$((3 * MIB + 4096))
BYTES=$((BLOCKS * BLOCK))

# start_target [VAR=value...]: a swap_target in a coprocess; sets PID.
start_target() {
  coproc TGT { exec env "$@" "$TARGET" "$BLOCKS" "$BLOCK"; }
  local word
  read -r -t 30 word PID <&"${TGT[0]}" || true
  [ "$word" = ready ] || { echo "FAIL: swap_target did not start ($word)"; exit 1; }
}
# say <command>: one command to the target, its answer line in LINE (30 s at most).
say() {
  echo "$1" >&"${TGT[1]}"
  LINE=
  read -r -t 30 LINE <&"${TGT[0]}" || true
}
ctl() { run timeout 60 "$CTL" "$@"; }
stop_target() {
  kill -9 "$PID" 2>/dev/null || true
  wait "$TGT_PID" 2>/dev/null || true
}
free_all=$("$CTL" free)

# 1. The cycle.
start_target
ctl state "$PID" && assert_eq "$OUT" RUNNING "a fresh process"
ctl procs && assert_eq "$OUT" "$PID $BYTES" "NVML lists the target with its allocations"
ctl free && assert_eq "$OUT" $((free_all - BYTES)) "the target's bytes are used on the GPU"
ctl lock "$PID" && assert_eq "$OUT" CUDA_SUCCESS "lock"
ctl state "$PID" && assert_eq "$OUT" LOCKED "after lock"
ctl checkpoint "$PID" && assert_eq "$OUT" CUDA_SUCCESS "checkpoint"
ctl state "$PID" && assert_eq "$OUT" CHECKPOINTED "after checkpoint"
ctl procs && assert_eq "$OUT" "" "NVML lists no process while the target is checkpointed"
ctl free && assert_eq "$OUT" "$free_all" "the GPU's memory is all free while the target is checkpointed"
ctl restore "$PID" && assert_eq "$OUT" CUDA_SUCCESS "restore"
ctl state "$PID" && assert_eq "$OUT" LOCKED "a restore leaves the process locked"
ctl procs && assert_eq "$OUT" "$PID $BYTES" "the restored target holds its bytes again"
say "check-after $E2E_TMP/unlocked"
assert_eq "$LINE" calling "the target calls CUDA while locked"
sleep 0.5 # the call is blocked: a call that went through would read no marker below
touch "$E2E_TMP/unlocked"
ctl unlock "$PID" && assert_eq "$OUT" CUDA_SUCCESS "unlock"
read -r -t 30 LINE <&"${TGT[0]}" || true
assert_eq "$LINE" "ok $BYTES marker yes" "every byte back, and the call made while locked returned after unlock"
ctl state "$PID" && assert_eq "$OUT" RUNNING "after unlock"
ctl tid "$PID"
[ -d "/proc/$PID/task/$OUT" ] || fail "the checkpoint thread $OUT is no thread of $PID"
tid=$OUT
ctl state "$tid" && assert_eq "$OUT" RUNNING "a thread id names its process"

# 2. Wrong transitions.
for op in checkpoint restore unlock; do
  ctl "$op" "$PID"
  assert_eq "$OUT" CUDA_ERROR_ILLEGAL_STATE "$op on a RUNNING process"
done
ctl lock "$PID"
for op in lock restore; do
  ctl "$op" "$PID"
  assert_eq "$OUT" CUDA_ERROR_ILLEGAL_STATE "$op on a LOCKED process"
done
ctl checkpoint "$PID"
for op in lock checkpoint unlock; do
  ctl "$op" "$PID"
  assert_eq "$OUT" CUDA_ERROR_ILLEGAL_STATE "$op on a CHECKPOINTED process"
done
ctl state "$PID" && assert_eq "$OUT" CHECKPOINTED "wrong transitions change nothing"
ctl restore "$PID" && ctl unlock "$PID" && assert_eq "$OUT" CUDA_SUCCESS "restore and unlock after wrong transitions"
say check && assert_eq "$LINE" "ok $BYTES" "every byte after a second cycle"
ctl state $$ && assert_eq "$OUT" CUDA_ERROR_NOT_INITIALIZED "a process without CUDA"

# 3. A lock waits for submitted work.
say "busy 600000" && assert_eq "$LINE" launched "a kernel of 10 minutes"
ctl lock "$PID" 300 && assert_eq "$OUT" CUDA_ERROR_TIMEOUT "a lock that the submitted work outlasts"
ctl state "$PID" && assert_eq "$OUT" RUNNING "a timed-out lock leaves the process running"
stop_target

# 4. Restore without the memory.
for mode in retry poison; do
  start_target GPUFRAC_FAKE_CUDA_RESTORE_OOM=$mode
  ctl lock "$PID" && ctl checkpoint "$PID" && assert_eq "$OUT" CUDA_SUCCESS "checkpoint ($mode)"
  "$CTL" fill $((free_all - BYTES + MIB)) >"$E2E_TMP/fill.out" &
  FILL_PID=$!
  for _ in $(seq 300); do grep -q . "$E2E_TMP/fill.out" && break; sleep 0.1; done
  assert_eq "$(cat "$E2E_TMP/fill.out")" filled "another process takes the GPU's memory ($mode)"
  ctl restore "$PID" && assert_eq "$OUT" CUDA_ERROR_OUT_OF_MEMORY "a restore the GPU cannot hold ($mode)"
  ctl state "$PID" && assert_eq "$OUT" CHECKPOINTED "a refused restore leaves the process checkpointed ($mode)"
  kill "$FILL_PID" && wait "$FILL_PID" 2>/dev/null || true
  ctl restore "$PID"
  if [ "$mode" = retry ]; then
    assert_eq "$OUT" CUDA_SUCCESS "the restore once the memory is free"
    ctl unlock "$PID" && say check && assert_eq "$LINE" "ok $BYTES" "every byte after a refused restore"
  else
    assert_eq "$OUT" CUDA_ERROR_OPERATING_SYSTEM "a restore after a refused one (poison, driver 580.95.05)"
    ctl unlock "$PID" && assert_eq "$OUT" CUDA_ERROR_ILLEGAL_STATE "unlock of the poisoned process"
  fi
  stop_target
done

# 5. Killed while checkpointed, or while locked.
for at in checkpoint lock; do
  start_target
  ctl lock "$PID"
  [ "$at" = checkpoint ] && ctl checkpoint "$PID"
  stop_target
  ctl free && assert_eq "$OUT" "$free_all" "a process killed at $at frees the GPU's memory"
  ctl procs && assert_eq "$OUT" "" "NVML lists nothing after the kill at $at"
  ctl state "$PID" && assert_eq "$OUT" CUDA_ERROR_NOT_INITIALIZED "the pid of a process killed at $at"
done
finish
