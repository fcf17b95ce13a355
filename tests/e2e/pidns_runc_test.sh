#!/bin/bash
# A 0.25 share in a runc container with its own PID namespace, on a node with require-host-pid:
# false: every pid the container's processes write is in the container's numbering, so the host and
# the processes judge their slots by the slots' locks (docs/architecture.md "Process identity across
# PID namespaces"). Inside: the limit is exact; 40 processes SIGKILLed mid-allocation give their
# memory back at once to the next process (the whole limit, first try); a forked child's slot is its
# own, and a child that outlives its parent keeps nothing of the parent's alive. From the host: status shows exactly what a live process holds, gc leaves its slot alone, the
# same process SIGKILLed from the host is dead for status at once and gc reclaims its slot, and a
# forged owner word (a LOCKED word naming a live process, as a tenant could write it) counts for
# no one and is reclaimed by the container's next process.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/containers.sh"
need_root
need_cmd runc
need_cmd jq
PROBE=$GPUFRAC_BUILD_DIR/tests/shim/shim_probe
TOOL=$GPUFRAC_BUILD_DIR/tests/shim/shim_region_tool
[ -x "$PROBE" ] && [ -x "$TOOL" ] || skip "shim_probe or shim_region_tool is not built"
e2e_tmp
P=gpufrac-e2e-pidns-$$
e2e_on_exit() { exec 3>&- 2>/dev/null || true; runc_cleanup "$P"; }
e2e_gpu_config a100-40gb-x1.yaml "require-host-pid: false"
GPU=$(jq -r '.gpus[0].uuid' <<<"$("$GPUFRAC" info --json)")
GIB=1073741824 L=10626269184

# The script runs in the container; the holder reads the container's stdin (a FIFO this test keeps
# open) until the host kills it; the last probe waits for /tmp/go, which the host creates.
cat >"$E2E_TMP/script.sh" <<'EOF'
echo "pid namespace: init is $$"
shim_probe fill cuMemAlloc_v2 1073741824
set -- cuMemAlloc_v2 cuMemAllocAsync cuMemCreate cuArrayCreate_v2 cuMemAllocFromPoolAsync cuMemAllocManaged
killed=0
while [ $killed -lt 40 ]; do
  eval api=\${$((RANDOM % 6 + 1))}
  shim_probe loop "$api" $(((RANDOM % 8 + 1) * 1048576)) >/dev/null 2>&1 &
  sleep "0.0$((RANDOM % 30))"
  kill -9 $! && killed=$((killed + 1))
done
wait
echo "killed=$killed"
shim_probe meminfo fill cuMemAlloc_v2 1073741824
shim_probe alloc cuMemAlloc_v2 1073741824 fork cuMemAlloc_v2 1073741824 meminfo
shim_probe alloc cuMemAlloc_v2 2147483648 outlive 3
shim_probe meminfo
exec 3<&0 # a background job's stdin is /dev/null unless redirected
shim_probe alloc cuMemAlloc_v2 4294967296 hold <&3 &
echo "holder $!"
wait
echo "holder gone"
shim_probe gate /tmp/go meminfo fill cuMemAlloc_v2 1073741824
EOF

make_bundle "$E2E_TMP/b" '. /script.sh' gpufrac.io/fraction=0.25
add_program "$E2E_TMP/b/rootfs" "$PROBE"
add_glibc "$E2E_TMP/b/rootfs"
cp "$E2E_TMP/script.sh" "$E2E_TMP/b/rootfs/script.sh"
jq --arg dev "$GPU=42505273344" '.process.env += ["GPUFRAC_FAKE_CUDA_DEVICES=" + $dev]
  | .linux.namespaces += [{"type": "pid"}]' "$E2E_TMP/b/config.json" >"$E2E_TMP/c.json" &&
  mv "$E2E_TMP/c.json" "$E2E_TMP/b/config.json"

