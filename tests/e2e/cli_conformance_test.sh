#!/bin/bash
# The gpufrac CLI behaves like the tools operators know. Walks every command and subcommand of
# `gpufrac --help` (and the hidden ledger group): --help exits 0 with its usage, a group alone
# prints the same help, an unknown subcommand or option exits 2 with one "gpufrac:" line that
# suggests the closest name; every command that prints data takes --json and its stdout parses
# with jq (notes stay on stderr); --config works after the subcommand; read-only commands create no
# file; gpufrac-hook and gpufrac-runtime answer --help and --version.
source "$(dirname "$0")/lib.sh"
need_cmd jq
e2e_tmp
e2e_config a100-80gb-mig.yaml
CFG=$GPUFRAC_CONFIG
unset GPUFRAC_CONFIG # every command below names its config, before or after the subcommand

subcommands() { "$GPUFRAC" "$@" --help | sed -n '/^Subcommands:/,$p' | sed -n 's/^  \([a-z][a-z-]*\) .*/\1/p'; }
# Every command path, groups first: "info", "cdi", "cdi generate", ... (ledger is hidden from --help).
walk() {
  local sub
  for sub in $(subcommands "$@"); do
    echo "$* $sub" | sed 's/^ //'
    walk "$@" "$sub"
  done
}
mapfile -t COMMANDS < <(walk; echo ledger; walk ledger)
[ "${#COMMANDS[@]}" -ge 19 ] || fail "only ${#COMMANDS[@]} commands found: ${COMMANDS[*]}"

# 1. Help and usage errors, for every command.
run "$GPUFRAC"
assert_eq "$RC" 0 "gpufrac alone"
assert_eq "$OUT" "$("$GPUFRAC" --help)" "gpufrac alone prints the help"
run "$GPUFRAC" stauts
assert_eq "$RC:$OUT" '2:gpufrac: unknown command "stauts"; did you mean "status"? (see gpufrac --help)' "did you mean"
LEAVES=()
for cmd in "${COMMANDS[@]}"; do
  read -ra words <<<"$cmd"
  run "$GPUFRAC" "${words[@]}" --help
  assert_eq "$RC" 0 "$cmd --help"
  assert_contains "$OUT" "Usage: gpufrac $cmd [OPTIONS]" "$cmd --help names its usage"
  subs=$(subcommands "${words[@]}")
  if [ -n "$subs" ]; then
    help=$OUT
    run "$GPUFRAC" "${words[@]}"
    assert_eq "$RC:$OUT" "0:$help" "$cmd alone prints its help"
    first=$(head -1 <<<"$subs")
    typo=${first:1:1}${first:0:1}${first:2}  # the first two letters swapped
    run "$GPUFRAC" "${words[@]}" "$typo"
    assert_eq "$RC:$OUT" "2:gpufrac: unknown command \"$typo\" for \"gpufrac $cmd\"; did you mean \"$first\"? (see gpufrac $cmd --help)" \
      "$cmd: unknown subcommand"
    continue
  fi
  LEAVES+=("$cmd")
  run "$GPUFRAC" "${words[@]}" --confg x
  assert_eq "$RC" 2 "$cmd: a usage error exits 2"
  assert_eq "$(grep -cvE "^gpufrac: .* \(see gpufrac $cmd --help\)$" <<<"$OUT")" 0 "$cmd: one prefixed line naming the help: $OUT"
  # Required options are checked first; without any, the unknown option is named and the closest suggested.
  "$GPUFRAC" "${words[@]}" --help | grep -q REQUIRED ||
    assert_eq "$OUT" "gpufrac: unknown option \"--confg\" for \"gpufrac $cmd\"; did you mean \"--config\"? (see gpufrac $cmd --help)" \
      "$cmd: unknown option"
done

# 2. --json on every command that prints data (all but metrics, which speaks Prometheus).
without=()
for cmd in "${LEAVES[@]}"; do
  read -ra words <<<"$cmd"
  "$GPUFRAC" "${words[@]}" --help | grep -q -- '--json' || without+=("$cmd")
done
assert_eq "${without[*]}" "metrics" "commands without --json"
SPEC=$E2E_TMP/cdi/gpufrac.yaml
mkdir -p "$E2E_TMP/cdi" "$E2E_TMP/engine" "$E2E_TMP/node-root"
sleep 600 &
SLEEPER=$!
e2e_on_exit() { kill "$SLEEPER" 2>/dev/null || true; }
{ cat "$CFG"; echo "mig: {mode: dynamic}"; } >"$E2E_TMP/dynamic.yaml"
# A node on the simulated r615 machine through the fake NVML, for what only a driver answers.
R615=$E2E_TMP/r615.yaml
mkdir -p "$E2E_TMP/cgroup/c1" "$E2E_TMP/r615-root"
: >"$E2E_TMP/cgroup/cgroup.controllers"
printf 'state-dir: %s\nhost-root: %s\ncgroup-root: %s\nnvml: {backend: nvml, library: %s}\ndriver: {inject: never}\n' \
  "$E2E_TMP/r615-state" "$E2E_TMP/r615-root" "$E2E_TMP/cgroup" "$GPUFRAC_FAKES_DIR/libnvidia-ml.so.1" >"$R615"
