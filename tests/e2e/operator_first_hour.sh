#!/bin/bash
# The operator's first hour, scripted: the README's "Try it without a GPU" steps run exactly as
# written (the shell block under that heading, with B, S, M and D pointing at this build, as the
# README says for a source tree) on a fresh state directory: info, status, cdi generate and list, a
# container through gpufrac-hook, status again, metrics once to stdout, gc --dry-run and runtime
# configure --dry-run. Every step's output is checked, in order. Then the machine changes under the
# same state directory: while a share is booked every command refuses in one line saying what
# changed, and once nothing is booked the next command takes the new machine.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/containers.sh"
e2e_runc_test first-hour
e2e_on_exit() { runc delete -f try-gpufrac >/dev/null 2>&1 || true; runc_cleanup "$P"; }
README=$GPUFRAC_SOURCE_DIR/README.md

# The block, as written.
sed -n '/^## Try it without a GPU$/,/^## /p' "$README" | sed -n '/^```sh$/,/^```$/p' | sed '1d;$d' >"$E2E_TMP/steps.sh"
[ "$(wc -l <"$E2E_TMP/steps.sh")" -ge 20 ] || fail "no steps under '## Try it without a GPU' in README.md"
runc state try-gpufrac >/dev/null 2>&1 && skip "a container try-gpufrac exists on this host"
export B=$BIN_DIR S=$SHIM_DIR M=$MACHINES D=$E2E_TMP/try
mkdir -p "$D"
# runc's detached container keeps its stdout: a file, never a pipe the test would wait on.
set +e
(set -e; source "$E2E_TMP/steps.sh") >"$E2E_TMP/steps.out" 2>&1
RC=$?
set -e
OUT=$(cat "$E2E_TMP/steps.out")
assert_eq "$RC" 0 "the README's steps run: $OUT"
[ -d "$D/state" ] && [ -f "$D/config.yaml" ] || fail "the steps wrote their node under \$D"

# expect_in_order <text>...: each text appears in the output after the one before it.
rest=$OUT
expect() {
  case $rest in
    *"$1"*) rest=${rest#*"$1"} ;;
    *) fail "step output lacks, at this point: [$1]"$'\n'"--- output:"$'\n'"$OUT" ;;
  esac
}
GPU0=GPU-7c7581aa-b6e4-a6a5-e16e-ccdf0127e776
echo "== init-root"
expect "simulated host root for $M/dgx-8gpu-mixed.yaml written to $D/root"
echo "== info"
expect "(simulated:$M/dgx-8gpu-mixed.yaml)"
expect "0    NVIDIA A100-SXM4-80GB  $GPU0  00000000:07:00.0  80.0 GiB  8.0  disabled  /dev/nvidia0 195:0"
expect "7    NVIDIA A100-SXM4-80GB  GPU-041bfdba-f090-aa51-078f-63a9051e0e6b"
expect "MIG instances"
echo "== status, nothing booked"
expect "0    -   -   NVIDIA A100-SXM4-80GB             GPU-7c7581aa  0 B   0 B       80.0 GiB  80.0 GiB  0"
expect "No shares."
echo "== cdi generate and list"
expect "CDI spec for "
expect "devices of kind gpufrac.io/gpu written to $D/cdi/gpufrac.yaml"
expect "gpufrac.io/gpu=0-0.25"
echo "== the container sees its limit"
expect "device $GPU0 21474836480"
echo "== status with the share"
expect "SHARE  GPU  GI  CI  CONTAINER    REQUEST        RESERVED  USED  COMPUTE  ACHIEVED (10 s)  SOURCE  PID"
expect "A      0    -   -   try-gpufrac  fraction=0.25  20.0 GiB"
expect "running"
echo "== metrics to stdout"
expect "container_id=\"try-gpufrac\",device_key=\"\",request=\"fraction=0.25\",enforcement=\"shim\"} 21474836480"
echo "== gc --dry-run"
expect "Nothing to reclaim"
echo "== runtime configure --dry-run"
expect "+imports = [\"$D/containerd/conf.d/99-gpufrac.toml\"]"
expect "(dry run: nothing was written)"
assert_not_contains "$OUT" "warning: the spec's hooks run" "the config names the hook that exists"
[ ! -e "$D/containerd/config.toml" ] || fail "runtime configure --dry-run wrote a file"
assert_eq "$(jq '.entries | length' "$D/state/ledger.json")" 0 "runc delete gave the share back"
assert_eq "$(grep -c 'gpufrac-hook' <<<"$OUT" || true)" 0 "no hook error or warning: $OUT"