mkfifo "$E2E_TMP/stdin"
exec 3<>"$E2E_TMP/stdin"
runc create --bundle "$E2E_TMP/b" "$P" <"$E2E_TMP/stdin" >"$E2E_TMP/out.log" 2>&1 || fail "runc create: $(cat "$E2E_TMP/out.log")"
runc start "$P"
log() { cat "$E2E_TMP/out.log"; }
for _ in $(seq 900); do grep -q "^holding" "$E2E_TMP/out.log" && break; sleep 0.1; done
echo "--- container so far"; log
assert_contains "$(log)" "pid namespace: init is 1" "the container has its own PID namespace"
assert_contains "$(log)" "fill cuMemAlloc_v2 each=$GIB ok=9 rc=2" "the limit is exact: 9 GiB fit in the 9.9 GiB share"
assert_contains "$(log)" "killed=40" "40 processes SIGKILLed mid-allocation"
assert_contains "$(log)" "meminfo free=$L total=$L rc=0" "the killed processes' memory is back at once"
assert_eq "$(grep -c "^fill cuMemAlloc_v2 each=$GIB ok=9 rc=2" "$E2E_TMP/out.log")" 2 "the next process gets the whole limit"
assert_contains "$(log)" "child alloc cuMemAlloc_v2 $GIB rc=0
fork child-exit=0
meminfo free=$((L - GIB)) total=$L rc=0" "a forked child's slot is its own: dead with the child"
assert_contains "$(log)" "alloc cuMemAlloc_v2 2147483648 rc=0
outlive child=started
meminfo free=$L total=$L rc=0" "a child that outlives its parent does not keep the parent's slot alive"
assert_contains "$(log)" "alloc cuMemAlloc_v2 4294967296 rc=0" "the holder holds 4 GiB"

REGION=$(ls "$E2E_TMP"/state/containers/"$P"*/usage)
run "$GPUFRAC" status --json
assert_eq "$(jq -r --arg c "$P" '.devices[].shares[] | select(.container_id == $c) | .used_bytes' <<<"$OUT")" $((4 * GIB)) \
  "status shows exactly what the live holder holds, though its pid is the container's"
run "$TOOL" usage "$REGION"
assert_contains "$OUT" "live=1 " "one live process for the host"
run "$GPUFRAC" gc --json
assert_eq "$(jq -r '.dead_slots_reclaimed' <<<"$OUT")" 0 "gc leaves the live holder's slot alone"

holder=$(runc ps -f json "$P" | jq -r '.[]' | while read -r pid; do
  tr '\0' ' ' <"/proc/$pid/cmdline" | grep -q "4294967296 hold" && echo "$pid"
done)
[ -n "$holder" ] || fail "no holder process among $(runc ps -f json "$P")"
kill -KILL "$holder"
for _ in $(seq 100); do grep -q "^holder gone" "$E2E_TMP/out.log" && break; sleep 0.1; done
run "$GPUFRAC" status --json
assert_eq "$(jq -r --arg c "$P" '.devices[].shares[] | select(.container_id == $c) | .used_bytes' <<<"$OUT")" 0 \
  "the holder SIGKILLed from the host holds nothing at once"
run "$GPUFRAC" gc --json
assert_eq "$(jq -r '.dead_slots_reclaimed' <<<"$OUT")" 1 "gc reclaims its slot"

# A tenant's forgery: a LOCKED owner word naming the init process (pid 1 there, its host pid here)
# with 8 GiB, its lock byte held by no one.
"$TOOL" set-slot "$REGION" 900 1 1 3 0 $((8 * GIB))
"$TOOL" set-slot "$REGION" 901 "$holder" 1 3 0 $((8 * GIB))
run "$TOOL" usage "$REGION"
assert_contains "$OUT" "used=0 stale=$((16 * GIB))" "forged slots count for no one on the host"
touch "$E2E_TMP/b/rootfs/tmp/go"
for _ in $(seq 100); do [ "$(runc state "$P" 2>/dev/null | jq -r .status)" = stopped ] && break; sleep 0.1; done
echo "--- container"; log
assert_eq "$(grep -c "^meminfo free=$L total=$L rc=0" "$E2E_TMP/out.log")" 3 \
  "the container's next process finds the whole limit free: the forged slots reclaimed"
assert_eq "$(tail -1 "$E2E_TMP/out.log")" "fill cuMemAlloc_v2 each=$GIB ok=9 rc=2" "and gets it"
exec 3>&-
runc delete "$P"
assert_eq "$(jq '.entries | length' "$E2E_TMP/state/ledger.json")" 0 "released at delete"
finish
