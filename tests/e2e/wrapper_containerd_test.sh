#!/bin/bash
# gpufrac-runtime under real containerd 1.6 (Debian), started privately for the test: `ctr run
# --runc-binary gpufrac-runtime --annotation gpufrac.io/fraction=0.25` gets the shim, its limit and
# the device nodes, the bundle's spec has the allow rules, the share is released when the container
# is removed, and a fifth 0.25 share on one GPU is refused with the capacity message (containerd
# shows it: the wrapper writes it to the runtime log containerd reads).
#
# The wrapper finds its config through GPUFRAC_CONFIG in containerd's environment: the runc shim
# starts the runtime with containerd's environment.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/containers.sh"
source "$(dirname "$0")/wrapper.sh"
need_root
need_cmd containerd
need_cmd ctr
need_cmd containerd-shim-runc-v2
need_cmd runc
need_cmd jq
e2e_tmp
P=gpufrac-e2e-ctd-$$
NS=gpufrac-e2e
CTD=$E2E_TMP/containerd
CTR=(ctr -a "$CTD/containerd.sock" -n "$NS")
e2e_on_exit() {
  local id
  if [ -S "$CTD/containerd.sock" ]; then
    for id in $("${CTR[@]}" containers list -q 2>/dev/null); do
      "${CTR[@]}" task kill -s KILL "$id" >/dev/null 2>&1 || true
      "${CTR[@]}" task delete -f "$id" >/dev/null 2>&1 || true
      "${CTR[@]}" containers delete "$id" >/dev/null 2>&1 || true
    done
  fi
  if [ -n "${CTD_PID:-}" ]; then
    kill "$CTD_PID" 2>/dev/null || true
    wait "$CTD_PID" 2>/dev/null || true
  fi
  rmdir "/run/containerd/runc/$NS" 2>/dev/null || true  # the runc shim's state root for the namespace
}
e2e_gpu_config a100-40gb-x1.yaml
GPU=$(jq -r '.gpus[0].uuid' <<<"$("$GPUFRAC" info --json)")
LIMIT=$((40536 / 4 * 1024 * 1024))
make_cuda_rootfs "$E2E_TMP/rootfs"

# A private containerd: its own root, state, sockets and opt dir; no CRI plugin.
mkdir -p "$CTD/root" "$CTD/state" "$CTD/opt"
cat >"$CTD/config.toml" <<EOF
version = 2
root = "$CTD/root"
state = "$CTD/state"
disabled_plugins = ["io.containerd.grpc.v1.cri"]
[grpc]
  address = "$CTD/containerd.sock"
[ttrpc]
  address = "$CTD/containerd.sock.ttrpc"
[plugins."io.containerd.internal.v1.opt"]
  path = "$CTD/opt"
EOF
GPUFRAC_CONFIG=$GPUFRAC_CONFIG containerd --config "$CTD/config.toml" >"$CTD/containerd.log" 2>&1 &
CTD_PID=$!
for _ in $(seq 100); do "${CTR[@]}" version >/dev/null 2>&1 && break; sleep 0.1; done
"${CTR[@]}" version >/dev/null 2>&1 || { cat "$CTD/containerd.log"; fail "containerd did not start"; finish; }

# ctr_run <id> [ctr run flags...] -- <command...>: a container through gpufrac-runtime, host PID
# namespace, busybox rootfs. Output in $OUT, exit code in $RC.
ctr_run() {
  local id=$1
  shift
  local flags=()
  while [ "$1" != -- ]; do flags+=("$1"); shift; done
  shift
  run timeout 60 "${CTR[@]}" run "${flags[@]}" --runc-binary "$WRAPPER" --with-ns "pid:/proc/$$/ns/pid" \
    --rootfs "$E2E_TMP/rootfs" "$id" "$@"
}
bundle_spec() { echo "$CTD/state/io.containerd.runtime.v2.task/$NS/$1/config.json"; }

# 1. One 0.25 share: what the container sees; released when the container is removed.
ctr_run "$P-1" --rm --annotation gpufrac.io/fraction=0.25 -- /bin/sh -c \
  'cat /run/gpufrac/limits; cat /etc/ld.so.preload; stat -c "%n %F %t:%T" /dev/nvidia0 /dev/nvidiactl /dev/nvidia-uvm'