export GPUFRAC_FAKE_NVML_MACHINE=$MACHINES/h100-80gb-x3-r615.yaml GPUFRAC_FAKE_NVML_CGROUP_ROOT=$E2E_TMP/cgroup
"$GPUFRAC" info --refresh --config "$R615" >/dev/null 2>&1 || fail "info --refresh on the r615 node"
json_ok() { # json_ok ARGS...: exit 0, stdout one JSON document, stderr separate
  set +e
  "$GPUFRAC" "$@" >"$E2E_TMP/out.json" 2>"$E2E_TMP/err.txt"
  local rc=$?
  set -e
  assert_eq "$rc" 0 "gpufrac $*: $(cat "$E2E_TMP/err.txt")"
  jq -e . "$E2E_TMP/out.json" >/dev/null || fail "gpufrac $* --json: stdout is not JSON: $(head -c 300 "$E2E_TMP/out.json")"
}
JSON_RUNS=(
  "info --json --config $CFG"
  "info --json --refresh --config $CFG"
  "simulate init-root --json --machine $MACHINES/a100-80gb-mig.yaml --root $E2E_TMP/root --no-nodes"
  "status --json --config $CFG"
  "ledger reserve --json --container web --annotation gpufrac.io/mig-profile=1g.10gb --source wrapper --config $CFG"
  "ledger attach --json --container web --pid $SLEEPER --config $CFG"
  "mig provision --json --container batch --annotation gpufrac.io/mig-profile=1g.10gb --pid $SLEEPER --config $CFG"
  "mig plan --json --annotation gpufrac.io/mig-profile=2g.20gb --config $E2E_TMP/dynamic.yaml"
  "mps provision --json --container sm --annotation gpufrac.io/fraction=0.25 --pid $SLEEPER --config $R615"
  "gc --dry-run --json --config $CFG"
  "gc --json --config $CFG"
  "ledger release --json --container web --config $CFG"
  "cdi generate --json --output $SPEC --config $CFG"
  "cdi list --json --spec-dir $E2E_TMP/cdi --config $CFG"
  "cdi validate --json $SPEC"
  "driver-limit set --json --container web --pid $SLEEPER --config $CFG"
  "driver-limit clear --json --config $CFG"
  "driver-limit show --json --cgroup $E2E_TMP/cgroup/c1 --config $R615"
  "node setup --json --host-root $E2E_TMP/node-root --runtime none --config $CFG"
  "node teardown --json --host-root $E2E_TMP/node-root --runtime none"
  "runtime configure containerd --json --dry-run --engine-config $E2E_TMP/engine/config.toml --runtime-path /usr/bin/gpufrac-runtime"
)
done_leaves=""
for r in "${JSON_RUNS[@]}"; do
  read -ra words <<<"$r"
  json_ok "${words[@]}"
  done_leaves="$done_leaves|$(sed -E 's/ --.*//' <<<"$r")"
done
for cmd in "${LEAVES[@]}"; do
  [ "$cmd" = metrics ] || grep -qF "|$cmd" <<<"$done_leaves|" || fail "no --json run of $cmd"
done
assert_eq "$(jq -r '.[0].valid' "$E2E_TMP/out.json" 2>/dev/null || true)" "" "the last run is runtime configure"
assert_eq "$(jq -c '[.engine, .dry_run]' "$E2E_TMP/out.json")" '["containerd",true]' "runtime configure --json"

# 3. --config before or after the subcommand: the same answer.
# (ages left out: the two runs may straddle a second)
no_ages() { jq -c 'del(.. | .age_s?)'; }
assert_eq "$("$GPUFRAC" status --json --config "$CFG" | no_ages)" "$("$GPUFRAC" --config "$CFG" status --json | no_ages)" \
  "--config after status"
assert_eq "$("$GPUFRAC" status --config "$CFG" | wc -l)" "$("$GPUFRAC" --config "$CFG" status | wc -l)" \
  "--config after status (table)"
run "$GPUFRAC" status --config "$E2E_TMP/none.yaml"
assert_eq "$RC" 1 "a missing config"
assert_eq "$OUT" "gpufrac: config: cannot open $E2E_TMP/none.yaml: No such file or directory" "errors are prefixed and name the file"

