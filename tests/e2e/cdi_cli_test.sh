#!/bin/bash
# gpufrac cdi generate | list | validate with the real binary: the spec file (mode 0644, atomic,
# deterministic, the preload file next to it), the same spec as the golden one once paths are
# normalised, every shipped machine's spec validates, a node without devices removes a stale
# spec, list resolves directories like the CDI library, validate rejects every crafted bad spec.
source "$(dirname "$0")/lib.sh"
need_cmd jq
e2e_tmp
FIX=$GPUFRAC_SOURCE_DIR/tests/fixtures/cdi
e2e_config a100-40gb-x1.yaml "shim: {path: /usr/lib/x86_64-linux-gnu/gpufrac/libgpufrac-limits.so}" \
  "hook: {path: /usr/bin/gpufrac-hook}" \
  "cdi: {output: $E2E_TMP/run-cdi/gpufrac.yaml, memory-shares: [4Gi, 10Gi, 48Gi]}"
SPEC=$E2E_TMP/run-cdi/gpufrac.yaml

# 1. Default output: written atomically, mode 0644, no temp file left; the preload file too.
umask 077
run "$GPUFRAC" cdi generate
assert_eq "$RC" 0 "generate: $OUT"
assert_contains "$OUT" "CDI spec for 12 devices of kind gpufrac.io/gpu written to $SPEC" "summary line"
assert_contains "$OUT" 'gpufrac: warning: no device gpufrac.io/gpu=0-48Gi: CDI device "0-48Gi": 48Gi is not less than' \
  "a memory share larger than the GPU is left out with a warning"
assert_eq "$(stat -c %a "$SPEC")" 644 "spec mode"
assert_eq "$(ls -A "$E2E_TMP/run-cdi")" "gpufrac.yaml" "only the spec in the directory"
assert_eq "$(cat "$E2E_TMP/state/cdi/ld.so.preload")" "/run/gpufrac/libgpufrac-limits.so" "preload lists the shim only"
assert_eq "$(stat -c %a "$E2E_TMP/state/cdi/ld.so.preload")" 644 "preload mode"
umask 022

# 2. Deterministic, and the same bytes on stdout.
cp "$SPEC" "$E2E_TMP/first.yaml"
"$GPUFRAC" cdi generate >/dev/null 2>&1
cmp -s "$SPEC" "$E2E_TMP/first.yaml" || fail "a second generate changed the spec"
"$GPUFRAC" cdi generate --output - >"$E2E_TMP/stdout.yaml" 2>/dev/null
cmp -s "$SPEC" "$E2E_TMP/stdout.yaml" || fail "--output - differs from the file"

# 3. The golden spec, once this test's paths are put back to the golden config's.
normalise() {
  sed -e "s#$E2E_TMP/root##g" -e "s#$E2E_TMP/state#/run/gpufrac#g" -e "s#$E2E_TMP/config.yaml#/etc/gpufrac/config.yaml#g" "$1" |
    jq -S 'walk(if type == "object" and has("hostPath") and .hostPath == .path then del(.hostPath) else . end)'
}
"$GPUFRAC" cdi generate --output "$E2E_TMP/x1.json" >/dev/null 2>&1
assert_eq "$(head -c 1 "$E2E_TMP/x1.json")" "{" "a .json output is JSON"
assert_eq "$(normalise "$E2E_TMP/x1.json")" "$(jq -S . "$FIX/expected/a100-40gb-x1.json")" "CLI output = golden spec"