echo "== the machine changes while a share is booked"
export PATH=$B:$PATH GPUFRAC_CONFIG=$D/config.yaml
create() { set +e; runc create --bundle "$1" "$2" >"$1.log" 2>&1; RC=$?; set -e; OUT=$(cat "$1.log"); }
create "$D/ctr" "$P-held"
assert_eq "$RC" 0 "a share held: $OUT"
run gpufrac simulate init-root --machine "$M/a100-40gb-x2.yaml" --root "$D/root"
assert_eq "$RC" 0 "init-root for the new machine: $OUT"
sed -i "s|$M/dgx-8gpu-mixed.yaml|$M/a100-40gb-x2.yaml|" "$D/config.yaml"
STALE="the inventory cache $D/state/inventory.json no longer matches this node (the machine file is now $M/a100-40gb-x2.yaml, was $M/dgx-8gpu-mixed.yaml); 1 booking holds devices from it, so it was not refreshed: run gpufrac info --refresh (once they are released, or now to take the node as it is)"
run gpufrac info
assert_eq "$RC" 0 "info reads the node itself"
assert_contains "$OUT" "(simulated:$M/a100-40gb-x2.yaml)" "info shows the new machine"
for cmd in status "metrics --once"; do
  run gpufrac $cmd
  assert_eq "$RC" 1 "$cmd refuses"
  assert_eq "$OUT" "gpufrac: $STALE" "$cmd says what changed"
done
# gc --dry-run plans where gc works: on the cached inventory, the stale line a warning first.
run gpufrac gc --dry-run
assert_eq "$RC" 0 "gc --dry-run plans on the cached inventory: $OUT"
assert_eq "$(head -1 <<<"$OUT")" "gpufrac: warning: $STALE; planned on the cached inventory, as gc reclaims" \
  "gc --dry-run says what changed, in one line"
mkdir -p "$D/ctr2"
cp "$D/ctr/config.json" "$D/ctr2/config.json"
jq --arg root "$D/ctr/rootfs" '.root.path = $root | .process.args = ["sh", "-c", "cat /run/gpufrac/limits"]' \
  "$D/ctr2/config.json" >"$D/ctr2/c.json" && mv "$D/ctr2/c.json" "$D/ctr2/config.json"
run runc run --bundle "$D/ctr2" "$P-second"
assert_eq "$RC" 1 "the hook refuses a second share"
assert_contains "$OUT" "gpufrac-hook: $STALE" "in one line"
assert_eq "$(grep -o 'no longer matches' <<<"$OUT" | wc -l)" 1 "once, though the log is stderr"

echo "== nothing booked: the next command takes the new machine"
runc delete -f "$P-held" >/dev/null
run gpufrac status
assert_eq "$RC" 0 "status: $OUT"
assert_contains "$OUT" "1    NVIDIA A100-SXM4-40GB  GPU-5ae7c110  0 B   0 B       39.6 GiB  39.6 GiB  0" "the new machine's GPUs"
run runc run --bundle "$D/ctr2" "$P-third"
assert_eq "$RC" 0 "a share on the new machine: $OUT"
assert_contains "$OUT" "device GPU-d7dabd4b-76ee-eb23-0267-a749de0199b5 10626269184" "a quarter of the A100-40GB"
assert_eq "$(jq '.gpus | length' "$D/state/inventory.json")" 2 "the hook refreshed the cache"
finish
