#!/bin/bash
# The parts of bench/gpu/run.sh that need no GPU: the shim it builds with plain gcc exports the
# same symbols as the CMake build and limits the fake driver the same way; it writes the limit
# file and region; without a GPU it stops with one clear line and exit status 2.
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/shim_lib.sh"
e2e_tmp
need_cmd gcc
run bash "$GPUFRAC_SOURCE_DIR/bench/gpu/run.sh" --build-only "$E2E_TMP/gpu"
assert_eq "$RC" 0 "build only"
GCC_SHIM=$E2E_TMP/gpu/libgpufrac-limits.so
syms() { nm -D --defined-only "$1" | awk '{print $3}' | sort; }
assert_eq "$(syms "$GCC_SHIM")" "$(syms "$SHIM")" "same exports as the CMake build"
assert_eq "$(stat -c %s "$E2E_TMP/gpu/usage")" "$(stat -c %s "$(shim_limits size "$GPU0=1"; echo "$REGION")")" \
  "region of the ABI's size"
assert_contains "$(cat "$E2E_TMP/gpu/limits")" "region $E2E_TMP/gpu/usage" "limit file names the region"

shim_limits gcc "$GPU0=$((64 * MI))"
run env LD_PRELOAD="$GCC_SHIM" "$PROBE" fill cuMemAlloc_v2 "$MI" fill cuMemAllocAsync "$MI"
assert_contains "$OUT" "fill cuMemAlloc_v2 each=$MI ok=64 rc=2" "the gcc-built shim limits the fake driver"

if ! command -v nvidia-smi >/dev/null; then
  run bash "$GPUFRAC_SOURCE_DIR/bench/gpu/run.sh" "$E2E_TMP/gpu2"
  assert_eq "$RC" 2 "no GPU: exit 2"
  assert_eq "$OUT" "gpufrac bench/gpu: nvidia-smi lists no GPU (is the NVIDIA driver loaded?); accepted: a machine with an NVIDIA GPU" \
    "no GPU: one line"
fi
if command -v python3 >/dev/null; then
  run python3 -c "import ast, sys; ast.parse(open(sys.argv[1]).read())" "$GPUFRAC_SOURCE_DIR/bench/gpu/shim_torch.py"
  assert_eq "$RC" 0 "shim_torch.py parses"
fi
finish
