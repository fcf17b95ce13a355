#!/bin/bash
# The driver's user space in gpufrac containers (runc + gpufrac-hook): a plain busybox rootfs with
# glibc and a dynamically linked CUDA program, and no driver file, gets the simulated driver's
# libraries, links, binaries, firmware and socket from the hook; `ldconfig -p` lists libcuda.so.1
# beside the image's own libc; nvidia-smi shows the share as the total; the allocation loop stops at
# the limit. Also: a read-only root (private cache bound over /etc/ld.so.cache), one rootfs shared
# by two containers, a merged-/usr image, the lib64, no-cache and prefix driver layouts, the stale decoy
# never mounted, and hostile images (symlinks to host paths, LD_PRELOAD, a planted ldconfig): nothing
# outside the root changes, no image program runs.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/containers.sh"
e2e_runc_test drv
e2e_gpu_config a100-40gb-x1.yaml
LIB=/usr/lib/x86_64-linux-gnu

# cuda_bundle <dir> [jq filter]: a CUDA bundle with a 0.25 share; the filter edits its config.json.
cuda_bundle() {
  make_bundle "$1" "$CUDA_CHECK; ${3:-true}" gpufrac.io/fraction=0.25
  rm -rf "$1/rootfs"
  make_cuda_rootfs "$1/rootfs"
  jq "${2:-.}" "$1/config.json" >"$1/c.json" && mv "$1/c.json" "$1/config.json"
}

# 1. A plain CUDA rootfs: everything from the hook.
cuda_bundle "$E2E_TMP/b1" . 'grep " /usr/lib/x86_64-linux-gnu/libcuda.so.1 " /proc/self/mountinfo; ls /usr/lib/x86_64-linux-gnu | grep -c 545.23.08;
  ls /usr/lib/firmware/nvidia/550.54.15; test -S /run/nvidia-persistenced/socket && echo socket; nvidia-smi | grep -c MiB'
test -e "$E2E_TMP/b1/rootfs$LIB/libcuda.so.1" && fail "the test image must not carry libcuda"
run runc run --bundle "$E2E_TMP/b1" "$P-1"
assert_eq "$RC" 0 "runc run: $OUT"
expect_cuda "plain rootfs" "$LIB"
assert_contains "$OUT" "ro,nosuid,nodev" "libcuda.so.1 is mounted read-only, nosuid, nodev"
assert_contains "$OUT" "
0
" "the 545.23.08 decoy is not there"
assert_contains "$OUT" "gsp_ga10x.bin" "GSP firmware"
assert_contains "$OUT" "socket" "the persistenced socket"
grep -q libcuda.so.1 "$E2E_TMP/b1/rootfs/etc/ld.so.cache" || fail "the cache was written in place"

# 2. A read-only root: the image is not written; a private cache is bound over /etc/ld.so.cache.
cuda_bundle "$E2E_TMP/b2" '.root.readonly = true' 'grep -c " /etc/ld.so.cache " /proc/self/mountinfo'
run runc run --bundle "$E2E_TMP/b2" "$P-2"
assert_eq "$RC" 0 "read-only root: $OUT"
expect_cuda "read-only root" "$LIB"
assert_eq "$(tail -1 <<<"$OUT")" 1 "read-only root: /etc/ld.so.cache is a mount"
assert_eq "$(stat -c %s "$E2E_TMP/b2/rootfs/etc/ld.so.cache")" 0 "read-only root: the image holds only the empty mount point"

# 3. One rootfs, two containers at once (the second starts while the first runs).
cuda_bundle "$E2E_TMP/b3" . 'sleep 1'
mkdir -p "$E2E_TMP/b4"
jq --arg r "$E2E_TMP/b3/rootfs" '.root.path = $r' "$E2E_TMP/b3/config.json" >"$E2E_TMP/b4/config.json"
runc run --bundle "$E2E_TMP/b3" "$P-3" >"$E2E_TMP/b3.log" 2>&1 </dev/null &
FIRST=$!
run runc run --bundle "$E2E_TMP/b4" "$P-4"
assert_eq "$RC" 0 "the second container on a shared rootfs: $OUT"
expect_cuda "shared rootfs, second" "$LIB"
wait "$FIRST" || fail "the first container on a shared rootfs: $(cat "$E2E_TMP/b3.log")"
OUT=$(cat "$E2E_TMP/b3.log")
expect_cuda "shared rootfs, first" "$LIB"

