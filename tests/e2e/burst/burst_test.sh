#!/bin/bash
# Burstable memory with real runc on a simulated 40 GB GPU (a100-40gb-x1: 40536 MiB) whose memory
# every container shares, through gpufrac-hook and gpufrac-runtime, the shim and the reclaimer:
#  1. A (request 10Gi, limit 30Gi) takes 25 GiB while alone; B (request 20Gi) is admitted and takes
#     20 GiB: A's process is stopped, B succeeds, status, metrics and the log show the reclaim;
#  2. burst.reclaim: refuse: B's allocation past the free memory fails with the shim's line, A runs;
#     a reclaimer killed with its keeper is started again (by gc), one leaves once no burst booking is left, and gc
#     then removes its files;
#  3. on-limit: wait (5 s): an allocation past the limit succeeds when the container's other
#     process frees within the timeout, and fails with the usual line when nothing frees;
#  4. NVIDIA_GPU_MEMORY_REQUEST=8192 NVIDIA_GPU_MEMORY_LIMIT=16384 through gpufrac-runtime: exactly
#     that request and limit, the variables left as they are (gpufrac's values are the same);
#  5. bad input: one line, nothing booked, no container directory left;
#  6. the simulated r615 machine: the driver holds soft = request and hard = limit on the
#     container's cgroup; at release soft is zeroed first, then the limit is gone; under MPS the
#     driver evicts the process past its soft limit for one within its own.
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/../containers.sh"
source "$(dirname "$0")/../wrapper.sh"
source "$(dirname "$0")/burst_lib.sh"
e2e_tmp
P=gpufrac-e2e-burst-$$
e2e_on_exit() { runc_cleanup "$P"; stop_reclaimer; }
entries() { jq '.entries | length' "$E2E_TMP/state/ledger.json"; }

