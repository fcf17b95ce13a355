#!/bin/bash
# A tenant that grows its GPU's compute lease file as far as it can (issue 42 item 2), from a real runc
# container booked through gpufrac-hook on the simulated GPU: the lease file lives on the GPU's own
# tmpfs (<state-dir>/compute/<uuid>.d, state/compute_mount.hpp), so
#   - its writes stop at that tmpfs's bound (2 MiB) and the state filesystem (a 16 MiB tmpfs) does not
#     grow (on main the file filled the state tmpfs, and a plain state directory took the 64 MiB asked);
#   - a neighbour still starts on the same GPU (which repairs the file in place) and one on the other GPU;
#   - once every share of the GPU is gone, gc removes its arbiter and unmounts the tmpfs.
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/../containers.sh"
source "$(dirname "$0")/compute_lib.sh"
e2e_runc_test leasebound
e2e_gpu_config a100-40gb-x2.yaml
unset GPUFRAC_FAKE_CUDA_DEVICES # the injected driver knows the machine's GPUs
read -r GPU0 GPU1 < <(jq -r '[.gpus[].uuid] | join(" ")' <<<"$("$GPUFRAC" info --json)")
ST=$E2E_TMP/state
# The state directory is itself a small tmpfs here (as on nodes where /run holds it): on main the
# tenant filled it and the next booking was refused with ENOSPC.
mount -t tmpfs -o size=16m,mode=0755 gpufrac-e2e-state "$ST" || fail "cannot mount a tmpfs on $ST"
DIR0=$ST/compute/$GPU0.d
HOSTILE=$GPUFRAC_BUILD_DIR/tests/compute/arbiter_hostile
sim_gpu
# mounted PATH: how many mounts sit on PATH.
mounted() { awk -v p="$1" '$5 == p' /proc/self/mountinfo | grep -c . || true; }
# state_kib: what the state filesystem holds under the state directory (du -x: not the GPUs' tmpfs).
state_kib() { du -skx "$ST" | cut -f1; }

hook_bundle grow "arbiter_hostile grow 67108864; sleep 60" gpufrac.io/gpu=0 gpufrac.io/compute=30
add_program "$E2E_TMP/grow/rootfs" "$HOSTILE" /bin/arbiter_hostile
before=$(state_kib)
start grow
for _ in $(seq 100); do grep -q '^grow ' "$E2E_TMP/grow.out" && break; sleep 0.1; done
out=$(cat "$E2E_TMP/grow.out")
assert_contains "$out" "grow files=1 size=" "the tenant grew GPU 0's lease file"
size=$(sed -n 's/^grow files=1 size=\([0-9]*\)$/\1/p' <<<"$out")
after=$(state_kib)
echo "grow: lease file $size bytes; state filesystem ${before} KiB before, ${after} KiB after"
assert_le "$size" $((2 << 20)) "the lease file stops at its tmpfs's bound"
assert_le "$after" $((before + 1024)) "the state filesystem did not grow with the lease file (KiB)"
assert_eq "$(mounted "$DIR0")" 1 "GPU 0's arbiter is on a tmpfs of its own"

hook_bundle same "true" gpufrac.io/gpu=0 gpufrac.io/compute=10
start same
hook_bundle other "true" gpufrac.io/gpu=1 gpufrac.io/compute=10
start other
wait_stopped same other
assert_eq "$(stat -c %s "$DIR0/$GPU0")" 256 "the neighbour's booking on GPU 0 shrank the lease file back"
assert_eq "$(mounted "$DIR0")" 1 "the second booking reused GPU 0's tmpfs"
assert_eq "$(mounted "$ST/compute/$GPU1.d")" 1 "GPU 1's arbiter is on a tmpfs of its own"
for c in same other; do
  grep -q "error" "$E2E_TMP/$c.out" && fail "$c: $(cat "$E2E_TMP/$c.out")"
done

runc kill "$P-grow" KILL >/dev/null 2>&1 || true
wait_stopped grow
out=$("$GPUFRAC" gc)
assert_contains "$out" "Removed the compute arbiters of 2 GPU(s) without compute shares." "gc removes both arbiters"
assert_eq "$(mounted "$DIR0"):$(mounted "$ST/compute/$GPU1.d")" "0:0" "gc unmounted both tmpfs"
assert_eq "$(ls "$ST/compute")" "" "nothing left under the compute directory"
finish