# 4. Read-only commands create no file, on a node without state: status and gc agree it is empty.
sed "s#state-dir: .*#state-dir: $E2E_TMP/fresh/state#; s#file: .*}#file: $E2E_TMP/fresh/gpufrac.log}#" "$CFG" >"$E2E_TMP/fresh.yaml"
{ cat "$E2E_TMP/fresh.yaml"; echo "mig: {mode: dynamic}"; } >"$E2E_TMP/fresh-dynamic.yaml"
mkdir -p "$E2E_TMP/fresh"
before=$(find "$E2E_TMP/fresh" | sort)
for r in "status" "status --json" "status --no-trunc" "gc --dry-run" "gc --dry-run --json" "info" "info --json" \
  "cdi list" "cdi list --json" "cdi validate $SPEC"; do
  read -ra words <<<"$r"
  run "$GPUFRAC" "${words[@]}" --config "$E2E_TMP/fresh.yaml"
  assert_eq "$(find "$E2E_TMP/fresh" | sort)" "$before" "gpufrac $r creates no file"
done
run "$GPUFRAC" mig plan --annotation gpufrac.io/mig-profile=1g.10gb --config "$E2E_TMP/fresh-dynamic.yaml"
assert_eq "$RC" 0 "mig plan: $OUT"
assert_eq "$(find "$E2E_TMP/fresh" | sort)" "$before" "gpufrac mig plan creates no file"
run "$GPUFRAC" status --config "$E2E_TMP/fresh.yaml"
assert_contains "$OUT" "No shares." "status of a node without state"
run "$GPUFRAC" gc --dry-run --config "$E2E_TMP/fresh.yaml"
assert_eq "$OUT" "Nothing to reclaim.
0 bookings would be kept." "gc --dry-run of a node without state"
run "$GPUFRAC" gc --config "$E2E_TMP/fresh.yaml"
assert_eq "$OUT" "Nothing to reclaim.
0 bookings kept." "gc of a node without state"
run "$GPUFRAC" cdi list --spec-dir "$E2E_TMP/none"
assert_eq "$RC:$OUT" "1:gpufrac: --spec-dir \"$E2E_TMP/none\": No such file or directory; name a directory of CDI specs, e.g. /var/run/cdi" "cdi list names a missing directory"
mkdir -p "$E2E_TMP/none"
run "$GPUFRAC" cdi list --spec-dir "$E2E_TMP/none"
assert_eq "$RC:$OUT" "0:gpufrac: no CDI device found in $E2E_TMP/none" "cdi list says where it looked"

# 5. gpufrac-hook and gpufrac-runtime.
run "$BIN_DIR/gpufrac-hook" --help
assert_eq "$RC" 0 "gpufrac-hook --help"
assert_eq "$(head -1 <<<"$OUT")" "usage: gpufrac-hook prestart|createRuntime|poststop [--config FILE] [--cdi-device NAME] [--attach] [--ld-cache DIRS] [--instance ID] [--claim UID] [--driver-limit]" \
  "gpufrac-hook usage"
run "$BIN_DIR/gpufrac-hook" --version
assert_eq "$RC:$OUT" "0:gpufrac-hook $("$GPUFRAC" --version | cut -d' ' -f2)" "gpufrac-hook --version"
run "$BIN_DIR/gpufrac-hook" createRuntim
assert_eq "$RC:$OUT" '2:gpufrac-hook: "createRuntim" is not a stage; usage: gpufrac-hook prestart|createRuntime|poststop [--config FILE] [--cdi-device NAME] [--attach] [--ld-cache DIRS] [--instance ID] [--claim UID] [--driver-limit]' \
  "gpufrac-hook errors are prefixed gpufrac-hook:"
run "$BIN_DIR/gpufrac-hook" createRuntime --claim ../etc
assert_eq "$RC:$OUT" '2:gpufrac-hook: --claim: claim "../etc" is not a uid; use the object'"'"'s metadata.uid' \
  "gpufrac-hook --claim takes a uid only"
if command -v runc >/dev/null; then
  run env GPUFRAC_CONFIG="$CFG" "$BIN_DIR/gpufrac-runtime" --version
  assert_eq "$RC" 0 "gpufrac-runtime --version"
  assert_eq "$(head -2 <<<"$OUT" | cut -d' ' -f1-3)" "gpufrac-runtime $("$GPUFRAC" --version | cut -d' ' -f2) (gpufrac);
runc version $(runc --version | head -1 | cut -d' ' -f3)" "gpufrac's version, then runc's"
  run env GPUFRAC_CONFIG="$CFG" "$BIN_DIR/gpufrac-runtime" --help
  assert_eq "$RC" 0 "gpufrac-runtime --help"
  assert_contains "$(head -1 <<<"$OUT")" "gpufrac's OCI runtime wrapper" "gpufrac's usage first"
  assert_contains "$OUT" "runc - Open Container Initiative runtime" "then runc's"
fi
finish
