#!/bin/bash
# CDI with real podman 4.3.1 and runc: `podman run --device <kind>=0-0.25` gets the shim, its limit
# (a quarter of the simulated GPU) and the device nodes from the spec gpufrac cdi generate wrote;
# four quarter shares of one GPU coexist, the fifth fails with the capacity message, a whole GPU is
# refused while shares of it are booked; podman rm -f releases (runc runs the spec's poststop hook);
# a whole GPU by UUID; two devices and `all` in one container; a private PID namespace is refused.
# Ledger empty at the end.
#
# podman 4.3.1 reads CDI specs only from /etc/cdi and /var/run/cdi (no setting before podman 5), so
# the spec goes to /var/run/cdi/gpufrac-e2e-<pid>.yaml with its own kind, gpufrac-e2e-<pid>.io/gpu:
# it cannot collide with another test's or the node's gpufrac.io/gpu devices. Removed on exit.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/containers.sh"
e2e_podman_test cdi
KIND=gpufrac-e2e-$$.io/gpu
SPEC=/var/run/cdi/gpufrac-e2e-$$.yaml
e2e_on_exit() {
  podman ps -aq --filter "name=^$P" | xargs -r podman rm -f >/dev/null 2>&1 || true
  rm -f "$SPEC"
}
e2e_gpu_config a100-40gb-x2.yaml
GPU0=$(jq -r '.gpus[0].uuid' <<<"$("$GPUFRAC" info --json)")
GPU1=$(jq -r '.gpus[1].uuid' <<<"$("$GPUFRAC" info --json)")
QUARTER=$((40536 / 4 * 1024 * 1024))   # 0.25 of 40536 MiB, rounded down to a MiB
run "$GPUFRAC" cdi generate --kind "$KIND" --output "$SPEC"
assert_eq "$RC" 0 "generate into /var/run/cdi: $OUT"
run "$GPUFRAC" cdi validate "$SPEC"
assert_eq "$RC" 0 "the spec validates: $OUT"

mkdir -p "$E2E_TMP/hooks.d"   # no hooks.d hooks: only the spec's
make_cuda_rootfs "$E2E_TMP/rootfs"
PODMAN_HOOKS_DIR=$E2E_TMP/hooks.d
entries() { jq '.entries | length' "$E2E_TMP/state/ledger.json"; }

# 1. One quarter share: what the container sees; --rm releases it (runc runs the poststop hook).
podman_run --rm --name "$P-1" --pid=host --device "$KIND=0-0.25" -- /bin/sh -c \
  'cat /run/gpufrac/limits /etc/ld.so.preload; ls /run/gpufrac; stat -c "%n %t:%T" /dev/nvidia0 /dev/nvidiactl /dev/nvidia-uvm /dev/nvidia-uvm-tools; test -e /dev/nvidia1 || echo no-nvidia1; env | grep ^GPUFRAC_ | sort'
assert_eq "$RC" 0 "podman run --device $KIND=0-0.25: $OUT"
assert_contains "$OUT" "device $GPU0 $QUARTER" "limit file: GPU 0, a quarter of its memory"
assert_contains "$OUT" "region /run/gpufrac/usage" "limit file names the usage region"
assert_contains "$OUT" "/run/gpufrac/libgpufrac-limits.so" "preload lists the shim"
assert_contains "$OUT" "$(printf 'libgpufrac-limits.so\nlimits\nusage')" "tmpfs holds the shim, limits and usage"
assert_contains "$OUT" "/dev/nvidia0 c3:0" "GPU node 195:0"
assert_contains "$OUT" "/dev/nvidiactl c3:ff" "control node 195:255"
assert_contains "$OUT" "/dev/nvidia-uvm 1fc:0" "uvm node 508:0"
assert_contains "$OUT" "/dev/nvidia-uvm-tools 1fc:1" "uvm-tools node 508:1"
assert_contains "$OUT" "no-nvidia1" "only its own GPU's node"
assert_contains "$OUT" "GPUFRAC_DEVICES=$GPU0" "env names the GPU"
assert_contains "$OUT" "GPUFRAC_MEMORY_LIMITS=$QUARTER" "env names the limit"
assert_eq "$(entries)" 0 "--rm released the share"
assert_eq "$(ls "$E2E_TMP/state/containers" | wc -l)" 0 "container files removed"

# The CDI device alone gives a working CUDA container: the spec brings the driver's files and the
# loader cache hook; NVIDIA's runtime is told to add nothing.
podman_run --rm --name "$P-cuda" --pid=host --device "$KIND=0-0.25" -- /bin/sh -c "$CUDA_CHECK; env | grep ^NVIDIA_"
assert_eq "$RC" 0 "podman run --device $KIND=0-0.25 with a CUDA program: $OUT"
expect_cuda "podman CDI device alone"
assert_contains "$OUT" "NVIDIA_VISIBLE_DEVICES=void" "NVIDIA's runtime adds nothing"
assert_eq "$(entries)" 0 "--rm released the share"

# 2. Four quarter shares of GPU 0 coexist, booked as CDI devices.
for i in 1 2 3 4; do
  podman_run -d --name "$P-s$i" --pid=host --device "$KIND=0-0.25" -- /bin/sleep 120
  assert_eq "$RC" 0 "share $i of 4 starts: $OUT"
