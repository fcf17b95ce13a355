#!/bin/bash
# A CDI share through real podman 4.3.1 (and runc) in the container's own PID namespace (podman's
# default, no --pid=host), on a node with require-host-pid: false: the processes' slots are judged
# by their locks (docs/architecture.md "Process identity across PID namespaces"). Inside: the limit
# is exact; 30 processes SIGKILLed mid-allocation give their memory back at once (the next process
# gets the whole limit, first try). From the host: status shows what a live process holds; the
# process SIGKILLed from the host is dead for status at once; podman rm releases the share. The default node (require-host-pid: true) refusing a private namespace is
# e2e.cdi_podman's.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/containers.sh"
e2e_podman_test pidns
need_cmd jq
PROBE=$GPUFRAC_BUILD_DIR/tests/shim/shim_probe
[ -x "$PROBE" ] || skip "shim_probe is not built"
KIND=gpufrac-e2e-$$.io/gpu
SPEC=/var/run/cdi/gpufrac-e2e-$$.yaml
e2e_on_exit() {
  podman ps -aq --filter "name=^$P" | xargs -r podman rm -f >/dev/null 2>&1 || true
  rm -f "$SPEC"
}
e2e_gpu_config a100-40gb-x1.yaml "require-host-pid: false"
GPU=$(jq -r '.gpus[0].uuid' <<<"$("$GPUFRAC" info --json)")
GIB=1073741824 L=10626269184
run "$GPUFRAC" cdi generate --kind "$KIND" --output "$SPEC"
assert_eq "$RC" 0 "generate into /var/run/cdi: $OUT"

mkdir -p "$E2E_TMP/hooks.d"
PODMAN_HOOKS_DIR=$E2E_TMP/hooks.d
make_rootfs "$E2E_TMP/rootfs"
add_glibc "$E2E_TMP/rootfs"
add_program "$E2E_TMP/rootfs" "$PROBE"
cp "$(dirname "$0")/kill_mid_alloc.sh" "$E2E_TMP/rootfs/kill_mid_alloc.sh"
cat >"$E2E_TMP/rootfs/script.sh" <<'EOF'
echo "pid namespace: init is $$"
shim_probe fill cuMemAlloc_v2 1073741824
sh /kill_mid_alloc.sh 30
shim_probe meminfo fill cuMemAlloc_v2 1073741824
mkfifo /tmp/hold && exec 3<>/tmp/hold # the holder reads it until the host kills it: no EOF
shim_probe alloc cuMemAlloc_v2 4294967296 hold <&3
echo "holder gone"
shim_probe meminfo
exec sleep 300
EOF
podman_run -d --name "$P-1" --device "$KIND=0-0.25" -e "GPUFRAC_FAKE_CUDA_DEVICES=$GPU=42505273344" -- /bin/sh /script.sh
assert_eq "$RC" 0 "podman run without --pid=host on a node that allows it: $OUT"
log() { podman logs "$P-1" 2>&1; }
for _ in $(seq 900); do log | grep -q "^holding" && break; sleep 0.1; done
echo "--- container so far"; log
assert_contains "$(log)" "pid namespace: init is 1" "the container has its own PID namespace"
assert_contains "$(log)" "fill cuMemAlloc_v2 each=$GIB ok=9 rc=2" "the limit is exact: 9 GiB fit in the 9.9 GiB share"
assert_contains "$(log)" "killed=30" "30 processes SIGKILLed mid-allocation"
assert_contains "$(log)" "meminfo free=$L total=$L rc=0" "the killed processes' memory is back at once"
assert_eq "$(log | grep -c "^fill cuMemAlloc_v2 each=$GIB ok=9 rc=2")" 2 "the next process gets the whole limit"
assert_contains "$(log)" "alloc cuMemAlloc_v2 4294967296 rc=0" "the holder holds 4 GiB"

# From the host: the holder's 4 GiB, named by its pid in the container; SIGKILLed from the host, it
# holds nothing at once (its slot's lock went with it).
ID=$(podman inspect --format '{{.Id}}' "$P-1")
used() {
  jq -r --arg c "$ID" '[.devices[].shares[] | select(.container_id == $c) | .used_bytes] | add // "no share"' \
    <<<"$("$GPUFRAC" status --json)"
}
assert_eq "$(used)" $((4 * GIB)) "status shows exactly what the live holder holds, though its pid is the container's"
HOLDER=$(pgrep -P "$(podman inspect --format '{{.State.Pid}}' "$P-1")" shim_probe | head -1)
[ -n "$HOLDER" ] || fail "the holder's host pid is not found"
if [ -n "$HOLDER" ]; then
  [ "$(awk '/^NSpid:/ {print $NF}' "/proc/$HOLDER/status")" != "$HOLDER" ] ||
    fail "the holder's pid in the container is its host pid"
  kill -KILL "$HOLDER"
  for _ in $(seq 100); do kill -0 "$HOLDER" 2>/dev/null || break; sleep 0.05; done
  assert_eq "$(used)" 0 "the holder SIGKILLed from the host holds nothing at once"
  for _ in $(seq 100); do log | grep -q "^holder gone" && break; sleep 0.1; done
  assert_eq "$(log | grep -c "^meminfo free=$L total=$L rc=0")" 2 "the container's next process finds the whole limit free"
fi
run podman rm -f "$P-1"
assert_eq "$RC" 0 "podman rm: $OUT"
assert_eq "$(jq '.entries | length' "$E2E_TMP/state/ledger.json")" 0 "podman rm released the share"
finish
