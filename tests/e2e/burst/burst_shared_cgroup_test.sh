#!/bin/bash
# Two containers in one cgroup (the same linux.cgroupsPath in both specs; real runc, gpufrac-hook,
# gpufrac-runtime, the shim, the reclaimer, a simulated 40 GB GPU whose memory every container
# shares). The kernel cannot tell their processes apart:
#  1. A (request 10Gi, limit 30Gi) borrows 24 GiB alone; B (request 20Gi) naming A's cgroup is
#     refused, through gpufrac-hook and through gpufrac-runtime, with one line naming
#     linux.cgroupsPath: nothing is booked or written for B, A keeps its memory and runs on (a loan
#     taken alone could not be taken back once B shared the cgroup);
#  2. N (request 20Gi, no limit) and then M (request 10Gi, limit 30Gi) in one cgroup: M is admitted
#     (N may not borrow, so no loan is out), the reclaimer attributes neither's processes, status and
#     the log say why, and neither borrows: M gets its request and no more.
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/../containers.sh"
source "$(dirname "$0")/../wrapper.sh"
source "$(dirname "$0")/burst_lib.sh"
e2e_tmp
P=gpufrac-e2e-burstcg-$$
CG=/gpufrac-e2e-burstcg-$$
e2e_on_exit() {
  runc_cleanup "$P"
  stop_reclaimer
  local d
  for d in /sys/fs/cgroup/*$CG* /sys/fs/cgroup/*/*$CG*; do [ -d "$d" ] && rmdir "$d" 2>/dev/null || true; done
}
# B, refused, runs in its own PID namespace (as a pod's containers do): runc tears a refused
# container down by killing every process of its cgroup when it shares the host's (A's too).
burst_node a100-40gb-x1.yaml "require-host-pid: false"
# shared_bundle <dir> <cgroupsPath> [annotation...]
shared_bundle() {
  local dir=$1 cg=$2
  shift 2
  agent_bundle "$dir" "$@"
  jq --arg cg "$cg" '.linux.cgroupsPath = $cg' "$dir/config.json" >"$dir/config.json.new" && mv "$dir/config.json.new" "$dir/config.json"
}
own_pid_ns() { jq '.linux.namespaces += [{type: "pid"}]' "$1/config.json" >"$1/config.json.new" && mv "$1/config.json.new" "$1/config.json"; }
REFUSAL="linux.cgroupsPath: this container's cgroup is that of $P-a, which may borrow memory on"
LEDGER=$E2E_TMP/state/ledger.json

# 1. A borrows alone; B naming A's cgroup is refused, A unharmed, nothing booked for B.
shared_bundle "$E2E_TMP/a" "$CG" gpufrac.io/memory=10Gi gpufrac.io/memory-limit=30Gi
agent_start "$P-a" "$E2E_TMP/a"
assert_eq "$RC:${REPLY%% *}" "0:ready" "A starts: $OUT"
wait_reclaimer
agent_fill "$P-a" 1024 24
assert_eq "$OKS" 24 "A borrows 24 GiB while alone in the cgroup"
shared_bundle "$E2E_TMP/b" "$CG" gpufrac.io/memory=20Gi
own_pid_ns "$E2E_TMP/b"
agent_start "$P-b" "$E2E_TMP/b"
[ "$RC" != 0 ] || fail "B, in A's cgroup, does not start through gpufrac-hook"
assert_contains "$OUT" "$REFUSAL" "the hook's one line names the field and A"
assert_contains "$OUT" "give each container its own cgroup (a distinct linux.cgroupsPath)" "and says what to do"
runc delete -f "$P-b" >/dev/null 2>&1 || true
BURST_PLAIN=1 shared_bundle "$E2E_TMP/w" "$CG" gpufrac.io/memory=20Gi
own_pid_ns "$E2E_TMP/w"
agent_start "$P-w" "$E2E_TMP/w" "$WRAPPER"
[ "$RC" != 0 ] || fail "nor through gpufrac-runtime"
assert_contains "$OUT" "$REFUSAL" "gpufrac-runtime says the same line"
runc delete -f "$P-w" >/dev/null 2>&1 || true
assert_eq "$(jq -c '[.entries[].container_id]' "$LEDGER")" "[\"$P-a\"]" "nothing is booked for B"
assert_eq "$(ls "$E2E_TMP/state/containers" | grep -c -- "$P-[bw]" || true)" 0 "nor any file written for B"
assert_eq "$(runc state "$P-a" | jq -r .status)" running "A runs on"
agent "$P-a" i
assert_eq "${REPLY%% *}" info "A's process answers"
agent_fill "$P-a" 1024 1
assert_eq "$OKS" 1 "A keeps its loan and may still borrow (25 GiB)"
assert_not_contains "$(cat "$E2E_TMP/gpufrac.log")" "stopped process" "the reclaimer stopped nothing"
agent_stop "$P-a"

# 2. N (no limit), then M (a limit) in one cgroup: admitted, neither borrows, status says why.
shared_bundle "$E2E_TMP/n" "$CG-2" gpufrac.io/memory=20Gi
agent_start "$P-n" "$E2E_TMP/n"
assert_eq "$RC:${REPLY%% *}" "0:ready" "N starts: $OUT"
shared_bundle "$E2E_TMP/m" "$CG-2" gpufrac.io/memory=10Gi gpufrac.io/memory-limit=30Gi
agent_start "$P-m" "$E2E_TMP/m"
assert_eq "$RC:${REPLY%% *}" "0:ready" "M starts in N's cgroup (N holds no loan): $OUT"
M_PID=${REPLY#ready }
N_CG=$(grep memory "/proc/$(runc state "$P-n" | jq -r .pid)/cgroup")
assert_eq "$(grep memory "/proc/$M_PID/cgroup")" "$N_CG" "N and M are in one cgroup"
wait_reclaimer
agent_fill "$P-m" 1024 12
assert_eq "$OKS" 10 "M gets its request (10 GiB) and does not borrow"
agent_fill "$P-n" 1024 20
assert_eq "$OKS" 20 "N gets its request"
agent "$P-m" i
assert_eq "${REPLY%% *}" info "M's process was not stopped"
LOG=$(cat "$E2E_TMP/gpufrac.log")
assert_not_contains "$LOG" "stopped process" "the reclaimer stopped nothing"
assert_contains "$LOG" "reclaim: $P-n shares a cgroup with $P-m on $GPU: the kernel cannot tell their processes apart; neither borrows, and nothing is taken back for either" \
  "the log says why"
run "$GPUFRAC" status --json
assert_eq "$(jq -c '[.reclaims.stopped, ([.reclaims.untold[] | [.container, .with[0]]] | sort)]' <<<"$OUT")" \
  "[0,[[\"$P-m\",\"$P-n\"],[\"$P-n\",\"$P-m\"]]]" "status --json names both"
run "$GPUFRAC" status
assert_contains "$OUT" "Shares that share a cgroup (the kernel cannot tell their processes apart: neither borrows, and nothing is taken back for either)" \
  "status says why"
assert_contains "$OUT" "  $P-m on GPU 0: one cgroup with $P-n; its limit is its request" "status names M's neighbour"
agent_stop "$P-m"
agent_stop "$P-n"
assert_eq "$(jq '.entries | length' "$LEDGER")" 0 "both released"
finish
