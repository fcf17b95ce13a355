#!/bin/bash
# gpufrac-runtime's cost on `create`, as ratios against plain runc, measured in one script (root):
#   1. create + delete of a trivial bundle with plain runc (the baseline);
#   2. the same through gpufrac-runtime, bundle without gpufrac annotations (the pass-through path:
#      config load, a scan of config.json, exec of runc; delete passes through too);
#   3. the same with a 0.25 annotation (the full path: parse, book in the ledger, container files,
#      Edits into config.json, then runc with the createRuntime attach and poststop release hooks).
# Every iteration first restores the bundle's config.json (the full path marks a spec it prepared),
# in all three cases alike.
# Then the wrapper alone, with /bin/true as the low-level runtime: one `create` through
# gpufrac-runtime without and with the annotation, against starting /bin/true directly (the exec
# floor); the full path's booking is released outside the timed region.
# Usage: bench/wrapper_bench.sh [build-dir] [iterations]
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=$(realpath "${1:-build}")
N=${2:-100}
export GPUFRAC_SOURCE_DIR=$PWD GPUFRAC_BUILD_DIR=$BUILD GPUFRAC_BUILD_BIN_DIR=$BUILD/bin GPUFRAC_FAKES_DIR=$BUILD/fakes
source tests/e2e/lib.sh
source tests/e2e/containers.sh
source tests/e2e/wrapper.sh
e2e_tmp
e2e_on_exit() {
  runc_cleanup gpufrac-wbench-
  umount "$E2E_TMP/state" "$E2E_TMP/bundles" 2>/dev/null || true
}
e2e_gpu_config a100-40gb-x1.yaml "log: {target: file, file: $E2E_TMP/gpufrac.log, level: warn}"
# The state dir is /run/gpufrac in production, and containerd's bundles are under /run/containerd:
# both on tmpfs, where the fsyncs of the ledger and of config.json cost nothing.
mkdir -p "$E2E_TMP/bundles"
mount -t tmpfs -o size=64m gpufrac-wbench "$E2E_TMP/state"
mount -t tmpfs -o size=64m gpufrac-wbench "$E2E_TMP/bundles"

# Microseconds from bash's own clock into $NOW (no fork, unlike a command substitution).
tick() { NOW=${EPOCHREALTIME/./}; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }
B=$E2E_TMP/bundles
make_plain_bundle "$B/plain" 'true'
make_plain_bundle "$B/share" 'true' gpufrac.io/fraction=0.25
cp "$B/plain/config.json" "$E2E_TMP/plain.json"
cp "$B/share/config.json" "$E2E_TMP/share.json"

# cycle_us <runtime> <bundle> <iterations>: mean microseconds of restore + create + delete.
cycle_us() {
  local rt=$1 bundle=$2 n=$3 start id
  tick
  start=$NOW
  for ((i = 0; i < n; i++)); do
    id=gpufrac-wbench-$i
    cp "$E2E_TMP/$(basename "$bundle").json" "$bundle/config.json"
    "$rt" create --bundle "$bundle" "$id" >/dev/null 2>&1 </dev/null || { echo "bench: $rt create failed" >&2; exit 1; }
    "$rt" delete -f "$id" >/dev/null 2>&1
  done
  tick
  echo $(((NOW - start) / n))
}
# alone_us <bundle> <iterations> <command...>: mean microseconds of one `create` by the command with
# /bin/true as the runtime; config.json restore and ledger release are not timed.
alone_us() {
  local bundle=$1 n=$2 total=0 t0
  shift 2
  for ((i = 0; i < n; i++)); do
    cp "$E2E_TMP/$(basename "$bundle").json" "$bundle/config.json"
    tick
    t0=$NOW
    GPUFRAC_CONFIG=$E2E_TMP/true.yaml "$@" create --bundle "$bundle" gpufrac-wbench-alone >/dev/null 2>&1 </dev/null
    tick
    total=$((total + NOW - t0))
    "$GPUFRAC" ledger release --container gpufrac-wbench-alone >/dev/null
  done
  echo $((total / n))
}

cycle_us runc "$B/plain" 5 >/dev/null  # warm caches
plain=$(cycle_us runc "$B/plain" "$N")
pass=$(cycle_us "$WRAPPER" "$B/plain" "$N")
full=$(cycle_us "$WRAPPER" "$B/share" "$N")
[ "$(jq '.entries | length' "$E2E_TMP/state/ledger.json")" = 0 ] || { echo "bench: the full path left bookings" >&2; exit 1; }
cp "$GPUFRAC_CONFIG" "$E2E_TMP/true.yaml"
echo "runtimes: [/bin/true]" >>"$E2E_TMP/true.yaml"
floor=$(alone_us "$B/plain" "$N" /bin/true)
alone_pass=$(alone_us "$B/plain" "$N" "$WRAPPER")
alone_full=$(alone_us "$B/share" "$N" "$WRAPPER")

echo "create+delete, plain runc:                         ${plain} us"
echo "create+delete, gpufrac-runtime, no annotation:     ${pass} us   (ratio $(ratio "$pass" "$plain"))"
echo "create+delete, gpufrac-runtime, 0.25 share:        ${full} us   (ratio $(ratio "$full" "$plain"))"
echo "create, runtime /bin/true started directly (exec floor): ${floor} us"
echo "create through gpufrac-runtime to /bin/true, no annotation: ${alone_pass} us   (ratio $(ratio "$alone_pass" "$floor"))"
echo "create through gpufrac-runtime to /bin/true, 0.25 share:    ${alone_full} us   (ratio $(ratio "$alone_full" "$floor"))"
echo "iterations: ${N}; machine: $(nproc) cores, $(uname -r); load average: $(cut -d' ' -f1-3 /proc/loadavg)"
