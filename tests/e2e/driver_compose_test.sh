#!/bin/bash
# Composition with NVIDIA's container toolkit under podman 4.3.1: a container that asks for a
# gpufrac share (CDI) and for NVIDIA's device (a CDI spec written here in the layout of NVIDIA's
# generated spec: device nodes, the driver's libraries and nvidia-smi as mounts) starts, sees one
# copy of each driver file and is limited; one that asks NVIDIA for GPU 1 while gpufrac granted GPU
# 0 is refused with one line and books nothing.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/containers.sh"
e2e_podman_test compose
KIND=gpufrac-e2e-$$.io/gpu
NVKIND=nvidia-e2e-$$.com/gpu
SPEC=/var/run/cdi/gpufrac-e2e-$$.yaml
NVSPEC=/var/run/cdi/nvidia-e2e-$$.yaml
e2e_on_exit() {
  podman ps -aq --filter "name=^$P" | xargs -r podman rm -f >/dev/null 2>&1 || true
  rm -f "$SPEC" "$NVSPEC"
}
e2e_gpu_config a100-40gb-x2.yaml
"$GPUFRAC" cdi generate --kind "$KIND" --output "$SPEC" >/dev/null 2>&1 || fail "cdi generate"
R=$E2E_TMP/root
LIB=/usr/lib/x86_64-linux-gnu
mount_of() { printf '  - {hostPath: %s, containerPath: %s, options: [ro, nosuid, nodev, bind]}\n' "$R$1" "$1"; }
{
  echo "cdiVersion: 0.5.0"
  echo "kind: $NVKIND"
  echo "devices:"
  for i in 0 1; do
    echo "- name: \"$i\""
    echo "  containerEdits: {deviceNodes: [{path: /dev/nvidia$i, hostPath: $R/dev/nvidia$i}]}"
  done
  echo "containerEdits:"
  echo "  deviceNodes:"
  for n in nvidiactl nvidia-uvm nvidia-uvm-tools; do echo "  - {path: /dev/$n, hostPath: $R/dev/$n}"; done
  echo "  mounts:"
  mount_of "$LIB/libcuda.so.550.54.15"
  mount_of "$LIB/libnvidia-ml.so.550.54.15"
  mount_of /usr/bin/nvidia-smi
} >"$NVSPEC"
mkdir -p "$E2E_TMP/hooks.d"
make_cuda_rootfs "$E2E_TMP/rootfs"
PODMAN_HOOKS_DIR=$E2E_TMP/hooks.d
entries() { jq '.entries | length' "$E2E_TMP/state/ledger.json"; }

# 1. NVIDIA's GPU 0 and gpufrac's quarter of GPU 0: one copy of each file, limited.
podman_run --rm --name "$P-1" --pid=host --device "$NVKIND=0" --device "$KIND=0-0.25" -- /bin/sh -c \
  "$CUDA_CHECK; echo files: \$(find / -xdev -name 'libcuda.so.550*' 2>/dev/null | wc -l) \$(ls $LIB | grep -c '^libnvidia-ml.so')"
assert_eq "$RC" 0 "NVIDIA's device and a gpufrac share: $OUT"
expect_cuda "composed with NVIDIA's spec"
# (one marked line: the shim's refusal on stderr may land anywhere between the lines of stdout)
assert_eq "$(grep '^files: ' <<<"$OUT")" "files: 1 2" "one libcuda file; libnvidia-ml once plus its SONAME link"
assert_eq "$(entries)" 0 "--rm released the share"

# 2. NVIDIA's GPU 1 beside gpufrac's share of GPU 0: refused with one line, nothing booked.
podman_run --rm --name "$P-2" --pid=host --device "$NVKIND=1" --device "$KIND=0-0.25" -- /bin/true
assert_eq "$RC" 126 "another GPU through NVIDIA's spec is refused: $OUT"
assert_contains "$OUT" 'gpufrac-hook: the container spec also holds "/dev/nvidia1", a GPU gpufrac did not grant it' \
  "the refusal names the node"
assert_eq "$(grep -c 'gpufrac-hook:' <<<"$OUT")" 1 "one line"
assert_eq "$(entries)" 0 "nothing booked"
finish
