#!/bin/bash
# Two containers in one cgroup (the same linux.cgroupsPath in both specs; real runc, gpufrac-hook,
# the shim, the reclaimer, a simulated 40 GB GPU whose memory every container shares). The kernel
# cannot tell their processes apart, so the reclaimer attributes none of them:
#  1. A (request 10Gi, limit 30Gi) borrows 24 GiB alone; B (request 20Gi) joins A's cgroup and
#     allocates past the free memory: nobody is stopped (B's own process was, when the first share
#     of the cgroup took its processes), B's allocation fails with the shim's line saying why,
#     status and the log say why;
#  2. neither borrows while they share it: A, back under its request, gets no more than its request.
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/../containers.sh"
source "$(dirname "$0")/burst_lib.sh"
e2e_tmp
P=gpufrac-e2e-burstcg-$$
CG=/gpufrac-e2e-burstcg-$$
e2e_on_exit() {
  runc_cleanup "$P"
  stop_reclaimer
  local d
  for d in /sys/fs/cgroup/*$CG /sys/fs/cgroup/*/*$CG; do [ -d "$d" ] && rmdir "$d" 2>/dev/null || true; done
}
burst_node a100-40gb-x1.yaml
shared_bundle() {
  agent_bundle "$@"
  jq --arg cg "$CG" '.linux.cgroupsPath = $cg' "$1/config.json" >"$1/config.json.new" && mv "$1/config.json.new" "$1/config.json"
}

# 1. A borrows alone, B joins its cgroup and needs memory back.
shared_bundle "$E2E_TMP/a" gpufrac.io/memory=10Gi gpufrac.io/memory-limit=30Gi
agent_start "$P-a" "$E2E_TMP/a"
assert_eq "$RC:${REPLY%% *}" "0:ready" "A starts: $OUT"
wait_reclaimer
agent_fill "$P-a" 1024 24
assert_eq "$OKS" 24 "A borrows 24 GiB while alone in the cgroup"
shared_bundle "$E2E_TMP/b" gpufrac.io/memory=20Gi
agent_start "$P-b" "$E2E_TMP/b"
assert_eq "$RC:${REPLY%% *}" "0:ready" "B starts in A's cgroup: $OUT"
B_PID=${REPLY#ready }
A_CG=$(grep memory "/proc/$(runc state "$P-a" | jq -r .pid)/cgroup")
assert_eq "$(grep memory "/proc/$B_PID/cgroup")" "$A_CG" "A and B are in one cgroup"
agent_fill "$P-b" 1024 16
assert_eq "$OKS:$REPLY" "15:oom 2" "B gets the 15 GiB that are free, then CUDA_ERROR_OUT_OF_MEMORY"
assert_contains "$(cat "$E2E_TMP/b.err")" \
  "gpufrac: cuMemAlloc_v2 of 1073741824 refused on $GPU: this container shares its cgroup with another share of the GPU, so the reclaimer cannot tell their processes apart: it takes no memory back for it, and neither may borrow; give each container its own cgroup" \
  "the shim's one line says why"
agent "$P-b" i
assert_eq "${REPLY%% *}" info "B's process was not stopped"
agent "$P-a" i
assert_eq "${REPLY%% *}" info "nor A's"
LOG=$(cat "$E2E_TMP/gpufrac.log")
assert_not_contains "$LOG" "stopped process" "the reclaimer stopped nothing"
assert_contains "$LOG" "reclaim: $P-a shares a cgroup with $P-b on $GPU: the kernel cannot tell their processes apart; neither borrows, and nothing is taken back for either" \
  "the log says why"
run "$GPUFRAC" status --json
assert_eq "$(jq -c '[.reclaims.stopped, ([.reclaims.untold[] | [.container, .with[0]]] | sort)]' <<<"$OUT")" \
  "[0,[[\"$P-a\",\"$P-b\"],[\"$P-b\",\"$P-a\"]]]" "status --json names both"
run "$GPUFRAC" status
assert_contains "$OUT" "Shares that share a cgroup (the kernel cannot tell their processes apart: neither borrows, and nothing is taken back for either)" \
  "status says why"
assert_contains "$OUT" "  $P-a on GPU 0: one cgroup with $P-b; its limit is its request" "status names A's neighbour"

# 2. Neither borrows: A, back at 5 GiB, gets its request and no more.
for _ in $(seq 19); do agent "$P-a" f; done
agent_fill "$P-a" 1024 10
assert_eq "$OKS:$REPLY" "5:oom 2" "A gets up to its request (10 GiB), not past it"
agent_stop "$P-b"
agent_stop "$P-a"
assert_eq "$(jq '.entries | length' "$E2E_TMP/state/ledger.json")" 0 "both released"