# 4. Every shipped machine: a spec that validates, in both formats.
for m in "$MACHINES"/*.yaml; do
  name=$(basename "$m" .yaml)
  for fmt in yaml json; do
    run "$GPUFRAC" cdi generate --machine "$m" --format "$fmt" --output "$E2E_TMP/m/$name.$fmt"
    assert_eq "$RC" 0 "generate $name $fmt: $OUT"
    case "$name" in *-mig-empty) continue ;; esac
    run "$GPUFRAC" cdi validate "$E2E_TMP/m/$name.$fmt"
    assert_eq "$RC" 0 "validate $name.$fmt: $OUT"
    assert_contains "$OUT" "$E2E_TMP/m/$name.$fmt: valid (cdiVersion 0.5.0, kind gpufrac.io/gpu," "$name.$fmt valid"
  done
done
assert_eq "$(ls "$E2E_TMP/m" | wc -l)" 14 "seven machines x two formats (none for the empty MIG GPUs)"

# 5. A node with nothing to offer: no spec, a stale one is removed.
cp "$SPEC" "$E2E_TMP/m/stale.yaml"
run "$GPUFRAC" cdi generate --machine "$MACHINES/h100-80gb-mig-empty.yaml" --output "$E2E_TMP/m/stale.yaml"
assert_eq "$RC" 0 "no devices is not an error"
assert_eq "$OUT" "gpufrac: this node offers no CDI device (no GPU outside MIG mode, no MIG instance); removed $E2E_TMP/m/stale.yaml" \
  "notice names the removed file"
[ -e "$E2E_TMP/m/stale.yaml" ] && fail "stale spec still there"

# 6. Refusals: one line, exit 1.
run "$GPUFRAC" cdi generate --output "$E2E_TMP/spec.txt"
assert_eq "$RC" 1 "bad extension"
assert_eq "$OUT" "gpufrac: --output: \"$E2E_TMP/spec.txt\": runtimes read only *.yaml and *.json files; use a name ending in .yaml or .json" \
  "extension message"
run "$GPUFRAC" cdi generate --kind g/gpu --output -
assert_eq "$RC" 1 "one-character vendor"
assert_contains "$OUT" "gpufrac: --kind: kind \"g/gpu\": vendor \"g\" has one character (podman 4.3.1 panics on it)" "kind message"
run "$GPUFRAC" cdi generate --format toml --output -
assert_eq "$OUT" 'gpufrac: --format: "toml" is not a format; use yaml or json' "format message"

# 7. list: priority (later directory wins), a broken file skipped, a same-priority conflict dropped.
mkdir -p "$E2E_TMP/etc-cdi" "$E2E_TMP/run2"
"$GPUFRAC" cdi generate --kind other.io/gpu --output "$E2E_TMP/etc-cdi/other.yaml" >/dev/null 2>&1
cp "$E2E_TMP/etc-cdi/other.yaml" "$E2E_TMP/etc-cdi/copy.yaml"  # every other.io/gpu device twice
cp "$SPEC" "$E2E_TMP/etc-cdi/gpufrac.yaml"
cp "$FIX/bad/bad-hook-name.yaml" "$E2E_TMP/run2/broken.yaml"
run "$GPUFRAC" cdi list --spec-dir "$E2E_TMP/etc-cdi" --spec-dir "$E2E_TMP/run2" --spec-dir "$E2E_TMP/run-cdi" --json
assert_eq "$RC" 0 "list: $OUT"
LIST=$(sed -n '/^\[/,$p' <<<"$OUT")
assert_eq "$(jq length <<<"$LIST")" 12 "twelve gpufrac.io/gpu devices; the conflicting other.io/gpu ones are dropped"
assert_eq "$(jq -r '.[0].name + " " + .[0].spec' <<<"$LIST")" "gpufrac.io/gpu=0 $SPEC" "highest priority first"
assert_eq "$(jq -r '.[11].name' <<<"$LIST")" "gpufrac.io/gpu=all" "spec order"
assert_contains "$OUT" "gpufrac: warning: $E2E_TMP/run2/broken.yaml: skipped: devices[0].containerEdits.hooks[0].hookName" "broken file"
assert_contains "$OUT" "gpufrac: warning: other.io/gpu=0: defined in $E2E_TMP/etc-cdi/copy.yaml and $E2E_TMP/etc-cdi/other.yaml (same priority)" \
  "conflict warning"
run "$GPUFRAC" cdi list --spec-dir "$E2E_TMP/run-cdi"
assert_eq "$(head -1 <<<"$OUT")" "DEVICE                                                   SPEC" "table header"
assert_contains "$OUT" "gpufrac.io/gpu=0-0.25                                    $SPEC" "table row"
run "$GPUFRAC" cdi list   # default cdi.spec-dirs from the config (missing directories offer nothing)
assert_eq "$RC" 0 "list with the configured directories"

# 8. validate: every crafted bad spec exits 1 with exactly its expected lines; good ones exit 0.
n=0
for f in "$FIX"/bad/*.yaml; do
  run "$GPUFRAC" cdi validate "$f"
  assert_eq "$RC" 1 "validate $(basename "$f") exits 1"
  # gpufrac: FILE:LINE: error: LOCATION: MESSAGE (the file itself: gpufrac: FILE: MESSAGE)
  assert_eq "$(sed -E "s|^gpufrac: $f(:[0-9]+: error)?: ||" <<<"$OUT")" "$(sed -n 's|^# expect: ||p' "$f")" \
    "validate $(basename "$f") message"
  assert_eq "$(grep -cvE "^gpufrac: $f(:[1-9][0-9]*: error)?: " <<<"$OUT")" 0 "validate $(basename "$f"): prefix, file:line, severity"
  n=$((n + 1))
done
[ "$n" -ge 15 ] || fail "only $n bad specs"
run "$GPUFRAC" cdi validate "$FIX"/good/*
assert_eq "$RC" 0 "good specs: $OUT"
run "$GPUFRAC" cdi validate "$E2E_TMP/nonexistent.yaml"
assert_eq "$RC" 1 "missing file"
assert_contains "$OUT" "gpufrac: cannot open $E2E_TMP/nonexistent.yaml" "names the file"
BAD=$FIX/bad/bad-permissions.yaml
run "$GPUFRAC" cdi validate "$BAD"
assert_eq "$OUT" "gpufrac: $BAD:7: error: devices[0].containerEdits.deviceNodes[0].permissions: \"rwx\" is not a subset of rwm; use r, w and m (e.g. rw), or none" \
  "the line of the flow mapping that holds the bad value"
run "$GPUFRAC" cdi validate --json "$BAD" "$FIX/good/newer-version.yaml"
assert_eq "$RC" 1 "--json: exit 1 on errors"
assert_eq "$(jq -c '[.[] | [.valid, (.problems | map([.line, .severity, .location]))]]' <<<"$OUT")" \
  '[[false,[[7,"error","devices[0].containerEdits.deviceNodes[0].permissions"]]],[true,[[2,"warning","cdiVersion"]]]]' \
  "validate --json"
finish
