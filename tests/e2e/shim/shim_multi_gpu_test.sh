#!/bin/bash
# A two-GPU share (gpufrac.io/gpus: 2): the limit file holds a line per GPU, and the shim enforces
# each one on its own. One process with a context on each device: allocations past device 0's limit
# are refused on device 0 only, while device 1 still has room and takes them up to its own limit;
# freeing on one device gives room back on that device alone. A second process sees the same split.
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/shim_lib.sh"
e2e_tmp
L0=$((64 * MI)) L1=$((32 * MI))
shim_limits two "$GPU0=$L0" "$GPU1=$L1"

# Device 0 filled past its limit, then device 1: its own limit, not device 0's, nor the sum.
shim_run "$PROBE" -d 0 fill cuMemAlloc_v2 "$MI" meminfo use 1 meminfo alloc cuMemAlloc_v2 $((16 * MI)) meminfo \
  fill cuMemAlloc_v2 "$MI" meminfo use 0 alloc cuMemAlloc_v2 "$MI" meminfo
assert_eq "$RC" 0 "probe over two devices: $OUT"
assert_contains "$OUT" "fill cuMemAlloc_v2 each=$MI ok=64 rc=2" "device 0 refuses past its 64 MiB"
assert_contains "$OUT" "meminfo free=0 total=$L0" "device 0 is full"
assert_contains "$OUT" "use 1 rc=0" "a context on device 1"
assert_contains "$OUT" "meminfo free=$L1 total=$L1" "device 1 is untouched by device 0's allocations"
assert_contains "$OUT" "alloc cuMemAlloc_v2 $((16 * MI)) rc=0" "device 1 takes 16 MiB while device 0 is full"
assert_contains "$OUT" "meminfo free=$((16 * MI)) total=$L1" "device 1 counts only its own"
assert_contains "$OUT" "fill cuMemAlloc_v2 each=$MI ok=16 rc=2" "device 1 refuses at its own 32 MiB"
assert_contains "$OUT" "meminfo free=0 total=$L1" "device 1 full at its own limit"
assert_eq "$(grep -c 'alloc cuMemAlloc_v2 1048576 rc=2' <<<"$OUT")" 1 "device 0 still refuses after device 1 filled"
assert_contains "$OUT" "gpufrac: cuMemAlloc" "the refusal is the shim's"

# What the host reads: each GPU's usage against its own limit.
holder_start fill cuMemAlloc_v2 "$MI" use 1 alloc cuMemAlloc_v2 $((8 * MI))
run "$TOOL" usage "$REGION"
assert_contains "$OUT" "device 0 $GPU0 used=$L0 stale=0 limit=$L0" "host view: device 0 at its limit"
assert_contains "$OUT" "device 1 $GPU1 used=$((8 * MI)) stale=0 limit=$L1" "host view: device 1 at 8 MiB of 32"
# A second process of the same container: device 0 has no room, device 1 the rest of its own.
shim_run "$PROBE" -d 1 fill cuMemAlloc_v2 "$MI" use 0 alloc cuMemAlloc_v2 "$MI"
assert_contains "$OUT" "fill cuMemAlloc_v2 each=$MI ok=24 rc=2" "second process: device 1's remaining 24 MiB"
assert_contains "$OUT" "alloc cuMemAlloc_v2 $MI rc=2" "second process: device 0 refused"
holder_stop
finish