assert_eq "$RC" 0 "ctr run with a 0.25 share: $OUT"
assert_contains "$OUT" "device $GPU $LIMIT" "limit file: 1/4 of the GPU"
assert_contains "$OUT" "/run/gpufrac/libgpufrac-limits.so" "the shim is preloaded"
assert_contains "$OUT" "/dev/nvidia0 character special file c3:0" "GPU node"
assert_contains "$OUT" "/dev/nvidiactl character special file c3:ff" "control node"
assert_contains "$OUT" "/dev/nvidia-uvm character special file 1fc:0" "uvm node"
assert_eq "$(ledger_count)" 0 "ctr run --rm released the share"
assert_eq "$(ls "$E2E_TMP/state/containers" 2>/dev/null | wc -l)" 0 "container files removed"

# The driver's user space through config.json (mounts and the --ld-cache hook): a CUDA program.
ctr_run "$P-cuda" --rm --annotation gpufrac.io/fraction=0.25 -- /bin/sh -c "$CUDA_CHECK"
assert_eq "$RC" 0 "ctr run with a CUDA program: $OUT"
expect_cuda "ctr run --runc-binary gpufrac-runtime"
assert_eq "$(ledger_count)" 0 "ctr run --rm released the share"

# 2. Four detached 0.25 shares run; the specs have the allow rules; the fifth is refused.
for i in 1 2 3 4; do
  ctr_run "$P-s$i" -d --annotation gpufrac.io/fraction=0.25 -- /bin/busybox sleep 120
  assert_eq "$RC" 0 "share $i of 4 starts: $OUT"
done
assert_eq "$("${CTR[@]}" containers info "$P-s1" | jq -r '.Spec.annotations["gpufrac.io/fraction"]')" "0.25" \
  "containerd stored the annotation"
SPEC=$(bundle_spec "$P-s1")
# containerd's default spec allows a few standard nodes; the wrapper's rules come after them.
assert_eq "$(jq -c '[.linux.resources.devices[] | select(.allow and (.major == 195 or .major == 508))
  | "\(.type) \(.major):\(.minor) \(.access)"]' "$SPEC")" \
  '["c 195:255 rw","c 508:0 rw","c 508:1 rw","c 195:0 rw"]' "allow rules in the bundle's config.json"
assert_eq "$(jq -c '.linux.resources.devices[0]' "$SPEC")" '{"allow":false,"access":"rwm"}' "deny-all stays first"
assert_eq "$(jq -r '.annotations["gpufrac.io/injected"]' "$SPEC")" "true" "the bundle's spec was prepared"
assert_eq "$(ledger_count '.source == "wrapper" and .pid > 0')" 4 "four attached wrapper bookings"
ctr_run "$P-s5" -d --annotation gpufrac.io/fraction=0.25 -- /bin/busybox sleep 120
assert_eq "$RC" 1 "the fifth share is refused"
assert_contains "$OUT" "OCI runtime create failed: gpufrac: no GPU has" "ctr shows the capacity message"
assert_eq "$(ledger_count)" 4 "the refusal booked nothing"
run "$GPUFRAC" status --json
assert_eq "$(jq --arg p "$P-s" '[.devices[].shares[].container_id | select(startswith($p))] | length' <<<"$OUT")" 4 \
  "status lists four shares"

# 3. Removing the containers releases the shares.
for i in 1 2 3 4; do
  "${CTR[@]}" task kill -s KILL "$P-s$i" >/dev/null
  for _ in $(seq 50); do
    [ "$("${CTR[@]}" task ls | awk -v id="$P-s$i" '$1 == id {print $3}')" = STOPPED ] && break
    sleep 0.1
  done
  "${CTR[@]}" task delete "$P-s$i" >/dev/null || fail "task delete $P-s$i"
  "${CTR[@]}" containers delete "$P-s$i" >/dev/null || fail "container delete $P-s$i"
done
"${CTR[@]}" containers delete "$P-s5" >/dev/null 2>&1 || true
assert_eq "$(ledger_count)" 0 "every share released after removal"

# 4. A malformed annotation: containerd shows the one line; nothing booked.
ctr_run "$P-bad" --rm --annotation gpufrac.io/memory=lots -- /bin/true
assert_eq "$RC" 1 "malformed memory refused"
assert_contains "$OUT" 'OCI runtime create failed: gpufrac: gpufrac.io/memory: "lots"' "the parse error reaches ctr"
assert_eq "$(ledger_count)" 0 "nothing booked"
"${CTR[@]}" containers delete "$P-bad" >/dev/null 2>&1 || true

# 5. A container without annotations runs through the wrapper untouched.
ctr_run "$P-plain" --rm -- /bin/sh -c 'test -e /run/gpufrac && echo HAS-GPUFRAC; test -e /dev/nvidia0 && echo HAS-GPU; echo done'
assert_eq "$RC" 0 "plain container runs"
assert_eq "$OUT" "done" "plain container sees no gpufrac mounts or GPU nodes"
finish
