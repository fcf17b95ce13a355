#!/bin/bash
# Requests that fit are never hurt: a few hundred random steps of allocate, free, start and stop over
# 4 containers (real runc, every other container through gpufrac-hook or gpufrac-runtime, the shim,
# the reclaimer; a simulated 40 GB GPU whose memory every container shares). Each container has a random request and either no limit or one above it.
# After every step:
#   - every container's use (what the test knows it holds, and what gpufrac status reads) stays
#     within its limit;
#   - the requests booked on the GPU never pass its memory;
#   - an allocation that keeps a container within its request never fails (a borrower holding the
#     memory is stopped: burst.reclaim kill), and only a container past its request is ever stopped.
# BURST_STEPS (default 300) and BURST_SEED (default 1) choose the run; a seed repeats its steps.
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/../containers.sh"
source "$(dirname "$0")/../wrapper.sh"
source "$(dirname "$0")/burst_lib.sh"
e2e_tmp
P=gpufrac-e2e-burstrnd-$$
e2e_on_exit() { runc_cleanup "$P"; stop_reclaimer; }
STEPS=${BURST_STEPS:-300}
RANDOM=${BURST_SEED:-1}
echo "seed ${BURST_SEED:-1}, $STEPS steps"
burst_node a100-40gb-x1.yaml
declare -A REQ LIM USED HELD   # MiB; HELD: the sizes held, space-separated, latest last
NAMES=() SERIAL=0 STARTS=0 REFUSED=0 ALLOCS=0 OWNER_ALLOCS=0 STOPPED=0 BORROWS=0

# pick <choice...>: one of them in $PICKED (no subshell: a subshell's RANDOM is reseeded, and the
# run would not repeat from its seed).
pick() {
  local a=("$@")
  PICKED=${a[RANDOM % ${#a[@]}]}
}

start_one() {
  local name=$P-$SERIAL req lim
  SERIAL=$((SERIAL + 1))
  pick 2048 4096 6144 8192 10240
  req=$PICKED
  pick "$req" $((req + 16384)) $((req + 24576)) $((req + 32768))
  lim=$PICKED
  local ann=(gpufrac.io/memory=${req}Mi)
  [ "$lim" != "$req" ] && ann+=(gpufrac.io/memory-limit=${lim}Mi)
  # Every other container through gpufrac-runtime (its own hooks), the rest through gpufrac-hook.
  if [ $((SERIAL % 2)) = 0 ]; then
    BURST_PLAIN=1 agent_bundle "$E2E_TMP/$name" "${ann[@]}"
    agent_start "$name" "$E2E_TMP/$name" "$WRAPPER"
  else
    agent_bundle "$E2E_TMP/$name" "${ann[@]}"
    agent_start "$name" "$E2E_TMP/$name"
  fi
  STARTS=$((STARTS + 1))
  if [ "$RC" != 0 ]; then
    assert_contains "$OUT" "no GPU has" "a start is refused only for want of room: $OUT"
    REFUSED=$((REFUSED + 1))
    eval "exec ${AGENT_FD[$name]}>&-"
    runc delete -f "$name" >/dev/null 2>&1 || true
    return
  fi
  [ "${REPLY%% *}" = ready ] || fail "$name starts: $REPLY"
  NAMES+=("$name")
  REQ[$name]=$req LIM[$name]=$lim USED[$name]=0 HELD[$name]=""
}

forget() {
  local name=$1 n
  local keep=()
  for n in "${NAMES[@]}"; do [ "$n" != "$name" ] && keep+=("$n"); done
  NAMES=("${keep[@]}")
  unset "REQ[$name]" "LIM[$name]" "USED[$name]" "HELD[$name]"
}

# A container whose agent is gone was stopped by the reclaimer: it must have been past its request.
check_stopped() {
  local n
  for n in "${NAMES[@]}"; do
    [ "$(runc state "$n" 2>/dev/null | jq -r .status)" = running ] && continue
    STOPPED=$((STOPPED + 1))
    [ "${USED[$n]}" -gt "${REQ[$n]}" ] || fail "$n was stopped within its request (${USED[$n]} of ${REQ[$n]} MiB)"
    agent_stop "$n"
    forget "$n"
  done
}

alloc_one() {
  local name=$1 size
  pick 512 1024 2048 3072 4096
  size=$PICKED
  local within=$(((USED[$name] + size) <= REQ[$name]))
  agent "$name" "a $size"
  ALLOCS=$((ALLOCS + 1))
  [ "$within" = 1 ] && OWNER_ALLOCS=$((OWNER_ALLOCS + 1))
  if [ "$REPLY" = ok ]; then
    USED[$name]=$((USED[$name] + size))
    HELD[$name]="${HELD[$name]} $size"
    if [ "${USED[$name]}" -gt "${REQ[$name]}" ]; then BORROWS=$((BORROWS + 1)); fi
  elif [ "$within" = 1 ]; then
    fail "$name: ${size} MiB within its request (${USED[$name]} of ${REQ[$name]} MiB held) failed: [$REPLY]"
  fi
}

free_one() {
  local name=$1 size
  [ -z "${HELD[$name]// /}" ] && return
  agent "$name" f
  size=${HELD[$name]##* }
  assert_eq "$REPLY" "freed $size" "$name frees its latest allocation"
  HELD[$name]=${HELD[$name]% *}
  USED[$name]=$((USED[$name] - size))
}

check_invariants() {
  local n booked
  for n in "${NAMES[@]}"; do
    [ "${USED[$n]}" -le "${LIM[$n]}" ] || fail "$n holds ${USED[$n]} MiB past its limit ${LIM[$n]}"
  done
  booked=$(jq '[.entries[].bytes] | add // 0' "$E2E_TMP/state/ledger.json")
  [ "$booked" -le $((GPU_MIB << 20)) ] || fail "the requests booked ($booked) pass the GPU ($GPU_MIB MiB)"
  run "$GPUFRAC" status --json
  while read -r used limit; do
    [ "$used" = null ] || [ "$used" -le "$limit" ] || fail "status: a share uses $used of its limit $limit"
  done < <(jq -r '.devices[0].shares[] | "\(.used_bytes) \(.limit // .bytes)"' <<<"$OUT")
}

for step in $(seq "$STEPS"); do
  pick start start stop alloc alloc alloc alloc alloc alloc alloc alloc free
  op=$PICKED
  [ "${#NAMES[@]}" = 0 ] && op=start
  [ "$op" = start ] && [ "${#NAMES[@]}" -ge 4 ] && op=alloc
  case $op in
    start) start_one ;;
    stop)
      pick "${NAMES[@]}"
      agent_stop "$PICKED"
      forget "$PICKED"
      ;;
    alloc) pick "${NAMES[@]}" && alloc_one "$PICKED" ;;
    free) pick "${NAMES[@]}" && free_one "$PICKED" ;;
  esac
  check_stopped
  check_invariants
  [ "$E2E_FAILURES" -gt 0 ] && { echo "failed at step $step ($op)"; break; }
done
echo "starts $STARTS (refused $REFUSED), allocations $ALLOCS (within the request $OWNER_ALLOCS, past it $BORROWS), reclaims $STOPPED"
[ "$OWNER_ALLOCS" -gt 0 ] || fail "no allocation within a request was tried"
[ "$STOPPED" -gt 0 ] || fail "no borrower was ever stopped: the steps never put an owner in need (seed ${BURST_SEED:-1})"
for n in "${NAMES[@]}"; do agent_stop "$n"; done
assert_eq "$(jq '.entries | length' "$E2E_TMP/state/ledger.json")" 0 "every share released"
finish
