#!/bin/bash
# The README's demo story (scripts/demo-story.sh) runs to the end on this node and tells it: the
# node, the CDI spec, four 0.25 containers, the fifth refused, the CUDA program stopped at its limit,
# status with live usage, a burst and its reclaim in status (step 8), and a clean node afterwards.
# nvidia-smi in the container, from the driver gpufrac mounts, shows the share as the total. Then
# (step 9) two busy containers with compute 30 and 70 on the simulated GPU: status's ACHIEVED (10 s)
# is 30 and 70 within 3 points.
source "$(dirname "$0")/lib.sh"
need_root
need_cmd runc
need_cmd jq
[ -x "$GPUFRAC_BUILD_DIR/bin/alloc_until_limit" ] || skip "alloc_until_limit is not built"
[ -x "$GPUFRAC_BUILD_DIR/bin/busy_loop" ] || skip "busy_loop is not built"
run env BUILD_DIR="$GPUFRAC_BUILD_DIR" "$GPUFRAC_SOURCE_DIR/scripts/demo-story.sh"
assert_eq "$RC" 0 "the demo story exits 0: $OUT"
for line in "== 1. The node" "NVIDIA A100-SXM4-40GB" "gpufrac.io/gpu=0-0.25" \
  "demo-sleeper-3 sees /run/gpufrac/limits: device GPU-" \
  "gpufrac-hook: no GPU has 9.9 GiB free for fraction=0.25: GPU 0 0 B" \
  "NVIDIA A100-SXM4-40GB, 10134 MiB" \
  "allocated 19 x 512 MiB = 9.5 GiB; the next cuMemAlloc of 512 MiB returned CUDA_ERROR_OUT_OF_MEMORY" \
  "0    demo-cuda       fraction=0.25  9.9 GiB   9.5 GiB  25 %     0 %              hook" "No shares." \
  "== 8. Burstable memory" "allocated 30 x 1024 MiB = 30.0 GiB" "30.0 GiB (20.0 GiB borrowed)" \
  "allocated 20 x 1024 MiB = 20.0 GiB" "Memory lent and taken back (burst.reclaim)" "of demo-burst (it held 30.0 GiB) for demo-owner" \
  "Done (simulated node"; do
  assert_contains "$OUT" "$line" "demo output"
done
assert_contains "$(grep -E '^0    NVIDIA A100-SXM4-40GB  GPU-[0-9a-f]{8}  ' <<<"$OUT" | head -1)" \
  "9.5 GiB  39.6 GiB  0 B   39.6 GiB  100 %    4" \
  "status: 9.5 GiB used of the 39.6 GiB the four shares reserve, and all of the GPU's time (a quarter each)"
achieved=$(sed -n 's/^ACHIEVED over the last 10 s: //p' <<<"$OUT")
for c in 30 70; do
  got=$(sed -n "s/.*demo-busy-$c \([0-9.]*\) %.*/\1/p" <<<"$achieved")
  awk -v g="$got" -v w="$c" 'BEGIN { d = g - w; if (d < 0) d = -d; exit !(g != "" && d <= 3) }' ||
    fail "status: demo-busy-$c achieved $got % of the GPU over 10 s, expected $c +- 3 ($achieved)"
done
assert_contains "$OUT" "busy_loop: " "the busy containers ran"
assert_eq "$(runc list -q | grep -c '^demo-' || true)" 0 "no demo container left"
assert_eq "$(ls -d /tmp/gpufrac-demo.* 2>/dev/null | wc -l)" 0 "the demo's temporary root is removed"
finish
