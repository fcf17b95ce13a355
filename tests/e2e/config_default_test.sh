#!/bin/bash
# One rule for the config's default path, and every program's --help states its real default:
# each of gpufrac, gpufrac-hook, gpufrac-runtime and gpufrac-dra names "$GPUFRAC_CONFIG, else FILE",
# the same FILE for all (the build's <sysconfdir>/gpufrac/config.yaml: /etc/gpufrac/config.yaml for
# the package); then, in a private mount namespace where FILE exists (an overlay on its directory,
# nothing changes on the host), each program without --config and GPUFRAC_CONFIG reads exactly that
# file: a bad key in it is its refusal, naming FILE:1.
source "$(dirname "$0")/lib.sh"
need_root
need_cmd unshare
need_cmd jq
e2e_tmp
unset GPUFRAC_CONFIG

# default_of <help text>: FILE of "$GPUFRAC_CONFIG, else FILE" (up to ")" or ".").
default_of() { grep -o '\$GPUFRAC_CONFIG, else [^ )]*' <<<"$1" | head -1 | sed 's/^\$GPUFRAC_CONFIG, else //; s/\.$//'; }

CLI_DEFAULT=$(default_of "$("$GPUFRAC" --help)")
[ -n "$CLI_DEFAULT" ] || fail "gpufrac --help names no default config"
HOOK_DEFAULT=$(default_of "$("$BIN_DIR/gpufrac-hook" --help)")
RUNTIME_DEFAULT=$(default_of "$("$BIN_DIR/gpufrac-runtime" --help 2>/dev/null || true)")
assert_eq "$HOOK_DEFAULT" "$CLI_DEFAULT" "gpufrac-hook --help names the same default"
assert_eq "$RUNTIME_DEFAULT" "$CLI_DEFAULT" "gpufrac-runtime --help names the same default"
if [ -x "$BIN_DIR/gpufrac-dra" ]; then
  DRA_DEFAULT=$(default_of "$("$BIN_DIR/gpufrac-dra" --help)")
  assert_eq "$DRA_DEFAULT" "$CLI_DEFAULT" "gpufrac-dra --help names the same default"
fi
case $CLI_DEFAULT in
  /etc/gpufrac/config.yaml | /*/etc/gpufrac/config.yaml) ;;
  *) fail "the default $CLI_DEFAULT is not <sysconfdir>/gpufrac/config.yaml" ;;
esac
if [ -z "${GPUFRAC_BIN_DIR:-}" ] && [ -x "$GPUFRAC_BUILD_BIN_DIR/gpufrac_build_info" ]; then
  assert_eq "$CLI_DEFAULT" "$("$GPUFRAC_BUILD_BIN_DIR/gpufrac_build_info" | sed -n 's/^config=//p')" \
    "the help names the path the build embeds"
fi

# The real default: FILE made to exist, with a key no config has, in a private mount namespace.
SYSCONF=$(dirname "$(dirname "$CLI_DEFAULT")")
BEFORE=$(ls -la "$(dirname "$CLI_DEFAULT")" 2>&1 || true)
[ -d "$SYSCONF" ] || skip "$SYSCONF does not exist on this host (an overlay needs it)"
mkdir -p "$E2E_TMP/up" "$E2E_TMP/work" "$E2E_TMP/bundle"
printf '{"ociVersion": "1.0.2", "process": {"env": ["GPUFRAC_FRACTION=0.25"]}, "root": {"path": "rootfs"},
  "annotations": {"gpufrac.io/fraction": "0.25"}}\n' >"$E2E_TMP/bundle/config.json"
printf '{"ociVersion": "1.0.2", "id": "c", "status": "creating", "pid": %d, "bundle": "%s"}' $$ "$E2E_TMP/bundle" \
  >"$E2E_TMP/state.json"
cat >"$E2E_TMP/inside.sh" <<EOF
set -e
mount -t overlay overlay -o lowerdir=$SYSCONF,upperdir=$E2E_TMP/up,workdir=$E2E_TMP/work $SYSCONF
mkdir -p $(dirname "$CLI_DEFAULT")
printf 'not-a-key: 1\n' >$CLI_DEFAULT
echo "== gpufrac"; "$GPUFRAC" status 2>&1 || true
echo "== gpufrac-hook"; "$BIN_DIR/gpufrac-hook" createRuntime <$E2E_TMP/state.json 2>&1 || true
echo "== gpufrac-runtime"; "$BIN_DIR/gpufrac-runtime" state c 2>&1 || true
if [ -x "$BIN_DIR/gpufrac-dra" ]; then echo "== gpufrac-dra"; "$BIN_DIR/gpufrac-dra" --node-name n 2>&1 || true; fi
EOF
run unshare -m --propagation private bash "$E2E_TMP/inside.sh"
assert_eq "$RC" 0 "the namespace: $OUT"
WANT="$CLI_DEFAULT:1: not-a-key: unknown key"
for prog in gpufrac gpufrac-hook gpufrac-runtime gpufrac-dra; do
  [ "$prog" = gpufrac-dra ] && [ ! -x "$BIN_DIR/gpufrac-dra" ] && continue
  section=$(sed -n "/^== $prog\$/,/^== /p" <<<"$OUT")
  assert_contains "$section" "$WANT" "$prog reads $CLI_DEFAULT by default"
done
assert_eq "$(ls -la "$(dirname "$CLI_DEFAULT")" 2>&1 || true)" "$BEFORE" "the host's $(dirname "$CLI_DEFAULT") is as it was"
finish