# 4. A merged-/usr image: /lib, /lib64, /bin... are symlinks into /usr.
make_bundle "$E2E_TMP/b5" "$CUDA_CHECK" gpufrac.io/fraction=0.25
rm -rf "$E2E_TMP/b5/rootfs"
R=$E2E_TMP/b5/rootfs
mkdir -p "$R/usr/lib" "$R/usr/lib64" "$R/usr/bin" "$R/usr/sbin"
for d in lib lib64 bin sbin; do ln -s "usr/$d" "$R/$d"; done
make_cuda_rootfs "$R"
run runc run --bundle "$E2E_TMP/b5" "$P-5"
assert_eq "$RC" 0 "merged-/usr image: $OUT"
expect_cuda "merged /usr" "$LIB" "$LIB"

# 5. Hostile images: /etc/ld.so.cache, /etc/ld.so.conf.d and the driver's library directory as
# symlinks to host paths, a planted /sbin/ldconfig that leaves a marker, LD_PRELOAD in the env.
CANARY=$E2E_TMP/canary
mkdir -p "$CANARY/lib" "$CANARY/conf.d"
echo host >"$CANARY/ld.so.cache"
echo "$CANARY/lib" >"$CANARY/conf.d/host.conf"
canary() { find "$CANARY" -printf '%p %s %T@ %m\n' | sort; }
BEFORE=$(canary)
make_bundle "$E2E_TMP/b6" 'test -e /marker && echo MARKER; nvidia-smi --query-gpu=memory.total --format=csv,noheader,nounits
  alloc_until_limit </dev/null' gpufrac.io/fraction=0.25
rm -rf "$E2E_TMP/b6/rootfs"
R=$E2E_TMP/b6/rootfs
make_cuda_rootfs "$R"
ln -sf "$CANARY/ld.so.cache" "$R/etc/ld.so.cache"
ln -s "$CANARY/conf.d" "$R/etc/ld.so.conf.d"
echo "include /etc/ld.so.conf.d/*.conf" >"$R/etc/ld.so.conf"
rm -rf "$R/usr/lib/x86_64-linux-gnu" && mkdir -p "$R/usr/lib"
ln -s "$CANARY/lib" "$R/usr/lib/x86_64-linux-gnu"
printf '#!/bin/sh\ntouch /marker\n' >"$R/sbin/ldconfig"
jq '.process.env += ["LD_PRELOAD=/nonexistent-evil.so"]' "$E2E_TMP/b6/config.json" >"$E2E_TMP/c.json" &&
  mv "$E2E_TMP/c.json" "$E2E_TMP/b6/config.json"
run runc run --bundle "$E2E_TMP/b6" "$P-6"
assert_eq "$(canary)" "$BEFORE" "hostile image: nothing outside the root changed"
test -e "$R/marker" && fail "hostile image: an image program ran"
assert_not_contains "$OUT" "MARKER" "hostile image: no marker"
if [ "$RC" = 0 ]; then
  assert_contains "$OUT" "$((40536 / 4))" "hostile image, handled inside its root: nvidia-smi"
  assert_contains "$OUT" "allocated 19 x 512 MiB" "hostile image, handled inside its root: the loop stops at the limit"
else
  assert_eq "$(grep -c gpufrac-hook: <<<"$OUT")" 1 "hostile image refused with one line: $OUT"
fi
assert_eq "$(jq '.entries | length' "$E2E_TMP/state/ledger.json")" 0 "every share released"

# 6. The lib64 (RHEL), no-cache and prefix (/usr/local/nvidia, /usr/bin/nvidia-smi a wrapper
# script naming a host path) driver layouts.
for layout in lib64 no-cache prefix; do
  rm -rf "$E2E_TMP/root"
  GPUFRAC_DRIVER_LAYOUT=$layout make_sim_root a100-40gb-x1.yaml
  "$GPUFRAC" info --refresh >/dev/null 2>&1 || fail "$layout: info --refresh"
  want=$LIB
  [ "$layout" = lib64 ] && want=/usr/lib64
  [ "$layout" = prefix ] && want=/usr/local/nvidia/lib64
  cuda_bundle "$E2E_TMP/l-$layout"
  run runc run --bundle "$E2E_TMP/l-$layout" "$P-l-$layout"
  assert_eq "$RC" 0 "$layout layout: $OUT"
  expect_cuda "$layout layout" "$want"
done
finish
