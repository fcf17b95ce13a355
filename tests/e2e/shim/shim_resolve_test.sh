#!/bin/bash
# Programs that never link libcuda are limited too: dlopen + dlsym (ctypes, JAX, NCCL) and
# cuGetProcAddress / cuGetProcAddress_v2 (the CUDA runtime), including per-thread-stream
# variants, version rules, and a driver whose proc table holds other addresses than its symbols.
# The shim's dlsym keeps RTLD_NEXT relative to its real caller.
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/shim_lib.sh"
e2e_tmp
L=$((64 * MI))
S=libgpufrac-limits.so
C=libcuda.so.1

shim_limits dlopen "$GPU0=$L"
shim_run "$SHIM_BIN/shim_dlopen" "$MI"
assert_eq "$RC" 0 "shim_dlopen exit"
assert_contains "$OUT" "dlsym cuInit $C:cuInit" "unwrapped names come from the driver"
assert_contains "$OUT" "dlsym cuMemAlloc_v2 $S:cuMemAlloc_v2" "dlsym(handle) of a wrapped name"
assert_contains "$OUT" "dlsym cuGetProcAddress_v2 $S:cuGetProcAddress_v2" "dlsym of cuGetProcAddress_v2"
assert_contains "$OUT" "dlsym RTLD_DEFAULT $S:cuMemAlloc_v2 RTLD_NEXT $S:cuMemAlloc_v2 missing null+dlerror" \
  "RTLD_DEFAULT, RTLD_NEXT and a missing name"
assert_contains "$OUT" "fill each=$MI ok=64 rc=2" "limited through dlsym"
# Without the shim the same program is not limited (the check above can fail).
run "$SHIM_BIN/shim_dlopen" $((GI))
assert_contains "$OUT" "dlsym cuMemAlloc_v2 $C:cuMemAlloc_v2" "baseline: the driver's own"
assert_contains "$OUT" "fill each=$GI ok=40 rc=2" "baseline: the whole fake device"

check_procaddr() {
  local mode=$1 gpa=$2
  assert_eq "$RC" 0 "$mode: exit"
  assert_contains "$OUT" "resolve cuGetProcAddress $3 0 $S:$gpa rc=0" "$mode: cuGetProcAddress resolves to the shim's"
  for pair in cuMemAlloc:cuMemAlloc_v2 cuMemFree:cuMemFree_v2 cuMemGetInfo:cuMemGetInfo_v2 \
    cuMemAllocPitch:cuMemAllocPitch_v2 cuMemAllocManaged:cuMemAllocManaged cuMemCreate:cuMemCreate \
    cuMemRelease:cuMemRelease cuArrayCreate:cuArrayCreate_v2 cuArray3DCreate:cuArray3DCreate_v2 \
    cuMipmappedArrayCreate:cuMipmappedArrayCreate cuDeviceTotalMem:cuDeviceTotalMem_v2 \
    cuMemPoolCreate:cuMemPoolCreate cuMemFreeAsync:cuMemFreeAsync; do
    assert_contains "$OUT" "resolve ${pair%%:*} 12000 0 $S:${pair#*:} rc=0" "$mode: ${pair%%:*}"
  done
  assert_contains "$OUT" "resolve cuMemAllocAsync 12000 2 $S:cuMemAllocAsync_ptsz rc=0" "$mode: per-thread variant"
  assert_contains "$OUT" "resolve cuMemAllocFromPoolAsync 12000 2 $S:cuMemAllocFromPoolAsync_ptsz rc=0" \
    "$mode: per-thread pool variant"
  assert_contains "$OUT" "resolve cuMemAlloc 3000 0 $C:cuMemAlloc rc=0" "$mode: a pre-3.2 caller gets the legacy function"
  assert_contains "$OUT" "resolve cuMemAllocAsync 11000 0 null rc=500" "$mode: too old a version stays refused"
  assert_contains "$OUT" "resolve cuInit 12000 0 $C:cuInit rc=0" "$mode: unwrapped functions come from the driver"
  assert_contains "$OUT" "fill each=$MI ok=64 rc=2" "$mode: limited through cuGetProcAddress"
}
for distinct in 0 1; do
  export GPUFRAC_FAKE_CUDA_DISTINCT_PROCS=$distinct
  shim_limits "gpa2_$distinct" "$GPU0=$L"
  shim_run "$SHIM_BIN/shim_procaddr" v2 "$MI"
  check_procaddr "v2 distinct=$distinct" cuGetProcAddress_v2 12000
  assert_contains "$OUT" "resolve cuMemAllocAsync 11000 0 null rc=500 status=2" "symbolStatus passed through"
  shim_limits "gpa1_$distinct" "$GPU0=$L"
  shim_run "$SHIM_BIN/shim_procaddr" v1 "$MI"
  check_procaddr "v1 distinct=$distinct" cuGetProcAddress 11030
done

# RTLD_NEXT from a library loaded after the shim reaches the next definition, not itself.
run env LD_PRELOAD="$SHIM" "$SHIM_BIN/shim_next"
assert_eq "$OUT" "getppid ok" "RTLD_NEXT relative to the caller"
finish
