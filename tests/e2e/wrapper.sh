# Helpers for gpufrac-runtime end-to-end tests and its benchmark (sourced after lib.sh and
# containers.sh).
WRAPPER=$BIN_DIR/gpufrac-runtime

# make_recorder <file>: a stand-in low-level runtime that records its argv (NUL-separated) in
# <file>.argv and its stdin in <file>.stdin, then exits 0.
make_recorder() {
  cat >"$1" <<'SCRIPT'
#!/bin/bash
printf '%s\0' "$@" >"$0.argv"
cat >"$0.stdin"
SCRIPT
  chmod 755 "$1"
}

# ledger_count [jq filter]: number of ledger entries (matching the filter).
ledger_count() { jq "[.entries[] | select(${1:-true})] | length" "$E2E_TMP/state/ledger.json"; }
