#!/bin/bash
# burst.reclaim: swap with the reclaimer killed at each step of a swap (GPUFRAC_FAULT, core/fault.hpp,
# set on the reclaimer the hook starts; its keeper, which does not inherit it, takes over):
#   swap-after-lock        A's process locked, not checkpointed: the keeper's reclaimer unlocks it,
#                          then swaps it out for B's request
#   swap-after-checkpoint  A's process checkpointed, the state not yet "swapped": it stays swapped
#   swap-before-restore    B gone, the state "in", nothing restored: the next reclaimer restores it
#   swap-after-restore     restored, not unlocked: the next reclaimer unlocks it
# Each time B gets its whole request, A ends RUNNING with every byte of its pattern, no swap state is
# left, and the log says what the next reclaimer found.
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/../containers.sh"
source "$(dirname "$0")/burst_lib.sh"
e2e_tmp
P=gpufrac-e2e-swapcrash-$$
CTL=$GPUFRAC_BUILD_DIR/tests/swap/swap_ctl
[ -x "$CTL" ] || { echo "FAIL: swap_ctl is not built (ninja burst_tests)"; exit 1; }
e2e_on_exit() { runc_cleanup "$P"; stop_reclaimer; }
swap_state() { LD_LIBRARY_PATH=$GPUFRAC_FAKES_DIR "$CTL" state "$1" 2>&1 || true; }
burst_node a100-40gb-x1.yaml
sed -i "s|^burst: .*|burst: {reclaim: swap, context-allowance: 0, cuda-library: $GPUFRAC_FAKES_DIR/libcuda.so.1}|" \
  "$GPUFRAC_CONFIG"
agent_bundle "$E2E_TMP/a" gpufrac.io/memory=10Gi gpufrac.io/memory-limit=30Gi
agent_bundle "$E2E_TMP/b" gpufrac.io/memory=20Gi
PLAIN_HOOK=$(cat "$HOOK")
# until <what> <command...>: up to 10 s for the command to succeed.
until_ok() {
  local what=$1 _
  shift
  for _ in $(seq 400); do "$@" && return 0; sleep 0.025; done
  fail "$what"
}
has_keeper() { [ -n "$(keeper_pid)" ]; }
is_state() { [ "$(swap_state "$1")" = "$2" ]; }
no_swap_file() { ! ls "$E2E_TMP/state/containers/"*/swap >/dev/null 2>&1; }

for point in swap-after-lock swap-after-checkpoint swap-before-restore swap-after-restore; do
  stop_reclaimer
  # The hook (and the reclaimer it starts) carries the fault.
  sed "s|^export |export GPUFRAC_FAULT=$point |" <<<"$PLAIN_HOOK" >"$HOOK"
  : >"$E2E_TMP/gpufrac.log"
  agent_start "$P-a-$point" "$E2E_TMP/a"
  A_PID=${REPLY#ready }
  wait_reclaimer
  until_ok "a keeper runs beside the reclaimer ($point)" has_keeper
  FIRST=$(reclaimer_pid)
  agent "$P-a-$point" "w 16"
  agent_fill "$P-a-$point" 1024 24
  assert_eq "$REPLY:$OKS" "ok:24" "A writes its pattern and takes 24 GiB ($point)"
  agent_start "$P-b-$point" "$E2E_TMP/b"
  agent_fill "$P-b-$point" 1024 20
  assert_eq "$OKS" 20 "B gets its whole request although a reclaimer died ($point)"
  assert_eq "$(swap_state "$A_PID")" CHECKPOINTED "A is swapped out ($point)"
  agent_stop "$P-b-$point"
  until_ok "A is swapped in once B is gone ($point)" is_state "$A_PID" RUNNING
  [ "$(reclaimer_pid)" != "$FIRST" ] || fail "the reclaimer carrying the fault died at $point"
  agent "$P-a-$point" c
  assert_eq "$REPLY" "checked 16" "every byte of A's pattern ($point)"
  until_ok "no swap state is left ($point)" no_swap_file
  LOG=$(cat "$E2E_TMP/gpufrac.log")
  assert_contains "$LOG" "its keeper takes over" "the keeper took over ($point)"
  case $point in
    swap-after-lock) assert_contains "$LOG" "process $A_PID of $P-a-$point was left locked by a reclaimer that stopped (out): unlocked" "unlocked" ;;
    swap-after-checkpoint | swap-before-restore) assert_contains "$LOG" "$P-a-$point stays swapped out" "kept swapped" ;;
    swap-after-restore) assert_contains "$LOG" "process $A_PID of $P-a-$point was left locked by a reclaimer that stopped (in): unlocked" "unlocked" ;;
  esac
  agent "$P-a-$point" x
  assert_eq "$REPLY" bye "A exits normally ($point)"
  agent_stop "$P-a-$point"
done
echo "$PLAIN_HOOK" >"$HOOK"
stop_reclaimer
finish
