#!/bin/bash
# Each failure of peer shims listed in the reference notes (memory-limit-shims.md section 2) that
# applies to a memory limit, shown not to happen here.
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/shim_lib.sh"
e2e_tmp
L=$((64 * MI))

# 2.4 Async pools: repeated cuMemAllocAsync / cuMemFreeAsync never hold more than one block, so
# nothing may be refused (HAMi-core#96); cuMemAllocFromPoolAsync is counted (HAMi-core#93).
shim_limits async "$GPU0=$L"
shim_run "$PROBE" churn cuMemAllocAsync $((48 * MI)) 20000 churn cuMemAllocAsync_ptsz $((48 * MI)) 20000 \
  churn defaultpool $((48 * MI)) 20000 churn cuMemAllocFromPoolAsync $((48 * MI)) 20000 meminfo
for api in cuMemAllocAsync cuMemAllocAsync_ptsz defaultpool cuMemAllocFromPoolAsync; do
  assert_contains "$OUT" "churn $api refused=0" "no false OOM in an alloc/free loop ($api)"
done
assert_contains "$OUT" "meminfo free=$L total=$L" "async churn leaves nothing counted"
shim_run "$PROBE" fill cuMemAllocFromPoolAsync "$MI" fill defaultpool "$MI"
assert_contains "$OUT" "fill cuMemAllocFromPoolAsync each=$MI ok=64 rc=2" "FromPool counted"
assert_contains "$OUT" "fill defaultpool each=$MI ok=0 rc=2" "FromPool shares the limit"

# 1.3 Arrays were pure pass-through: here they are counted (estimate in limits/shim/array_size.c).
shim_limits arrays "$GPU0=$L"
shim_run "$PROBE" fill cuArrayCreate_v2 "$MI" fill cuArray3DCreate_v2 "$MI" freeall fill cuArray3DCreate_v2 "$MI"
assert_contains "$OUT" "fill cuArrayCreate_v2 each=$MI ok=64 rc=2" "cuArrayCreate_v2 counted"
assert_contains "$OUT" "fill cuArray3DCreate_v2 each=$MI ok=0 rc=2" "arrays share the limit"
assert_contains "$OUT" "fill cuArray3DCreate_v2 each=$MI ok=64 rc=2" "cuArrayDestroy gives back"

# 2.5 A thread with no context: cuCtxGetDevice fails; nothing may be indexed with its garbage.
shim_limits noctx "$GPU0=$L"
shim_run "$PROBE" noctx cuMemAlloc_v2 "$MI" noctx cuMemAllocAsync "$MI" noctx cuArrayCreate_v2 "$MI" \
  noctx cuMemAllocManaged "$MI" noctx-meminfo meminfo
assert_eq "$RC" 0 "no crash"
for api in cuMemAlloc_v2 cuMemAllocAsync cuArrayCreate_v2 cuMemAllocManaged cuMemGetInfo_v2; do
  assert_contains "$OUT" "noctx $api rc=201" "$api without a context: CUDA_ERROR_INVALID_CONTEXT"
done
assert_contains "$OUT" "meminfo free=$L total=$L" "nothing counted"
# The same with one CUDA device in the process, where the shim knows the device without asking the
# driver for the current one: the driver's own error for each call, nothing counted; then counting
# and the limit as with several devices.
GPUFRAC_FAKE_CUDA_DEVICES="$GPU0=40Gi" shim_run "$PROBE" noctx cuMemAlloc_v2 "$MI" noctx cuMemAllocAsync "$MI" \
  noctx cuArrayCreate_v2 "$MI" noctx cuMemAllocManaged "$MI" noctx-meminfo meminfo fill cuMemAlloc_v2 "$MI" meminfo
assert_eq "$RC" 0 "one device: no crash"
for api in cuMemAlloc_v2 cuMemAllocAsync cuArrayCreate_v2 cuMemAllocManaged cuMemGetInfo_v2; do
  assert_contains "$OUT" "noctx $api rc=201" "one device: $api without a context: CUDA_ERROR_INVALID_CONTEXT"
