# Helpers for gpufrac-runtime end-to-end tests and its benchmark (sourced after lib.sh and
# containers.sh).
WRAPPER=$BIN_DIR/gpufrac-runtime

# make_plain_bundle <dir> <shell command> [annotation k=v...]: a runc bundle sharing the host PID
# namespace, without hooks (gpufrac-runtime adds its own).
make_plain_bundle() {
  local dir=$1 cmd=$2
  shift 2
  mkdir -p "$dir"
  make_rootfs "$dir/rootfs"
  (cd "$dir" && runc spec)
  local annotations='{}'
  for kv in "$@"; do annotations=$(jq --arg k "${kv%%=*}" --arg v "${kv#*=}" '. + {($k): $v}' <<<"$annotations"); done
  jq --arg cmd "$cmd" --argjson ann "$annotations" '
    .process.terminal = false | .process.args = ["/bin/sh", "-c", $cmd] | .root.readonly = false
    | .annotations = $ann
    | .linux.namespaces |= map(select(.type != "pid"))
  ' "$dir/config.json" >"$dir/config.json.new" && mv "$dir/config.json.new" "$dir/config.json"
}

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
