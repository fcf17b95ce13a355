#!/bin/bash
# Burstable memory with containers in their own PID namespaces (require-host-pid: false), real runc,
# on a simulated 40 GB GPU: the driver's view names processes by host pid (the fake driver
# translates, as the kernel driver knows them), and the reclaimer finds a borrower's processes by it
# and their cgroups, never by a pid a container wrote. A (request 10Gi, limit 30Gi, own namespace)
# takes 25 GiB; C (request 2Gi, the host's namespace: a mixed node) holds 1 GiB; B (request 20Gi,
# own namespace) takes its 20 GiB: A's process, pid 1 in its namespace, is stopped by its host pid,
# C is untouched, status and the log name A's host pid.
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/../containers.sh"
source "$(dirname "$0")/burst_lib.sh"
e2e_tmp
P=gpufrac-e2e-burstns-$$
e2e_on_exit() { runc_cleanup "$P"; stop_reclaimer; }
entries() { jq '.entries | length' "$E2E_TMP/state/ledger.json"; }
own_pidns() { jq '.linux.namespaces += [{"type": "pid"}]' "$1/config.json" >"$1/c.json" && mv "$1/c.json" "$1/config.json"; }

burst_node a100-40gb-x1.yaml "require-host-pid: false"
agent_bundle "$E2E_TMP/a" gpufrac.io/memory=10Gi gpufrac.io/memory-limit=30Gi
own_pidns "$E2E_TMP/a"
agent_start "$P-a" "$E2E_TMP/a"
assert_eq "$RC:$REPLY" "0:ready 1" "A starts in its own PID namespace, its agent pid 1 there: $OUT"
wait_reclaimer
A_HOST=$(runc state "$P-a" | jq -r .pid)
agent_fill "$P-a" 1024 25
assert_eq "$OKS" 25 "A allocates 25 GiB while alone (request 10Gi, limit 30Gi)"
run "$GPUFRAC" status --json
assert_eq "$(jq -c --arg c "$P-a" '.devices[0].shares[] | select(.container_id == $c) | [.used_bytes, .borrowed_bytes]' <<<"$OUT")" \
  "[$((25 * GIB)),$((15 * GIB))]" "status: what A uses and borrows, though its pids are its namespace's"

agent_bundle "$E2E_TMP/c" gpufrac.io/memory=2Gi
agent_start "$P-c" "$E2E_TMP/c"
assert_eq "$RC:${REPLY%% *}" "0:ready" "C starts in the host's namespace: $OUT"
agent_fill "$P-c" 1024 1
assert_eq "$OKS" 1 "C allocates 1 GiB"

agent_bundle "$E2E_TMP/b" gpufrac.io/memory=20Gi
own_pidns "$E2E_TMP/b"
agent_start "$P-b" "$E2E_TMP/b"
assert_eq "$RC:$REPLY" "0:ready 1" "B is admitted in its own PID namespace: $OUT"
agent_fill "$P-b" 1024 20
assert_eq "$OKS" 20 "B allocates its 20 GiB"
agent_gone "$P-a" || fail "A's process is stopped"
assert_contains "$(cat "$E2E_TMP/gpufrac.log")" "reclaim: stopped process $A_HOST of $P-a" "the log names A's host pid"
agent "$P-c" i
assert_eq "${REPLY%% *}" info "C, within its request, runs on"
run "$GPUFRAC" status --json
assert_eq "$(jq -c '.reclaims | [.stopped, .events[0].victim, .events[0].owner, .events[0].pid]' <<<"$OUT")" \
  "[1,\"$P-a\",\"$P-b\",$A_HOST]" "status --json: one reclaim, A's process by its host pid, for B"
for c in a b c; do agent_stop "$P-$c"; done
assert_eq "$(entries)" 0 "all released"
finish