# 1. A bursts alone; B's allocation within its request gets A's process stopped.
burst_node a100-40gb-x1.yaml
agent_bundle "$E2E_TMP/a" gpufrac.io/memory=10Gi gpufrac.io/memory-limit=30Gi
agent_start "$P-a" "$E2E_TMP/a"
assert_eq "$RC:${REPLY%% *}" "0:ready" "A starts: $OUT"
wait_reclaimer
A_PID=${REPLY#ready }
agent_fill "$P-a" 1024 25
assert_eq "$OKS" 25 "A allocates 25 GiB while alone (request 10Gi, limit 30Gi)"
agent "$P-a" i
assert_eq "$REPLY" "info 5120 30720 rc=0" "A's cuMemGetInfo: total = its limit, free = what it may still take"
run "$GPUFRAC" status --json
assert_eq "$(jq -c '.devices[0].shares[0] | [.request_bytes, .limit_bytes, .used_bytes, .borrowed_bytes]' <<<"$OUT")" \
  "[$((10 * GIB)),$((30 * GIB)),$((25 * GIB)),$((15 * GIB))]" "status: request, limit, used and borrowed"
run "$GPUFRAC" status
assert_contains "$OUT" "LIMIT" "the table has a LIMIT column"
assert_contains "$OUT" "25.0 GiB (15.0 GiB borrowed)" "the table marks what A borrows"
assert_contains "$OUT" "Burst reclaimer: pid $(reclaimer_pid) (burst.reclaim: kill)" "status says the reclaimer runs"
agent_bundle "$E2E_TMP/b" gpufrac.io/memory=20Gi
agent_start "$P-b" "$E2E_TMP/b"
assert_eq "$RC:${REPLY%% *}" "0:ready" "B is admitted (10Gi + 20Gi booked of 39.6 GiB): $OUT"
agent_fill "$P-b" 1024 20
assert_eq "$OKS" 20 "B allocates its 20 GiB"
agent_gone "$P-a" || fail "A's process is stopped"
assert_contains "$(cat "$E2E_TMP/gpufrac.log")" "reclaim: stopped process $A_PID of $P-a" "the log names the reclaim"
run "$GPUFRAC" status --json
assert_eq "$(jq -c '.reclaims | [.stopped, (.events | length), .events[0].victim, .events[0].owner, .events[0].pid]' <<<"$OUT")" \
  "[1,1,\"$P-a\",\"$P-b\",$A_PID]" "status --json: one reclaim, A's process for B"
run "$GPUFRAC" status
assert_contains "$OUT" "stopped process $A_PID of $P-a" "status shows the reclaim"
run "$GPUFRAC" metrics --textfile "$E2E_TMP"
OUT=$(cat "$E2E_TMP/gpufrac.prom")
assert_contains "$OUT" "gpufrac_gpu_reclaims_total{gpu_index=\"0\",gpu_uuid=\"$GPU\"} 1" "metrics: reclaims per GPU"
assert_contains "$OUT" "gpufrac_share_request_bytes{" "metrics: request per share"
assert_contains "$OUT" "gpufrac_share_limit_bytes{" "metrics: limit per share"
assert_contains "$OUT" "gpufrac_share_borrowed_bytes{" "metrics: borrowed per share"
agent_stop "$P-a"
agent_stop "$P-b"
assert_eq "$(entries)" 0 "both released"

# 2. burst.reclaim: refuse: borrowers keep their loans; the owner fails with the shim's line.
stop_reclaimer
sed -i 's|^burst: .*|burst: {reclaim: refuse, context-allowance: 0}|' "$GPUFRAC_CONFIG"
agent_start "$P-a2" "$E2E_TMP/a"
wait_reclaimer
agent_fill "$P-a2" 1024 25
assert_eq "$OKS" 25 "A allocates 25 GiB"
agent_start "$P-b2" "$E2E_TMP/b"
agent_fill "$P-b2" 1024 20
assert_eq "$OKS:$REPLY" "14:oom 2" "B gets the 14 GiB that are free, then CUDA_ERROR_OUT_OF_MEMORY"
assert_contains "$(cat "$E2E_TMP/b.err")" \
  "gpufrac: cuMemAlloc_v2 of 1073741824 refused on $GPU: the GPU's memory is lent to containers past their requests, and this node keeps loans (burst.reclaim: refuse); it fails until they free it" \
  "the shim's one line"
agent "$P-a2" i
assert_eq "${REPLY%% *}" info "A keeps running"
run "$GPUFRAC" status --json
assert_eq "$(jq -c '.reclaims | [.stopped, .refused]' <<<"$OUT")" "[1,1]" "status counts the refusal"
agent "$P-a2" f
agent "$P-a2" f
agent_fill "$P-b2" 1024 2
assert_eq "$OKS" 2 "once A frees, B allocates"
agent_stop "$P-a2"
agent_stop "$P-b2"
sed -i 's|^burst: .*|burst: {reclaim: kill, context-allowance: 0}|' "$GPUFRAC_CONFIG"
stop_reclaimer

# The reclaimer's life: killed with its keeper (e2e.burst_keeper: alone, the keeper takes over), it
# is started again (here by gc); with no burst booking left it leaves by itself, and gc removes its
# files.
agent_start "$P-a3" "$E2E_TMP/a"
wait_reclaimer
OLD=$(reclaimer_pid)
for _ in $(seq 100); do [ -n "$(keeper_pid)" ] && break; sleep 0.05; done
stop_reclaimer
for _ in $(seq 100); do [ -z "$(reclaimer_pid)" ] && break; sleep 0.05; done
run "$GPUFRAC" gc
assert_contains "$OUT" "Started the burst reclaimer (a booking has a burst limit and none ran)." "gc starts a killed reclaimer again"
wait_reclaimer
[ -n "$(reclaimer_pid)" ] && [ "$(reclaimer_pid)" != "$OLD" ] || fail "a new reclaimer runs after gc"
agent_stop "$P-a3"
for _ in $(seq 200); do [ -z "$(reclaimer_pid)" ] && break; sleep 0.05; done
assert_eq "$(reclaimer_pid)" "" "with no burst booking left the reclaimer leaves by itself"
run "$GPUFRAC" gc
assert_contains "$OUT" "Removed the burst reclaimer's files (no booking has a burst limit)." "gc removes its files"
assert_eq "$(ls "$E2E_TMP/state" | grep -c -e reclaims.json -e reclaimer. || true)" 0 "nothing of the reclaimer is left"

# 3. on-limit: wait: two processes of one container of 4Gi; the second waits for the first.
mkdir -p "$E2E_TMP/w.io"
BURST_CMD="/bin/burst_agent <$E2E_TMP/w.io/p1.in >$E2E_TMP/w.io/p1.out 2>$E2E_TMP/w.io/p1.err & /bin/burst_agent <$E2E_TMP/w.io/p2.in >$E2E_TMP/w.io/p2.out 2>$E2E_TMP/w.io/p2.err; wait" \
  agent_bundle "$E2E_TMP/w" gpufrac.io/memory=4Gi gpufrac.io/on-limit=wait gpufrac.io/on-limit-timeout=5
jq --arg d "$E2E_TMP/w.io" '.mounts += [{destination: $d, type: "bind", source: $d, options: ["rbind", "rw"]}]' \
  "$E2E_TMP/w/config.json" >"$E2E_TMP/w.json" && mv "$E2E_TMP/w.json" "$E2E_TMP/w/config.json"
agent_fifo w1 "$E2E_TMP/w.io/p1" "$P-w"
agent_fifo w2 "$E2E_TMP/w.io/p2" "$P-w"
set +e
runc run -d --bundle "$E2E_TMP/w" "$P-w" </dev/null >"$E2E_TMP/w.log" 2>&1
RC=$?
set -e
assert_eq "$RC" 0 "a container with on-limit: wait: $(cat "$E2E_TMP/w.log")"
agent_wait w1 0
agent_wait w2 0
agent w1 "a 3072"
assert_eq "$REPLY" ok "the first process takes 3 GiB of its 4"
(sleep 2 && echo f >&"${AGENT_FD[w1]}") &
SECONDS=0
agent w2 "a 2048"
assert_eq "$REPLY" ok "the second's 2 GiB waited for the first's free (2 s of the 5 s timeout)"
[ "$SECONDS" -ge 1 ] || fail "the allocation waited for the free ($SECONDS s)"
wait
AGENT_N[w1]=$((AGENT_N[w1] + 1))
agent w1 "a 3072"
assert_eq "$REPLY" "oom 2" "nothing frees: after 5 s, CUDA_ERROR_OUT_OF_MEMORY"
assert_contains "$(cat "$E2E_TMP/w.io/p1.err")" "gpufrac: cuMemAlloc_v2 of 3221225472 refused: limit 4294967296 on $GPU, 2147483648 in use by this container" \
  "with the usual line"
runc kill "$P-w" KILL >/dev/null 2>&1 || true
agent_gone "$P-w" || true
runc delete -f "$P-w" >/dev/null 2>&1 || true

# 4. NVIDIA's variables through gpufrac-runtime: exactly that request and limit.
make_plain_bundle "$E2E_TMP/n" 'cat /run/gpufrac/limits; echo "env $NVIDIA_GPU_MEMORY_REQUEST $NVIDIA_GPU_MEMORY_LIMIT"'
jq '.process.env += ["NVIDIA_GPU_MEMORY_REQUEST=8192", "NVIDIA_GPU_MEMORY_LIMIT=16384"]' "$E2E_TMP/n/config.json" \
  >"$E2E_TMP/n.json" && mv "$E2E_TMP/n.json" "$E2E_TMP/n/config.json"
set +e
"$WRAPPER" create --bundle "$E2E_TMP/n" "$P-n" </dev/null >"$E2E_TMP/n.log" 2>&1
RC=$?
set -e
assert_eq "$RC" 0 "gpufrac-runtime create: $(cat "$E2E_TMP/n.log")"
assert_eq "$(jq -c '.entries[0] | [.bytes, .limit, .request]' "$E2E_TMP/state/ledger.json")" \
  "[$((8 * GIB)),$((16 * GIB)),\"memory=8Gi memory-limit=16Gi\"]" "the ledger books 8192 MiB with a 16384 MiB limit"
runc start "$P-n"
for _ in $(seq 100); do grep -q '^env ' "$E2E_TMP/n.log" && break; sleep 0.05; done
assert_contains "$(cat "$E2E_TMP/n.log")" "device $GPU $((16 * GIB))
burst $GPU $((8 * GIB))" "the container's limit file: the limit, and the request below it"
assert_contains "$(cat "$E2E_TMP/n.log")" "env 8192 16384" "NVIDIA's variables stay: gpufrac's values are the same"
runc delete -f "$P-n" >/dev/null 2>&1 || true
assert_eq "$(entries)" 0 "released at delete"
stop_reclaimer

# 5. Bad input: one line, nothing booked, nothing left behind.
for bad in "gpufrac.io/memory=10Gi gpufrac.io/memory-limit=8Gi|gpufrac.io/memory-limit: \"8Gi\" is below the request (gpufrac.io/memory \"10Gi\"); use a limit of at least the request" \
  "gpufrac.io/memory-limit=8Gi|gpufrac.io/memory-limit: is set without a request; add a memory or fraction request beside it (what is booked; the limit is the most the share may use)" \
  "gpufrac.io/mig-profile=1g.5gb gpufrac.io/memory-limit=8Gi|gpufrac.io/memory-limit: does not apply to gpufrac.io/mig-profile (a MIG instance's memory is its own); use it beside a memory or fraction request" \
  "gpufrac.io/memory=10Gi gpufrac.io/memory-limit=20Gi gpu-memory.limit=20480|gpufrac.io/memory-limit and gpu-memory.limit: both set; set only one of gpufrac.io/memory-limit or gpufrac.io/fraction-limit (aliases count as these)"; do
  IFS=' ' read -r -a ann <<<"${bad%%|*}"
  make_bundle "$E2E_TMP/bad" 'true' "${ann[@]}"
  run runc run --bundle "$E2E_TMP/bad" "$P-bad"
  OUT=${OUT//\\\"/\"}  # runc quotes the hook's line
  assert_contains "$OUT" "gpufrac-hook: ${bad#*|}" "refused: ${bad%%|*}"
  assert_eq "$(entries):$(ls "$E2E_TMP/state/containers" | wc -l)" "0:0" "nothing booked, nothing left: ${bad%%|*}"
  runc delete -f "$P-bad" >/dev/null 2>&1 || true
  rm -rf "$E2E_TMP/bad"
done
stop_reclaimer

# 6. The simulated r615 machine: the driver holds soft = request, hard = limit; soft zeroed first.
if [ -e /sys/fs/cgroup/cgroup.controllers ]; then
  CGROOT=/sys/fs/cgroup
elif [ -e /sys/fs/cgroup/unified/cgroup.controllers ]; then
  CGROOT=/sys/fs/cgroup/unified
else
  echo "no cgroup v2 hierarchy on this host: the r615 part is skipped"
  finish
  exit 0
fi
export GPUFRAC_FAKE_NVML_CGROUP_ROOT=$CGROOT
e2e_reset_state "$E2E_TMP/root" "$E2E_TMP/fake"
burst_node h100-80gb-x3-r615.yaml "cgroup-root: $CGROOT"
agent_bundle "$E2E_TMP/r" gpufrac.io/memory=10Gi gpufrac.io/memory-limit=30Gi gpufrac.io/gpu=0
jq '.linux.resources.devices += [{allow: true, type: "c", major: 195, access: "rwm"},
                                 {allow: true, type: "c", major: 508, access: "rwm"}]' "$E2E_TMP/r/config.json" \
  >"$E2E_TMP/r.json" && mv "$E2E_TMP/r.json" "$E2E_TMP/r/config.json"
agent_start "$P-r" "$E2E_TMP/r"
assert_eq "$RC:${REPLY%% *}" "0:ready" "a burst share on the r615 machine: $OUT"
assert_eq "$(grep -F " /$P-r" "$FAKE/nvml.json.limits" || true)" "$GPU $((10 * GIB)) $((30 * GIB)) /$P-r" \
  "the driver holds soft = the request, hard = the limit, on the container's cgroup"
assert_eq "$(jq -c '.entries[0].driver_limit | [.soft, .hard]' "$E2E_TMP/state/ledger.json")" \
  "[$((10 * GIB)),$((30 * GIB))]" "the ledger records the two"
agent_stop "$P-r"
assert_eq "$(grep -F " /$P-r" "$FAKE/nvml.json.limits" || true)" "" "released: the driver holds nothing for the cgroup"
assert_eq "$(grep -F " /$P-r " "$FAKE/nvml.json.calls" | cut -d' ' -f4-)" "$((10 * GIB)) $((30 * GIB))
0 $((30 * GIB))
0 18446744073709551615" "set, then soft zeroed first, then the hard limit cleared"
# Under MPS the r615 driver itself evicts a process past its soft limit for one within its own: the
# same outcome as burst.reclaim: kill, before gpufrac's reclaimer is asked.
r615_bundle() {
  BURST_ENV='"GPUFRAC_FAKE_CUDA_MPS_EVICTION=1"' agent_bundle "$@"
  jq '.linux.resources.devices += [{allow: true, type: "c", major: 195, access: "rwm"},
                                   {allow: true, type: "c", major: 508, access: "rwm"}]' "$1/config.json" \
    >"$1.json" && mv "$1.json" "$1/config.json"
}
r615_bundle "$E2E_TMP/ra" gpufrac.io/memory=10Gi gpufrac.io/memory-limit=30Gi gpufrac.io/gpu=0
r615_bundle "$E2E_TMP/rb" gpufrac.io/memory=60Gi gpufrac.io/gpu=0
agent_start "$P-ra" "$E2E_TMP/ra"
agent_fill "$P-ra" 1024 25
assert_eq "$OKS" 25 "A takes 25 GiB (soft 10, hard 30)"
agent_start "$P-rb" "$E2E_TMP/rb"
agent_fill "$P-rb" 1024 60
assert_eq "$OKS" 60 "B, within its soft limit of 60 GiB, gets its memory"
agent_gone "$P-ra" || fail "the driver evicted A's process, past its soft limit"
run "$GPUFRAC" status --json
assert_eq "$(jq -c '.reclaims.stopped // 0' <<<"$OUT")" 0 "the driver did it: gpufrac's reclaimer stopped nothing"
agent_stop "$P-ra"
agent_stop "$P-rb"
stop_reclaimer
finish
