#!/bin/bash
# The limit holds for every counted API, exactly: with a 64 MiB limit and 1 MiB requests, each
# API gets 64 allocations and the 65th is refused with CUDA_ERROR_OUT_OF_MEMORY (2); freeing
# gives everything back; cuMemGetInfo_v2 and cuDeviceTotalMem_v2 show the limit; devices not in
# the limit file are untouched; MIG devices and per-device limits of multi-GPU grants apply.
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/shim_lib.sh"
e2e_tmp
L=$((64 * MI))

for api in cuMemAlloc_v2 cuMemAllocPitch_v2 cuMemAllocManaged cuMemCreate cuMemAllocAsync cuMemAllocAsync_ptsz \
  cuMemAllocFromPoolAsync cuMemAllocFromPoolAsync_ptsz defaultpool cuArrayCreate_v2 cuArray3DCreate_v2 \
  cuMipmappedArrayCreate; do
  shim_limits "$api" "$GPU0=$L"
  shim_run "$PROBE" meminfo fill "$api" "$MI" meminfo freeall meminfo fill "$api" "$MI" freeall
  assert_eq "$RC" 0 "$api: exit"
  each=$(field "fill $api" each)
  n=$((L / each))
  assert_eq "$(printf '%s\n' "$OUT" | grep -c "^fill $api each=$each ok=$n rc=2$")" 2 "$api: $n allocations, then refused, twice"
  assert_eq "$(printf '%s\n' "$OUT" | grep -c "^meminfo free=$L total=$L rc=0$")" 2 "$api: all free before and after"
  assert_contains "$OUT" "meminfo free=$((L - n * each)) total=$L rc=0" "$api: free when full"
  logged=$api
  [ "$api" = defaultpool ] && logged=cuMemAllocFromPoolAsync
  assert_contains "$OUT" "gpufrac: $logged of $each refused: limit $L on $GPU0" "$api: refusal logged"
done
assert_eq "$each" 1835008 "mipmap estimate sums 3 levels (1 MiB + 512 KiB + 256 KiB)"

# The refusal message, once per process however many refusals.
shim_limits msg "$GPU0=$L"
shim_run "$PROBE" alloc cuMemAlloc_v2 $((60 * MI)) alloc cuMemAlloc_v2 $((5 * MI)) alloc cuMemAlloc_v2 $((5 * MI))
assert_eq "$(printf '%s\n' "$OUT" | grep '^gpufrac:')" \
  "gpufrac: cuMemAlloc_v2 of $((5 * MI)) refused: limit $L on $GPU0, $((60 * MI)) in use by this container" "message"
assert_eq "$(printf '%s\n' "$OUT" | grep -c '^alloc cuMemAlloc_v2 5242880 rc=2$')" 2 "both refused"
# A single request above the limit never touches the counters.
shim_run "$PROBE" alloc cuMemAlloc_v2 $((L + 1)) alloc cuMemAlloc_v2 "$L" meminfo
assert_contains "$OUT" "alloc cuMemAlloc_v2 $((L + 1)) rc=2" "over the limit alone"
assert_contains "$OUT" "alloc cuMemAlloc_v2 $L rc=0" "exactly the limit"

# Host-located pools and VMM allocations are not device memory.
shim_limits host "$GPU0=$L"
shim_run "$PROBE" alloc hostpool $((128 * MI)) meminfo
assert_contains "$OUT" "alloc hostpool $((128 * MI)) rc=0" "host pool uncounted"
assert_contains "$OUT" "meminfo free=$L total=$L" "host pool leaves the device free"

# Per-device limits (a multi-GPU grant), a device outside the limit file, a MIG device.
shim_limits multi "$GPU0=$L" "$MIG0=$((32 * MI))"
shim_run "$PROBE" -d 0 fill cuMemAlloc_v2 "$MI" totalmem 0 totalmem 1 totalmem 2
assert_contains "$OUT" "fill cuMemAlloc_v2 each=$MI ok=64 rc=2" "GPU 0 limited"
assert_contains "$OUT" "totalmem $L rc=0" "cuDeviceTotalMem_v2 of a limited device"
assert_contains "$OUT" "totalmem $((40 * GI)) rc=0" "cuDeviceTotalMem_v2 of an unlimited device"
assert_contains "$OUT" "totalmem $((32 * MI)) rc=0" "cuDeviceTotalMem_v2 of the MIG device"
shim_run "$PROBE" -d 2 fill cuMemAlloc_v2 "$MI" meminfo
assert_contains "$OUT" "fill cuMemAlloc_v2 each=$MI ok=32 rc=2" "MIG device limited by its own line"
assert_contains "$OUT" "meminfo free=0 total=$((32 * MI))" "MIG meminfo"
shim_run "$PROBE" -d 1 alloc cuMemAlloc_v2 $((20 * GI)) meminfo
assert_contains "$OUT" "alloc cuMemAlloc_v2 $((20 * GI)) rc=0" "device 1 is not in the limit file"
assert_contains "$OUT" "meminfo free=$((20 * GI)) total=$((40 * GI))" "device 1 reports the driver's numbers"
assert_not_contains "$OUT" "gpufrac:" "no refusal on device 1"
# cuMemCreate counts on the device named in its properties, not the current one.
shim_limits located "$GPU0=$L" "$GPU1=$((16 * MI))"
shim_run "$PROBE" -d 0 fill create@1 "$MI" meminfo
assert_contains "$OUT" "fill create@1 each=$MI ok=16 rc=2" "cuMemCreate on device 1 from a device-0 context"
assert_contains "$OUT" "meminfo free=$L total=$L" "device 0 untouched"

# The host reads the same numbers while a process holds memory.
shim_limits host_view "$GPU0=$L"
holder_start alloc cuMemAlloc_v2 $((24 * MI))
run "$TOOL" usage "$REGION"
assert_contains "$OUT" "live=1 dead=0" "one live process"
assert_contains "$OUT" "device 0 $GPU0 used=$((24 * MI)) stale=0 limit=$L" "host view of usage"
holder_stop
finish
