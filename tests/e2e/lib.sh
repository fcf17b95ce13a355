# Shared helpers for end-to-end tests (sourced by every tests/e2e/*_test.sh).
# Binaries come from $GPUFRAC_BIN_DIR when set (installed files, e.g. /usr/bin), else the build tree.
set -euo pipefail

: "${GPUFRAC_SOURCE_DIR:?run through ctest}"
BIN_DIR=${GPUFRAC_BIN_DIR:-$GPUFRAC_BUILD_BIN_DIR}
GPUFRAC=$BIN_DIR/gpufrac
MACHINES=$GPUFRAC_SOURCE_DIR/nvml/machines
E2E_FAILURES=0

# A fresh temporary root for this test, removed on exit (unless GPUFRAC_KEEP_TMP=1).
e2e_tmp() {
  E2E_TMP=$(mktemp -d /tmp/gpufrac-e2e.XXXXXX)
  if [ "${GPUFRAC_KEEP_TMP:-0}" != 1 ]; then trap 'e2e_cleanup' EXIT; fi
}
e2e_cleanup() {
  local rc=$?
  if declare -F e2e_on_exit >/dev/null; then e2e_on_exit || true; fi
  e2e_unmount_tmp
  rm -rf "$E2E_TMP"
  exit $rc
}

# Detaches what is still mounted under $E2E_TMP, deepest first: the tmpfs of a container directory
# (docs/architecture.md "Host state") whose container the test left undeleted.
# e2e_unmount_tmp [DIR]: detaches every mount under DIR (default $E2E_TMP), e.g. the tmpfs gpufrac
# mounts under a state directory (a GPU's compute arbiter, a container's own directory).
e2e_unmount_tmp() {
  local m
  for m in $(awk -v t="${1:-$E2E_TMP}/" 'index($2, t) == 1 { print $2 }' /proc/self/mounts | sort -r); do
    umount -l "$m" 2>/dev/null || true
  done
}

# e2e_reset_state [PATH...]: a fresh state directory for the next scenario: detaches the tmpfs
# gpufrac mounted under $E2E_TMP/state (rm would stop at them with EBUSY), then removes it and PATHs.
e2e_reset_state() {
  e2e_unmount_tmp "$E2E_TMP/state"
  rm -rf "$E2E_TMP/state" "$@"
}

# Writes $E2E_TMP/config.yaml for a simulated machine with state and host root under $E2E_TMP.
# Extra YAML lines may follow as arguments.
e2e_config() {
  local machine=$1
  shift
  mkdir -p "$E2E_TMP/state" "$E2E_TMP/root"
  {
    echo "state-dir: $E2E_TMP/state"
    echo "host-root: $E2E_TMP/root"
    echo "nvml: {backend: simulated, machine: $MACHINES/$machine}"
    echo "log: {target: file, file: $E2E_TMP/gpufrac.log, level: debug}"
    for line in "$@"; do echo "$line"; done
  } >"$E2E_TMP/config.yaml"
  export GPUFRAC_CONFIG=$E2E_TMP/config.yaml
}

# Kills what still runs with this test's temporary directory on its command line: a daemon the
# test started whose harness was killed (a ctest timeout) would otherwise outlive the test.
e2e_kill_tmp_processes() {
  local p
  for p in /proc/[0-9]*; do
    [ "${p#/proc/}" = "$$" ] && continue
    if { tr '\0' ' ' <"$p/cmdline"; } 2>/dev/null | grep -qF -- "$E2E_TMP/"; then kill -9 "${p#/proc/}" 2>/dev/null || true; fi
  done
}

skip() { echo "SKIP: $*"; exit 77; }
need_root() { [ "$(id -u)" = 0 ] || skip "needs root"; }
need_cmd() { command -v "$1" >/dev/null 2>&1 || skip "needs $1"; }

fail() { echo "FAIL: $*" >&2; E2E_FAILURES=$((E2E_FAILURES + 1)); }
assert_eq() { [ "$1" = "$2" ] || fail "${3:-values differ}: expected [$2], got [$1]"; }
assert_contains() { case "$1" in *"$2"*) ;; *) fail "${3:-missing text}: [$2] not in [$1]" ;; esac; }
assert_not_contains() { case "$1" in *"$2"*) fail "${3:-unexpected text}: [$2] in [$1]" ;; *) ;; esac; }
# Runs a command, capturing stdout+stderr in $OUT and the exit code in $RC, never failing the script.
run() { set +e; OUT=$("$@" 2>&1); RC=$?; set -e; }
finish() {
  if [ "$E2E_FAILURES" -ne 0 ]; then echo "$E2E_FAILURES check(s) failed"; exit 1; fi
  echo "PASS"
}
