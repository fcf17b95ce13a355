#!/bin/bash
# gpufrac-hook through podman 4.3.1's hooks.d (the files shipped in etc/oci/hooks.d, pointed at
# this build): --annotation gpufrac.io/fraction=0.5 gets the shim, its limit and the device nodes;
# a third 0.5 share of one GPU is refused; host-PID and parse refusals; podman rm releases.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/containers.sh"
e2e_podman_test podman
e2e_gpu_config a100-40gb-x1.yaml
GPU=$(jq -r '.gpus[0].uuid' <<<"$("$GPUFRAC" info --json)")
LIMIT=$((40536 / 2 * 1024 * 1024))

mkdir -p "$E2E_TMP/hooks.d"
for f in "$GPUFRAC_SOURCE_DIR"/etc/oci/hooks.d/*.json; do
  jq --arg hook "$HOOK" --arg cfg "GPUFRAC_CONFIG=$GPUFRAC_CONFIG" '.hook.path = $hook | .hook.env += [$cfg]' "$f" \
    >"$E2E_TMP/hooks.d/$(basename "$f")"
done
make_cuda_rootfs "$E2E_TMP/rootfs"
PODMAN_HOOKS_DIR=$E2E_TMP/hooks.d

# 1. A 0.5 share: what the container sees; --rm releases it.
podman_run --rm --name "$P-1" --pid=host --annotation gpufrac.io/fraction=0.5 -- /bin/sh -c \
  'cat /run/gpufrac/limits /etc/ld.so.preload; stat -c "%n %t:%T" /dev/nvidia0 /dev/nvidiactl /dev/nvidia-uvm; ls /run/gpufrac'
assert_eq "$RC" 0 "podman run with a 0.5 share: $OUT"
assert_contains "$OUT" "device $GPU $LIMIT" "limit file says half of the GPU"
assert_contains "$OUT" "/run/gpufrac/libgpufrac-limits.so" "preload lists the shim"
assert_contains "$OUT" "/dev/nvidia0 c3:0" "GPU node"
assert_contains "$OUT" "/dev/nvidiactl c3:ff" "control node"
assert_contains "$OUT" "/dev/nvidia-uvm 1fc:0" "uvm node"
assert_eq "$(jq '.entries | length' "$E2E_TMP/state/ledger.json")" 0 "released after --rm"

# The driver's user space comes from the hook: a CUDA program in a rootfs without driver files.
podman_run --rm --name "$P-cuda" --pid=host --annotation gpufrac.io/fraction=0.25 -- /bin/sh -c "$CUDA_CHECK"
assert_eq "$RC" 0 "podman run (hooks.d) with a CUDA program: $OUT"
expect_cuda "podman hooks.d annotation"
assert_eq "$(jq '.entries | length' "$E2E_TMP/state/ledger.json")" 0 "released after --rm"

# 2. Two 0.5 shares fill the GPU; the third is refused with the capacity message.
for i in 1 2; do
  podman_run -d --name "$P-s$i" --pid=host --annotation gpufrac.io/fraction=0.5 -- /bin/sleep 60
  assert_eq "$RC" 0 "share $i of 2 starts: $OUT"
done
podman_run --rm --name "$P-s3" --pid=host --annotation gpufrac.io/fraction=0.5 -- /bin/true
assert_eq "$RC" 126 "the third share is refused"
assert_contains "$OUT" "gpufrac-hook: no GPU has" "podman shows the capacity message"
assert_eq "$(jq '.entries | length' "$E2E_TMP/state/ledger.json")" 2 "two shares booked"
podman rm -f "$P-s1" "$P-s2" >/dev/null
assert_eq "$(jq '.entries | length' "$E2E_TMP/state/ledger.json")" 0 "podman rm releases both"

# 3. Refusals: private PID namespace, malformed annotation.
podman_run --rm --name "$P-3" --annotation gpufrac.io/fraction=0.5 -- /bin/true
assert_eq "$RC" 126 "private PID namespace refused"
assert_contains "$OUT" "gpufrac-hook: the container has its own PID namespace" "host-PID message"
podman_run --rm --name "$P-4" --pid=host --annotation gpufrac.io/memory=4GB -- /bin/true
assert_eq "$RC" 126 "malformed memory refused"
assert_contains "$OUT" 'gpufrac-hook: gpufrac.io/memory: "4GB" is not a memory quantity' "parse message"

# 4. No annotation: the hooks do not even run (hooks.d matches gpufrac annotations only). The
# rootfs directory is shared by these runs, so earlier ones left the empty /run/gpufrac mount point.
podman_run --rm --name "$P-5" --pid=host -- /bin/sh -c 'test -e /run/gpufrac/limits || test -e /dev/nvidia0 || echo clean'
assert_eq "$OUT" "clean" "plain container untouched"
assert_eq "$(jq '.entries | length' "$E2E_TMP/state/ledger.json")" 0 "ledger empty at the end"
finish
