#!/bin/bash
# The manual pages (packaging/man) match the programs: every subcommand `gpufrac --help` lists is in
# gpufrac(1), and every option and every choice of an option (--driver-layout prefix) in that
# command's own entry; every stage and option of gpufrac-hook's usage line in gpufrac-hook(8), every
# key of etc/config.yaml in gpufrac-config(5). groff formats each page without a warning (all of
# them on), and no alternating-font macro glues words (man_glue.awk: groff does not see that).
source "$(dirname "$0")/lib.sh"
need_cmd man
e2e_tmp
MAN=$GPUFRAC_SOURCE_DIR/packaging/man
HOOK=$BIN_DIR/gpufrac-hook

render() { MANWIDTH=200 man -l "$MAN/$1" 2>/dev/null | tr -s " "; }

PAGES=$(cd "$MAN" && ls -- *.[1-8])
[ "$(wc -w <<<"$PAGES")" -ge 5 ] || fail "found only these pages: $PAGES"
for page in $PAGES; do
  run man --warnings -l "$MAN/$page"
  assert_eq "$RC" 0 "man -l $page"
  assert_eq "$(MANWIDTH=80 man --warnings -l "$MAN/$page" 2>&1 >/dev/null)" "" "groff warnings in $page"
  assert_eq "$(groff -man -Tutf8 -ww -z "$MAN/$page" 2>&1)" "" "groff -ww warnings in $page"
done
run awk -f "$(dirname "$0")/man_glue.awk" $(for p in $PAGES; do echo "$MAN/$p"; done)
assert_eq "$RC" 0 "words glued by an alternating-font macro: $OUT"
# Every example that starts a container with podman shares the host PID namespace, which gpufrac
# requires (a container with its own is refused): in every page and in the README.
for page in $PAGES; do
  while IFS= read -r line; do
    assert_contains "$line" "--pid=host" "$page: a podman example without --pid=host"
  done < <(MANWIDTH=200 man -l "$MAN/$page" 2>/dev/null | grep -E 'podman( [-a-z=]+)* run ' || true)
done
while IFS= read -r line; do
  assert_contains "$line" "--pid=host" "README.md: a podman example without --pid=host"
done < <(grep -E 'podman( [-a-z=]+)* run ' "$GPUFRAC_SOURCE_DIR/README.md" || true)
# The checker itself: the line gpufrac-hook(8) once had, and what must pass.
printf '.RB ( gpufrac.io/gpus " alone: whole GPUs)," or the same as\n' >"$E2E_TMP/glued.8"
run awk -f "$(dirname "$0")/man_glue.awk" "$E2E_TMP/glued.8"
assert_eq "$RC" 1 "man_glue.awk finds the glued line"
assert_contains "$OUT" 'words glued by .RB: " alone: whole GPUs)," and "or"' "man_glue.awk names the junction"
printf '.BR gpufrac (1),\n.IR file : line\n.BI gpu\\- N \\-mig\\- C c\n.RB ( gpufrac.io/gpus\n' >"$E2E_TMP/fine.8"
run awk -f "$(dirname "$0")/man_glue.awk" "$E2E_TMP/fine.8"
assert_eq "$RC" 0 "man_glue.awk passes intended glue: $OUT"

# subcommands <words...>: the subcommands `gpufrac <words> --help` lists.
subcommands() { "$GPUFRAC" "$@" --help | sed -n '/^Subcommands:/,$p' | sed -n 's/^  \([a-z][a-z-]*\) .*/\1/p'; }
# options <words...>: the long options `gpufrac <words> --help` lists, but --help.
options() { "$GPUFRAC" "$@" --help | grep -o -- '--[a-z][a-z-]*' | grep -vx -- '--help' | sort -u; }

PAGE=$(render gpufrac.1)
RAW=$(MANWIDTH=200 man -l "$MAN/gpufrac.1" 2>/dev/null)  # the indentation kept: items at 7 spaces
# entry <words...>: the rendered entry of `gpufrac <words>` (its item line, indented 7, up to the next
# item or section); with no words, GLOBAL OPTIONS.
entry() {
  if [ "$#" -eq 0 ]; then
    sed -n '/^GLOBAL OPTIONS/,/^COMMANDS/p' <<<"$RAW"
    return
  fi
  awk -v want="$*" '
    /^[^ ]/ || /^       [^ ]/ { inside = 0 }
    /^       [^ ]/ { line = substr($0, 8); if (line == want || index(line, want " ") == 1) inside = 1 }
    inside { print }
  ' <<<"$RAW"
}
# choices <words...>: the values of every option with a fixed set ({a,b,c} in --help).
choices() { "$GPUFRAC" "$@" --help | grep -o -- '{[a-z0-9,-]*}' | tr -d '{}' | tr ',' '\n' | sort -u; }
check_command() {
  local opt value text
  text=$(entry "$@")
  [ -n "$text" ] || fail "gpufrac(1) does not describe '$*'"
  for opt in $(options "$@"); do
    grep -qF -- "$opt" <<<"$text" || fail "gpufrac(1) lacks '${*:-gpufrac}' option $opt in its entry"
  done
  for value in $(choices "$@"); do
    grep -qwF -- "$value" <<<"$text" || fail "gpufrac(1) lacks '${*:-gpufrac}' choice $value in its entry"
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
