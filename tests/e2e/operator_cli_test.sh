#!/bin/bash
# What a new operator trips over in the CLI (issue "the operator's first hour"), each with its
# exact answer: a command's option before the command, a second metrics server on a port, metrics
# once to stdout, a missing --spec-dir, runtime configure with a relative --engine-config run
# twice, a stale inventory after the machine changed (status refreshes it with nothing booked and
# refuses while a share is booked; gc and its dry run work on), init-root for a smaller machine over
# a larger one's root, a missing machine file, the warnings cdi generate gives for a root made for
# another machine, the hints of mig plan and driver-limit show, and gpufrac-dra's did-you-mean.
source "$(dirname "$0")/lib.sh"
need_cmd jq
need_cmd curl
e2e_tmp
e2e_on_exit() { [ -z "${SERVER:-}" ] || kill "$SERVER" 2>/dev/null || true; }
e2e_config dgx-8gpu-mixed.yaml "cdi: {output: $E2E_TMP/cdi/gpufrac.yaml, spec-dirs: [$E2E_TMP/cdi]}"
CONFIG=$E2E_TMP/config.yaml
init_root() { "$GPUFRAC" simulate init-root --machine "$MACHINES/$1" --root "$E2E_TMP/root" --no-driver "${@:2}"; }
run init_root dgx-8gpu-mixed.yaml
assert_eq "$RC" 0 "init-root dgx: $OUT"

echo "== a command's option before the command"
run "$GPUFRAC" --json status
assert_eq "$RC" 2 "--json before status"
assert_eq "$OUT" 'gpufrac: "--json" is an option of "gpufrac status" and goes after it: gpufrac status --json ... (see gpufrac status --help)'
run "$GPUFRAC" --dry-run runtime configure docker
assert_eq "$OUT" 'gpufrac: "--dry-run" is an option of "gpufrac runtime configure" and goes after it: gpufrac runtime configure --dry-run ... (see gpufrac runtime configure --help)'
run "$GPUFRAC" --config "$CONFIG" status --json
assert_eq "$RC" 0 "--config before the command still works: $OUT"
run "$GPUFRAC" status --jsn
assert_eq "$OUT" 'gpufrac: unknown option "--jsn" for "gpufrac status"; did you mean "--json"? (see gpufrac status --help)'

