#!/bin/bash
# bench/gpu/sm_share_check.sh cannot rot on machines without a GPU: it parses, its PyTorch program
# parses, and without a GPU (or root, or PyTorch) it stops with one clear line and exit status 2.
source "$(dirname "$0")/../lib.sh"
e2e_tmp
run bash -n "$GPUFRAC_SOURCE_DIR/bench/gpu/sm_share_check.sh"
assert_eq "$RC:$OUT" "0:" "sm_share_check.sh parses"
if command -v python3 >/dev/null; then
  run python3 -c "import ast, sys; ast.parse(open(sys.argv[1]).read())" "$GPUFRAC_SOURCE_DIR/bench/gpu/sm_torch.py"
  assert_eq "$RC" 0 "sm_torch.py parses"
fi
if ! command -v nvidia-smi >/dev/null; then
  run bash "$GPUFRAC_SOURCE_DIR/bench/gpu/sm_share_check.sh" "$GPUFRAC_BUILD_DIR" "$E2E_TMP/out"
  assert_eq "$RC" 2 "no GPU: exit 2"
  assert_eq "$(wc -l <<<"$OUT")" 1 "one line: $OUT"
  assert_contains "$OUT" "gpufrac bench/gpu/sm_share_check: " "it says who"
fi
finish