done
assert_eq "$(entries)" 4 "four bookings"
assert_eq "$(jq -r '[.entries[] | .source + " " + .device_key + " " + .device_uuid] | unique | .[]' "$E2E_TMP/state/ledger.json")" \
  "cdi 0-0.25 $GPU0" "booked by CDI, keyed by the device name, on GPU 0"
ID=$(podman inspect --format '{{.Id}}' "$P-s1")
assert_contains "$(podman exec "$P-s1" cat /run/gpufrac/limits)" "container $ID" "the running container sees its own limit file"

# 3. The fifth fails with the capacity message; a whole GPU 0 is refused while shares are booked.
podman_run --rm --name "$P-s5" --pid=host --device "$KIND=0-0.25" -- /bin/true
assert_eq "$RC" 126 "the fifth quarter is refused"
assert_contains "$OUT" "gpufrac-hook: no GPU has 9.9 GiB free for fraction=0.25: GPU 0 0 B (pinned by gpufrac.io/gpu)" \
  "podman shows the capacity message"
podman_run --rm --name "$P-w" --pid=host --device "$KIND=0" -- /bin/true
assert_eq "$RC" 126 "whole GPU 0 refused"
assert_contains "$OUT" "gpufrac-hook: no GPU is free for a whole GPU: GPU 0 has 4 shares (pinned by gpufrac.io/gpu)" \
  "whole-GPU refusal"
assert_eq "$(entries)" 4 "refusals booked nothing"

# 4. podman rm -f releases: one, then the rest.
podman rm -f "$P-s1" >/dev/null
assert_eq "$(entries)" 3 "podman rm -f released one share"
podman_run --rm --name "$P-s6" --pid=host --device "$KIND=0-0.25" -- /bin/true
assert_eq "$RC" 0 "a quarter fits again: $OUT"
podman rm -f "$P-s2" "$P-s3" "$P-s4" >/dev/null
assert_eq "$(entries)" 0 "all released"

# 5. A whole GPU by UUID: its whole memory, its node only.
podman_run --rm --name "$P-2" --pid=host --device "$KIND=$GPU1" -- /bin/sh -c \
  'cat /run/gpufrac/limits; stat -c "%n %t:%T" /dev/nvidia1; test -e /dev/nvidia0 || echo no-nvidia0'
assert_eq "$RC" 0 "whole GPU by UUID: $OUT"
assert_contains "$OUT" "device $GPU1 $((40536 * 1024 * 1024))" "all of GPU 1"
assert_contains "$OUT" "/dev/nvidia1 c3:1" "GPU 1 node"
assert_contains "$OUT" "no-nvidia0" "not GPU 0"
assert_eq "$(entries)" 0 "released"

# 6. Two devices in one container: one hook per device; the limit file lists both, the first hook
# mounted it and the second updated it in place; the second share's compute arbiter came with
# gpufrac's directory mounted again over the first. Then `all`: both whole GPUs.
podman_run --rm --name "$P-m" --pid=host --device "$KIND=0-0.25" --device "$KIND=1-0.5" -- /bin/sh -c \
  'cat /run/gpufrac/limits; stat -c "%n %t:%T" /dev/nvidia0 /dev/nvidia1; ls /run/gpufrac/compute | sed "s/^/mounted arbiter /"'
assert_eq "$RC" 0 "two CDI devices: $OUT"
assert_contains "$OUT" "device $GPU0 $QUARTER" "limit file lists GPU 0's quarter"
assert_contains "$OUT" "device $GPU1 $((40536 / 2 * 1024 * 1024))" "limit file lists GPU 1's half"
assert_contains "$OUT" "/dev/nvidia1 c3:1" "both GPU nodes"
assert_contains "$OUT" "mounted arbiter $GPU0" "the first device's compute arbiter"
assert_contains "$OUT" "mounted arbiter $GPU1" "the second device's compute arbiter"
podman_run --rm --name "$P-q" --pid=host --device "$KIND=0-0.25" --device "$KIND=0-0.5" -- /bin/sh -c 'cat /run/gpufrac/limits'
assert_eq "$RC" 0 "two shares of one GPU: $OUT"
assert_contains "$OUT" "device $GPU0 $(((40536 / 4 + 40536 / 2) * 1024 * 1024))" "two shares of GPU 0 add up to one limit"
assert_eq "$(grep -c "^device" <<<"$OUT")" 1 "one line per device"
podman_run --rm --name "$P-a" --pid=host --device "$KIND=all" -- /bin/sh -c 'cat /run/gpufrac/limits'
assert_eq "$RC" 0 "all: $OUT"
assert_contains "$OUT" "device $GPU0 $((40536 * 1024 * 1024))" "all: GPU 0"
assert_contains "$OUT" "device $GPU1 $((40536 * 1024 * 1024))" "all: GPU 1"
assert_eq "$(entries)" 0 "released"

# 7. A private PID namespace is refused by the spec's hook.
podman_run --rm --name "$P-3" --device "$KIND=0-0.25" -- /bin/true
assert_eq "$RC" 126 "private PID namespace refused"
assert_contains "$OUT" "gpufrac-hook: the container has its own PID namespace" "host-PID message"
assert_eq "$(entries)" 0 "ledger empty at the end"
finish