echo "== metrics: once on stdout; one server per port"
run "$GPUFRAC" metrics --once
assert_eq "$RC" 0 "metrics --once: $OUT"
assert_contains "$OUT" 'gpufrac_gpu_memory_total_bytes{gpu_index="0",gpu_uuid="GPU-7c7581aa-b6e4-a6a5-e16e-ccdf0127e776",device_uuid="GPU-7c7581aa-b6e4-a6a5-e16e-ccdf0127e776"} 85899345920' "metrics --once prints a scrape"
run "$GPUFRAC" metrics --once --listen 127.0.0.1:9
assert_eq "$RC" 2 "--once with --listen"
"$GPUFRAC" metrics --listen 127.0.0.1:0 2>"$E2E_TMP/server.log" &
SERVER=$!
for _ in $(seq 100); do grep -q '^gpufrac: serving metrics at ' "$E2E_TMP/server.log" && break; sleep 0.05; done
URL=$(sed -n 's/^gpufrac: serving metrics at //p' "$E2E_TMP/server.log")
PORT=${URL##*:}
PORT=${PORT%%/*}
run timeout 10 "$GPUFRAC" metrics --listen "127.0.0.1:$PORT"  # today it binds too (SO_REUSEPORT) and serves
assert_eq "$RC" 2 "a second server on port $PORT"
assert_eq "$OUT" "gpufrac: cannot listen on 127.0.0.1:$PORT: Address already in use"
run curl -sS --fail --max-time 10 "$URL"
assert_contains "$OUT" "gpufrac_gpu_memory_total_bytes" "the first server still serves"
kill "$SERVER"
wait "$SERVER" 2>/dev/null || true
SERVER=

echo "== cdi list: a missing --spec-dir is an error naming it"
run "$GPUFRAC" cdi list --spec-dir /nonexist
assert_eq "$RC" 1 "missing --spec-dir"
assert_eq "$OUT" 'gpufrac: --spec-dir "/nonexist": No such file or directory; name a directory of CDI specs, e.g. /var/run/cdi'
run "$GPUFRAC" cdi list --spec-dir "$CONFIG"
assert_eq "$OUT" "gpufrac: --spec-dir \"$CONFIG\": not a directory; name a directory of CDI specs, e.g. /var/run/cdi"
mkdir -p "$E2E_TMP/empty"
run "$GPUFRAC" cdi list --spec-dir "$E2E_TMP/empty"
assert_eq "$RC" 0 "an empty directory is no error"
assert_eq "$OUT" "gpufrac: no CDI device found in $E2E_TMP/empty"

echo "== runtime configure: a relative --engine-config, twice"
mkdir -p "$E2E_TMP/work/eng"
printf 'version = 2\n' >"$E2E_TMP/work/eng/config.toml"
run bash -c "cd '$E2E_TMP/work' && '$GPUFRAC' runtime configure containerd --engine-config eng/config.toml"
assert_eq "$RC" 0 "first run: $OUT"
assert_contains "$(cat "$E2E_TMP/work/eng/config.toml")" "imports = [\"$E2E_TMP/work/eng/conf.d/99-gpufrac.toml\"]" "an absolute import"
[ -f "$E2E_TMP/work/eng/conf.d/99-gpufrac.toml" ] || fail "the drop-in is next to the config"
run bash -c "cd '$E2E_TMP/work' && '$GPUFRAC' runtime configure containerd --engine-config eng/config.toml"
assert_eq "$(head -1 <<<"$OUT")" "containerd: already configured ($E2E_TMP/work/eng/conf.d/99-gpufrac.toml, $E2E_TMP/work/eng/config.toml); nothing changed" "a second run"
run bash -c "cd '$E2E_TMP/work/eng' && '$GPUFRAC' runtime configure containerd --engine-config ./config.toml"
assert_contains "$OUT" "already configured" "from another directory"
assert_eq "$(grep -c 99-gpufrac "$E2E_TMP/work/eng/config.toml")" 1 "one import entry"

echo "== the machine changes under the same state-dir"
run "$GPUFRAC" info --refresh
assert_eq "$RC" 0 "info --refresh: $OUT"
assert_eq "$(jq -r .origin.machine "$E2E_TMP/state/inventory.json")" "$MACHINES/dgx-8gpu-mixed.yaml" "the cache records its machine"
assert_eq "$(jq '.gpus | length' "$E2E_TMP/state/inventory.json")" 8 "8 GPUs cached"
run init_root a100-40gb-x2.yaml
assert_eq "$RC" 0 "init-root x2 over the dgx root: $OUT"
assert_eq "$(ls "$E2E_TMP/root/dev" | grep -c '^nvidia[0-9]')" 2 "init-root removed /dev/nvidia2..7"
assert_eq "$(ls "$E2E_TMP/root/dev/nvidia-caps" 2>/dev/null | wc -l)" 0 "and the MIG capability nodes"
assert_eq "$(ls "$E2E_TMP/root/proc/driver/nvidia/gpus" | tr '\n' ' ')" "0000:07:00.0 0000:0f:00.0 " "procfs lists the 2 GPUs"
sed -i "s|dgx-8gpu-mixed.yaml|a100-40gb-x2.yaml|" "$CONFIG"
# Nothing booked: status shows the new machine (and, a reader, leaves the cache to the next booking).
run "$GPUFRAC" status --json
assert_eq "$RC" 0 "status after the change: $OUT"
assert_eq "$(jq '.devices | length' <<<"$OUT")" 2 "status shows the 2 GPUs"
# A share booked, then the machine changes back: every reader refuses in one line.
run "$GPUFRAC" ledger reserve --container c1 --annotation gpufrac.io/fraction=0.25 --pid $$
assert_eq "$RC" 0 "a booking: $OUT"
assert_eq "$(jq '.gpus | length' "$E2E_TMP/state/inventory.json")" 2 "the booking refreshed the cache"
sed -i "s|a100-40gb-x2.yaml|dgx-8gpu-mixed.yaml|" "$CONFIG"
STALE="gpufrac: the inventory cache $E2E_TMP/state/inventory.json no longer matches this node (the machine file is now $MACHINES/dgx-8gpu-mixed.yaml, was $MACHINES/a100-40gb-x2.yaml); 1 booking holds devices from it, so it was not refreshed: run gpufrac info --refresh (once they are released, or now to take the node as it is)"
for cmd in status "metrics --once"; do
  run "$GPUFRAC" $cmd
  assert_eq "$RC" 1 "$cmd with a stale cache"
  assert_eq "$OUT" "$STALE" "$cmd says what changed"
done
# gc works on a stale cache (it reads the inventory only for dynamic MIG and MPS): its dry run agrees.
set +e
DRY=$("$GPUFRAC" gc --dry-run 2>"$E2E_TMP/dry.err")
RC=$?
set -e
assert_eq "$RC" 0 "gc --dry-run with a stale cache, as gc"
assert_eq "$(cat "$E2E_TMP/dry.err")" "gpufrac: warning: ${STALE#gpufrac: }; planned on the cached inventory, as gc reclaims" \
  "the dry run says what changed"
run "$GPUFRAC" gc
assert_eq "$RC" 0 "gc with a stale cache"
assert_eq "$(sed 's/ would be kept/ kept/' <<<"$DRY")" "$OUT" "the dry run said what gc did"
run "$GPUFRAC" ledger reserve --container c2 --annotation gpufrac.io/fraction=0.25 --pid $$
assert_eq "$OUT" "$STALE" "a booking is refused too"
run "$GPUFRAC" info --refresh
assert_eq "$RC" 0 "info --refresh takes the node as it is"
run "$GPUFRAC" status
assert_eq "$RC" 0 "status after the refresh"
assert_contains "$OUT" "?: c1 is booked on GPU-" "the old booking shows as on a GPU this node does not list"
"$GPUFRAC" ledger release --container c1 >/dev/null

echo "== a missing machine file lists the shipped machines"
run "$GPUFRAC" info --machine "$MACHINES/a100.yaml"
assert_eq "$RC" 1 "missing machine"
assert_contains "$OUT" "gpufrac: machine file: cannot open $MACHINES/a100.yaml: No such file or directory; the shipped machines: a100-40gb-mig-ci.yaml, a100-40gb-mig-empty.yaml, a100-40gb-x1.yaml, a100-40gb-x2.yaml, a100-80gb-mig.yaml, dgx-8gpu-mixed.yaml, h100-80gb-mig-empty.yaml, h100-80gb-mig.yaml, h100-80gb-x3-r615.yaml in $MACHINES" "the list"
run "$GPUFRAC" simulate init-root --machine "$MACHINES/dgx.yaml" --root "$E2E_TMP/r2"
assert_contains "$OUT" "; the shipped machines: a100-40gb-mig-ci.yaml" "init-root lists them too"
run "$GPUFRAC" simulate init-root --machine "$MACHINES/a100-40gb-x2.yaml" --root /
assert_eq "$OUT" 'gpufrac: --root "/": is this host'"'"'s root; a simulated root is a directory of its own, e.g. /tmp/gpu-root'

echo "== cdi generate on a root made for another machine: one line each, advice that fits"
run init_root a100-40gb-x2.yaml
run "$GPUFRAC" cdi generate
assert_eq "$RC" 0 "cdi generate: $OUT"
assert_not_contains "$OUT" "nvidia-smi" "no nvidia-smi advice on a simulated node"
assert_contains "$OUT" "gpufrac: warning: 30 MIG devices left out: their instances have no capability device nodes in $E2E_TMP/root/proc/driver/nvidia-caps/mig-minors; gpufrac simulate init-root --machine $MACHINES/dgx-8gpu-mixed.yaml --root $E2E_TMP/root writes it for this machine" "one line for the MIG devices"
assert_contains "$OUT" "gpufrac: warning: host-root $E2E_TMP/root lacks 2 device nodes the spec names (/dev/nvidia2, /dev/nvidia3); gpufrac simulate init-root --machine $MACHINES/dgx-8gpu-mixed.yaml --root $E2E_TMP/root makes them" "the missing nodes"
# Besides these two, only the hook's and the shim's paths may be warned of: they exist where the
# package is installed (the e2e-installed stage) and not in a build tree with the package's layout.
assert_eq "$(grep 'warning' <<<"$OUT" | grep -vc '(hook\.path)\|(shim\.path)')" 2 "two warnings besides the hook's and the shim's paths: $OUT"

echo "== hints that point the right way"
run init_root dgx-8gpu-mixed.yaml
run "$GPUFRAC" mig plan --annotation gpufrac.io/memory=4Gi
assert_eq "$RC" 1 "mig plan of a share"
assert_eq "$OUT" "gpufrac: memory=4Gi is a share, which a container gets on a GPU outside MIG mode, never as a MIG instance: allocation.mig-serves-fractions is false; ask with gpufrac.io/mig-profile, or set it to true"
run "$GPUFRAC" mig plan --annotation gpufrac.io/mig-profile=1g.10gb
assert_eq "$OUT" 'gpufrac: no GPU the request may use is in dynamic MIG mode; set mig: {mode: dynamic} in the config (or mig: {gpus: {"<index>": dynamic}} for one GPU in MIG mode)'
echo "allocation: {mig-serves-fractions: true}" >>"$CONFIG"
run "$GPUFRAC" mig plan --annotation gpufrac.io/memory=4Gi
assert_eq "$OUT" "gpufrac: memory=4Gi fits a GPU outside MIG mode now (binpack: GPU 0 is the fullest GPU with room (0 B of 80.0 GiB reserved before)): a container gets that share; MIG serves a share only when no such GPU can take it"
run "$GPUFRAC" driver-limit show --cgroup /sys/fs/cgroup
assert_eq "$RC" 1 "driver-limit show on a simulated node"
assert_eq "$OUT" "gpufrac: this node is the simulated machine $MACHINES/dgx-8gpu-mixed.yaml (nvml.machine), which has no driver to hold memory limits: nothing to show; gpufrac status shows who holds each share's limit"
if [ -x "$BIN_DIR/gpufrac-dra" ]; then
  run "$BIN_DIR/gpufrac-dra" --nodename x
  assert_eq "$RC" 2 "gpufrac-dra --nodename"
  assert_eq "$OUT" 'gpufrac-dra: unknown option "--nodename"; did you mean "--node-name"? (see gpufrac-dra --help)'
fi
finish
