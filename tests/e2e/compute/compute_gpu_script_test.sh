#!/bin/bash
# bench/gpu/compute.sh cannot rot on machines without a GPU: it parses, its PyTorch program parses,
# the keys the script reads of the program's output are the ones the program prints, and without a
# GPU (or root, or PyTorch) it stops with one clear line and exit status 2.
source "$(dirname "$0")/../lib.sh"
e2e_tmp
run bash -n "$GPUFRAC_SOURCE_DIR/bench/gpu/compute.sh"
assert_eq "$RC:$OUT" "0:" "compute.sh parses"
if command -v python3 >/dev/null; then
  run python3 -c "import ast, sys; ast.parse(open(sys.argv[1]).read())" "$GPUFRAC_SOURCE_DIR/bench/gpu/compute_torch.py"
  assert_eq "$RC" 0 "compute_torch.py parses"
  # What compute.sh reads of each program's JSON line is what that program prints: every key it
  # asks of a loop (result NAME KEY, alone/shares WHAT KEY) is a key of the dict the loop's function
  # returns, and every loop it runs is one the program's command line accepts.
  run python3 - "$GPUFRAC_SOURCE_DIR/bench/gpu/compute_torch.py" "$GPUFRAC_SOURCE_DIR/bench/gpu/compute.sh" <<'PY'
import ast, re, sys
tree = ast.parse(open(sys.argv[1]).read())
keys = {}
for f in tree.body:
    if isinstance(f, ast.FunctionDef):
        for r in ast.walk(f):
            if isinstance(r, ast.Return) and isinstance(r.value, ast.Dict):
                keys.setdefault(f.name, set()).update(k.value for k in r.value.keys if isinstance(k, ast.Constant))
choices = set()
for c in ast.walk(tree):
    if isinstance(c, ast.keyword) and c.arg == "choices" and isinstance(c.value, ast.List):
        choices.update(e.value for e in c.value.elts if isinstance(e, ast.Constant))
asked = []
for line in open(sys.argv[2]):
    line = line.strip()
    m = re.fullmatch(r"(?:alone|shares) (\w+) (\w+)", line)
    if m:
        asked.append((m[1], m[2]))
    for name, key in re.findall(r'\$\(result "?([^" ]+)"? (\w+)\)', line):
        asked.append(("infer" if name == "infer" else "matmul", key))
bad = [f"{w}: {k}" for w, k in asked if k not in keys.get(w, ()) or w not in choices]
print(f"{len(asked)} keys asked; missing: {bad}" if bad else f"{len(asked)} keys asked, all printed")
sys.exit(1 if bad or len(asked) < 10 else 0)
PY
  assert_eq "$RC:$OUT" "0:11 keys asked, all printed" "compute.sh reads what compute_torch.py prints"
fi
if ! command -v nvidia-smi >/dev/null; then
  run bash "$GPUFRAC_SOURCE_DIR/bench/gpu/compute.sh" "$GPUFRAC_BUILD_DIR" "$E2E_TMP/out"
  assert_eq "$RC" 2 "no GPU: exit 2"
  assert_eq "$(wc -l <<<"$OUT")" 1 "one line: $OUT"
  assert_contains "$OUT" "gpufrac bench/gpu/compute: " "it says who"
fi
finish
