#!/bin/bash
# gpufrac status in a real terminal (tmux): bars and colours on a TTY, none in a pipe or with
# NO_COLOR, and --watch redrawing in place (the pane's history stays empty, one header on screen)
# while a new share appears.
source "$(dirname "$0")/lib.sh"
e2e_tmp
need_cmd tmux
e2e_config a100-40gb-x1.yaml

sleep 3600 &
SLEEPER=$!
# One tmux server per pane: a new session on a server being killed races with its exit.
PANES=0
export TMUX_TMPDIR=$E2E_TMP  # sockets go with the temporary root
tmux_() { tmux -L "gpufrac-e2e-$$-$PANES" -f /dev/null "$@"; }
e2e_on_exit() {
  tmux_ kill-server 2>/dev/null || true
  kill "$SLEEPER" 2>/dev/null || true
}
ESC=$'\033'

# Runs CMD in a fresh 120x30 pane (TERM as a user's terminal has it), waits until TEXT shows, and
# leaves the pane's content with escape sequences in $PANE.
pane_run() {
  local text=$1 cmd=$2
  tmux_ kill-server 2>/dev/null || true
  PANES=$((PANES + 1))
  tmux_ new-session -d -s status -x 120 -y 30 \
    "env -u NO_COLOR TERM=xterm-256color GPUFRAC_CONFIG=$GPUFRAC_CONFIG $cmd; sleep 3600"
  pane_wait "$text"
}
pane_wait() {
  local text=$1 i
  for i in $(seq 100); do
    PANE=$(tmux_ capture-pane -p -e -t status)
    case "$PANE" in *"$text"*) return 0 ;; esac
    sleep 0.1
  done
  fail "pane never showed [$text]: [$PANE]"
}

run "$GPUFRAC" ledger reserve --container 0123456789abcdef0123 --annotation gpufrac.io/fraction=0.25 --pid "$SLEEPER"
assert_eq "$RC" 0 "reserve"

# On a terminal: the device name bold, the share's cells and label green, the state coloured.
pane_run "SHARE" "$GPUFRAC status"
assert_contains "$PANE" "$ESC[1mNVIDIA A100-SXM4-40GB$ESC[0m" "bold device name on a TTY"
assert_contains "$PANE" "[$ESC[32maaaaaaaaaaaaaaa$ESC[2m" "coloured bar: 15 of 60 cells for a quarter"
assert_contains "$PANE" "$ESC[32mrunning" "coloured state"
assert_contains "$PANE" " 0123456789ab " "id cut to 12 characters"
assert_not_contains "$PANE" "0123456789abc " "no longer id"

# NO_COLOR and a pipe: the same bars, not one escape sequence.
pane_run "SHARE" "env NO_COLOR=1 $GPUFRAC status"
assert_not_contains "$PANE" "$ESC" "NO_COLOR on a TTY"
assert_contains "$PANE" "[aaaaaaaaaaaaaaa.............................................]" "plain bar with NO_COLOR"
pane_run "SHARE" "$GPUFRAC status | cat"
assert_not_contains "$PANE" "$ESC" "no colour in a pipe"
assert_contains "$PANE" "[aaaaaaaaaaaaaaa.............................................]" "plain bar in a pipe"
run "$GPUFRAC" status
assert_not_contains "$OUT" "$ESC" "no colour when captured"

# --watch on a terminal: a new share shows up in the same screen, nothing scrolls.
pane_run "SHARE" "$GPUFRAC status --watch 0.2"
assert_contains "$PANE" "Every 0.2s: gpufrac status" "watch header"
run "$GPUFRAC" ledger reserve --container second --annotation gpufrac.io/fraction=0.5 --pid "$SLEEPER"
assert_eq "$RC" 0 "second reserve"
pane_wait "second"
assert_contains "$PANE" "[$ESC[32maaaaaaaaaaaaaaa$ESC[33mbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb" "bar redrawn with both shares"
assert_eq "$(tmux_ display-message -p -t status '#{history_size}')" 0 "redrawn in place: nothing scrolled"
assert_eq "$(tmux_ capture-pane -p -S - -t status | grep -c 'Every 0.2s')" 1 "one header on the screen"

# --watch into a pipe: snapshots follow each other, each under its own header, no escapes.
set +e
OUT=$(timeout 1 "$GPUFRAC" status --watch 0.2)
set -e
assert_not_contains "$OUT" "$ESC" "watch in a pipe has no escapes"
[ "$(grep -c 'Every 0.2s' <<<"$OUT")" -ge 2 ] || fail "watch in a pipe printed fewer than 2 snapshots: [$OUT]"
finish