done
assert_contains "$OUT" "meminfo free=$L total=$L" "one device: nothing counted"
assert_contains "$OUT" "fill cuMemAlloc_v2 each=$MI ok=64 rc=2" "one device: counted up to the limit"
assert_contains "$OUT" "meminfo free=0 total=$L" "one device: the report sees it"

# 2.7 cuMemGetInfo_v2 with free or total NULL (OptiX) must not crash.
shim_run "$PROBE" alloc cuMemAlloc_v2 "$MI" meminfo-null
assert_contains "$OUT" "meminfo-null rc=0,0,0 free=$((L - MI)) total=$L" "NULL outputs tolerated"

# 2.2 A process SIGKILLed while it holds memory leaves no lock: the next one starts at once.
shim_limits stuck "$GPU0=$L"
holder_start fill cuMemAlloc_v2 "$MI"
kill -KILL "$HOLD_PID"
holder_stop
run timeout 10 env LD_PRELOAD="$SHIM" "$PROBE" fill cuMemAlloc_v2 "$MI"
assert_eq "$RC" 0 "next process not blocked"
assert_contains "$OUT" "fill cuMemAlloc_v2 each=$MI ok=64 rc=2" "killed holder's bytes reclaimed"

# 2.3 Counter underflow (17592186044134MiB in nvidia-smi): double frees, frees of memory this
# process never charged, and a forked child's allocations never drive a counter below zero.
shim_limits underflow "$GPU0=$L"
shim_run "$PROBE" alloc cuMemAlloc_v2 $((8 * MI)) doublefree cuMemAlloc_v2 "$MI" doublefree cuMemCreate "$MI" \
  doublefree cuArrayCreate_v2 "$MI" doublefree cuMemAllocAsync "$MI" fork cuMemAlloc_v2 $((60 * MI)) \
  fork cuMemAlloc_v2 $((56 * MI)) meminfo
assert_contains "$OUT" "doublefree cuMemAlloc_v2 rc=0,0,1" "second cuMemFree_v2 fails in the driver"
assert_contains "$OUT" "doublefree cuMemCreate rc=0,0,1" "second cuMemRelease fails in the driver"
assert_contains "$OUT" "child alloc cuMemAlloc_v2 $((60 * MI)) rc=2" "a forked child shares the limit"
assert_contains "$OUT" "child alloc cuMemAlloc_v2 $((56 * MI)) rc=0" "a forked child has its own slot"
assert_contains "$OUT" "meminfo free=$((56 * MI)) total=$L" "parent still holds 8 MiB, exited child none"
run "$TOOL" raw "$REGION"
assert_contains "$OUT" "dev0=$((8 * MI)) " "counters exact, no wrap-around"
# NVML never reports free above total or used below zero (2.3; NVML's free = limit - usage).
if fake_nvml_usable; then
  GPUFRAC_FAKE_NVML_MACHINE=$MACHINES/a100-40gb-x1.yaml shim_run "$SHIM_BIN/shim_nvml"
  assert_contains "$OUT" "v1 total=$L free=$L used=0 rc=0" "NVML after the frees"
fi

# 1.3 cuDeviceTotalMem returned 0 without a limit: here an unlimited device reports the driver.
shim_run "$PROBE" totalmem 1
assert_contains "$OUT" "totalmem $((40 * GI)) rc=0" "unlimited cuDeviceTotalMem_v2"

# 2.11 A non-root user in the container maps the region (created mode 0666) and is limited.
if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null; then
  chmod 755 "$E2E_TMP"
  shim_limits nobody "$GPU0=$L"
  run setpriv --reuid=65534 --regid=65534 --clear-groups env LD_PRELOAD="$SHIM" "$PROBE" fill cuMemAlloc_v2 "$MI"
  assert_contains "$OUT" "fill cuMemAlloc_v2 each=$MI ok=64 rc=2" "limited as user 65534"
  assert_not_contains "$OUT" "usage region" "region usable as user 65534"
fi
finish
