#!/bin/bash
# The manual pages (packaging/man) match the programs: every subcommand and option `gpufrac --help`
# lists is in gpufrac(1), every stage and option of gpufrac-hook's usage line in gpufrac-hook(8),
# every key of etc/config.yaml in gpufrac-config(5); groff formats each page without a warning.
source "$(dirname "$0")/lib.sh"
need_cmd man
e2e_tmp
MAN=$GPUFRAC_SOURCE_DIR/packaging/man
HOOK=$BIN_DIR/gpufrac-hook

render() { MANWIDTH=200 man -l "$MAN/$1" 2>/dev/null | tr -s " "; }

for page in gpufrac.1 gpufrac-hook.8 gpufrac-runtime.8 gpufrac-dra.8 gpufrac-config.5; do
  run man --warnings -l "$MAN/$page"
  assert_eq "$RC" 0 "man -l $page"
  assert_eq "$(MANWIDTH=80 man --warnings -l "$MAN/$page" 2>&1 >/dev/null)" "" "groff warnings in $page"
done

# subcommands <words...>: the subcommands `gpufrac <words> --help` lists.
subcommands() { "$GPUFRAC" "$@" --help | sed -n '/^Subcommands:/,$p' | sed -n 's/^  \([a-z][a-z-]*\) .*/\1/p'; }
# options <words...>: the long options `gpufrac <words> --help` lists, but --help.
options() { "$GPUFRAC" "$@" --help | grep -o -- '--[a-z][a-z-]*' | grep -vx -- '--help' | sort -u; }

PAGE=$(render gpufrac.1)
check_command() {
  local opt
  if [ "$#" -gt 0 ]; then
    grep -qE "^ +$*( |\$)" <<<"$PAGE" || fail "gpufrac(1) does not describe '$*'"
  fi
  for opt in $(options "$@"); do
    grep -qF -- "$opt" <<<"$PAGE" || fail "gpufrac(1) lacks '${*:-gpufrac}' option $opt"
  done
}
walk() {
  local sub subs
  subs=$(subcommands "$@")
  if [ -z "$subs" ]; then check_command "$@"; return; fi
  [ "$#" -eq 0 ] && check_command
  for sub in $subs; do walk "$@" "$sub"; done
}
walk
# Hidden from --help, documented under DEBUGGING COMMANDS.
for sub in reserve attach release; do check_command ledger "$sub"; done

run "$HOOK"
usage=${OUT#*usage: }
assert_contains "$OUT" "usage: gpufrac-hook" "gpufrac-hook prints its usage"
PAGE=$(render gpufrac-hook.8)
for word in $(grep -oE -- '--[a-z-]+|prestart|createRuntime|poststop' <<<"$usage"); do
  grep -qF -- "$word" <<<"$PAGE" || fail "gpufrac-hook(8) lacks $word"
done

# Every key of the documented default config, commented-out examples included.
PAGE=$(render gpufrac-config.5)
keys=$(sed -n 's/^[# ]*\([a-z][a-z-]*\):.*/\1/p' "$GPUFRAC_SOURCE_DIR/etc/config.yaml" | sort -u)
[ -n "$keys" ] || fail "no keys found in etc/config.yaml"
for key in $keys; do
  grep -qE -- "(^|[^a-z-])$key( |:|$)" <<<"$PAGE" || fail "gpufrac-config(5) lacks the key $key"
done
# Every option `gpufrac-dra --help` lists is in gpufrac-dra(8).
if [ -x "$BIN_DIR/gpufrac-dra" ]; then
  DRA_PAGE=$(render gpufrac-dra.8)
  for opt in $("$BIN_DIR/gpufrac-dra" --help | grep -o -- '--[a-z][a-z-]*' | grep -vx -e '--help' -e '--version' | sort -u); do
    grep -qF -- "$opt" <<<"$DRA_PAGE" || fail "gpufrac-dra(8) lacks option $opt"
  done
fi
finish
