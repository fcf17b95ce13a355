#!/bin/bash
# What the host files need from the host's libc (issue 44, part 2; docs/architecture.md "Node
# setup"): the shim, preloaded into every container whatever its image, needs at most GLIBC_2.17
# (its own version definitions, such as the dlsym@GLIBC_2.34 it defines to interpose, are not
# needs); gpufrac-hook and gpufrac-runtime are static (no loader, no version needs); the CLI, which
# node setup installs with the glibc it was built against, names a loader path long enough for setup
# to rewrite. The checker is checked too: the CLI, built against this machine's glibc, needs a newer
# version than 2.17.
# Usage (ctest passes them): glibc_needs_test.sh <shim> <hook> <runtime> <cli>
set -euo pipefail
SHIM=$1 HOOK=$2 RUNTIME=$3 CLI=$4
FAILURES=0
fail() {
  echo "FAIL: $*" >&2
  FAILURES=$((FAILURES + 1))
}
# The newest GLIBC_ version an ELF file needs (its .gnu.version_r entries), "" for none.
max_need() {
  readelf -V --wide "$1" | awk '/^Version needs section/ { on = 1; next } /^Version (definition|symbols) section/ { on = 0 }
    on && match($0, /Name: GLIBC_[0-9.]+/) { print substr($0, RSTART + 6, RLENGTH - 6) }' | sort -V | tail -1
}
newer_than() { [ "$(printf '%s\n%s\n' "$1" "$2" | sort -V | tail -1)" = "$1" ] && [ "$1" != "$2" ]; }

need=$(max_need "$SHIM")
[ -n "$need" ] || fail "$SHIM: no GLIBC_ need found (readelf -V changed?)"
if newer_than "${need#GLIBC_}" 2.17; then
  fail "$SHIM needs $need; the shim must run with glibc 2.17: pin the symbol version or avoid the function:
$(objdump -T "$SHIM" | grep UND | grep -E '\(GLIBC_2\.(1[89]|[2-9][0-9])' || true)"
fi
for prog in "$HOOK" "$RUNTIME"; do
  readelf -l "$prog" | grep -q 'INTERP' && fail "$prog: has a program interpreter; it must be static"
  [ -z "$(max_need "$prog")" ] || fail "$prog: needs $(max_need "$prog"); it must be static"
done
# The CLI names this machine's loader, padded with slashes to leave node setup room for the path of
# the loader it installs beside the CLI (cli/node/interp.hpp).
cli_interp=$(readelf -l "$CLI" | sed -n 's/.*interpreter: \(.*\)]$/\1/p')
[ "${#cli_interp}" -ge 200 ] || fail "$CLI: its interpreter [$cli_interp] leaves node setup no room (200 bytes or more)"
[ -x "$cli_interp" ] || fail "$CLI: its interpreter [$cli_interp] is not an executable file here"
cli_need=$(max_need "$CLI")
newer_than "${cli_need#GLIBC_}" 2.17 || fail "the checker: $CLI needs [$cli_need], expected newer than 2.17"
[ "$FAILURES" -eq 0 ] || exit 1
echo "ok: shim needs $need, hook and runtime are static, the CLI needs $cli_need and has ${#cli_interp} bytes of interpreter"
