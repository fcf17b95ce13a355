#!/bin/bash
# What an SM tenant does with its /dev/shm and its environment (docs/architecture.md "SM sharing"),
# from real runc containers through gpufrac-hook on the simulated two-GPU node:
#  1. /dev/shm is the GPU's own tmpfs of 1 GiB, off the state filesystem: a tenant writing 100 MiB
#     there puts none of it in the state directory, a neighbour on the other GPU still starts, and
#     gc unmounts it with the daemon.
#  2. CUDA_MPS_PINNED_DEVICE_MEM_LIMIT set by the container: the lower of its value and the share's
#     wins (a higher one is replaced, a lower one kept).
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/../containers.sh"
source "$(dirname "$0")/sm_lib.sh"
e2e_runc_test smshm
sm_config a100-40gb-x2.yaml
F=$E2E_TMP/fake
wait_for() {
  local n=0
  while [ ! -e "$1" ] && [ $n -lt 300 ]; do sleep 0.1; n=$((n + 1)); done
  [ -e "$1" ] || fail "no $1 after 30 s"
}

# 1. 100 MiB into /dev/shm.
FILL="busybox dd if=/dev/zero of=/dev/shm/fill bs=1M count=100 2>/dev/null; touch $F/full; while [ ! -e $F/go ]; do sleep 0.1; done"
sm_bundle "$E2E_TMP/s" "$FILL" gpufrac.io/compute=30 gpufrac.io/compute-mode=sm
runc run --bundle "$E2E_TMP/s" "$P-s" >"$E2E_TMP/s.out" 2>&1 &
RS=$!
wait_for "$F/full"
SHM=$(mps_dir "$GPU0")/shm
assert_eq "$(stat -f -c %T "$SHM")" tmpfs "the GPU's shm directory is a tmpfs of its own"
assert_eq "$(df -k --output=size "$SHM" | tail -1 | tr -d ' ')" 1048576 "of 1 GiB"
assert_eq "$(du -sk "$SHM/fill" | cut -f1)" 102400 "the tenant's 100 MiB are there"
USED=$(du -sxk "$E2E_TMP/state" | cut -f1)
[ "$USED" -lt 1024 ] || fail "the state directory holds $USED KiB after the tenant's write (at most 1 MiB expected)"
sm_bundle "$E2E_TMP/n" "cat /run/gpufrac/limits" gpufrac.io/fraction=0.25
run runc run --bundle "$E2E_TMP/n" "$P-n"
assert_eq "$RC" 0 "a neighbour's time share starts on GPU 1: $OUT"
assert_contains "$OUT" "compute $GPU1 250000" "on GPU 1"
touch "$F/go"
wait $RS || fail "the tenant: $(cat "$E2E_TMP/s.out")"

# 2. The container's own pinned limit: higher is replaced by the share's, lower is kept.
pinned() {  # pinned <name> <value> <expected>: the limit the container's process sees
  sm_bundle "$E2E_TMP/$1" "mps_probe" gpufrac.io/compute=30 gpufrac.io/compute-mode=sm
  with_env "$E2E_TMP/$1" "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=$2"
  run runc run --bundle "$E2E_TMP/$1" "$P-$1"
  assert_eq "$RC" 0 "runc run with CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=$2: $OUT"
  assert_eq "$(grep -o "^CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=.*" <<<"$OUT")" "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=$3" \
    "the container's $2 gives $3"
}
pinned high "$GPU0=40000M" "$GPU0=12160M"  # higher: replaced by the share's
pinned higher "0=30G" "$GPU0=12160M"       # in GiB, by index
pinned odd "$GPU0=99999999" "$GPU0=12160M" # a form the shim does not read
pinned low "$GPU0=1000M" "$GPU0=1000M"     # lower: kept
pinned lowg "0=2G" "0=2G"

sm_end  # which checks that gc unmounted the daemon's tmpfs
finish
