#!/bin/bash
# gpufrac-hook with real runc: a 0.25 share gets the shim, its limit, the preload and the device
# nodes; five 0.25 containers on one GPU: four run, the fifth is refused with the capacity message;
# host-PID and annotation errors refuse the container; no annotation leaves everything untouched.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/containers.sh"
e2e_runc_test hook
e2e_gpu_config a100-40gb-x1.yaml
GPU=$(jq -r '.gpus[0].uuid' <<<"$("$GPUFRAC" info --json)")
LIMIT=$((40536 / 4 * 1024 * 1024))   # 0.25 of 40536 MiB, rounded down to a MiB

# 1. One 0.25 share: what the container sees.
make_bundle "$E2E_TMP/b1" 'cat /run/gpufrac/limits; echo ---; cat /etc/ld.so.preload; echo ---;
  stat -c "%n %F %t:%T" /dev/nvidia0 /dev/nvidiactl /dev/nvidia-uvm /dev/nvidia-uvm-tools; ls /run/gpufrac' \
  gpufrac.io/fraction=0.25
run runc run --bundle "$E2E_TMP/b1" "$P-1"
assert_eq "$RC" 0 "runc run with a 0.25 share: $OUT"
assert_contains "$OUT" "device $GPU $LIMIT" "limit file names the GPU and 1/4 of its memory"
assert_contains "$OUT" "region /run/gpufrac/usage" "limit file names the usage region"
assert_contains "$OUT" "/run/gpufrac/libgpufrac-limits.so" "ld.so.preload lists the shim"
assert_contains "$OUT" "/dev/nvidia0 character special file c3:0" "GPU node 195:0"
assert_contains "$OUT" "/dev/nvidiactl character special file c3:ff" "control node 195:255"
assert_contains "$OUT" "/dev/nvidia-uvm character special file 1fc:0" "uvm node 508:0"
assert_contains "$OUT" "/dev/nvidia-uvm-tools character special file 1fc:1" "uvm-tools node 508:1"
assert_contains "$OUT" "libgpufrac-limits.so" "the shim is mounted"
assert_eq "$(jq '.entries | length' "$E2E_TMP/state/ledger.json")" 0 "runc run removed the container: share released"
assert_eq "$(ls "$E2E_TMP/state/containers" 2>/dev/null | wc -l)" 0 "container files removed"

# 2. Five 0.25 shares on one GPU: four run, the fifth is refused; gpufrac status shows the four.
for i in 1 2 3 4 5; do make_bundle "$E2E_TMP/s$i" 'sleep 60' gpufrac.io/fraction=0.25; done
# runc create hands the container its stdio: send it to a file, or the capture would wait for it.
create() { set +e; runc create --bundle "$1" "$2" >"$1.log" 2>&1; RC=$?; set -e; OUT=$(cat "$1.log"); }
for i in 1 2 3 4; do
  create "$E2E_TMP/s$i" "$P-s$i"
  assert_eq "$RC" 0 "share $i of 4 starts: $OUT"
done
create "$E2E_TMP/s5" "$P-s5"
assert_eq "$RC" 1 "the fifth 0.25 share is refused"
assert_contains "$OUT" "gpufrac-hook: no GPU has" "runc shows the capacity message"
run "$GPUFRAC" status --json
assert_eq "$(jq --arg p "$P-s" '[.devices[].shares[].container_id | select(startswith($p))] | length' <<<"$OUT")" 4 \
  "status lists four shares"
for i in 1 2 3 4 5; do runc delete -f "$P-s$i" >/dev/null 2>&1 || true; done
assert_eq "$(jq '.entries | length' "$E2E_TMP/state/ledger.json")" 0 "all shares released after delete"

# 3. A private PID namespace is refused with the host-PID line.
make_bundle "$E2E_TMP/b3" 'true' gpufrac.io/fraction=0.25
jq '.linux.namespaces += [{"type":"pid"}]' "$E2E_TMP/b3/config.json" >"$E2E_TMP/c.json" && mv "$E2E_TMP/c.json" "$E2E_TMP/b3/config.json"
run runc run --bundle "$E2E_TMP/b3" "$P-3"
assert_eq "$RC" 1 "private PID namespace refused"
assert_contains "$OUT" "gpufrac-hook: the container has its own PID namespace" "host-PID message"
assert_contains "$OUT" "--pid=host" "names --pid=host"
assert_contains "$OUT" "hostPID: true" "names hostPID: true"

# 4. A malformed annotation is refused with the parse line; nothing is booked.
make_bundle "$E2E_TMP/b4" 'true' gpufrac.io/fraction=1.5
run runc run --bundle "$E2E_TMP/b4" "$P-4"
assert_eq "$RC" 1 "malformed fraction refused"
assert_contains "$OUT" 'gpufrac-hook: gpufrac.io/fraction: \"1.5\" is out of range' "parse error names the annotation and value"
assert_eq "$(jq '.entries | length' "$E2E_TMP/state/ledger.json")" 0 "nothing booked"

# 5. No annotation: untouched container, untouched ledger.
before=$(stat -c %Y.%s "$E2E_TMP/state/ledger.json")
make_bundle "$E2E_TMP/b5" 'test -e /run/gpufrac && echo HAS-GPUFRAC; test -e /dev/nvidia0 && echo HAS-GPU; echo done'
run runc run --bundle "$E2E_TMP/b5" "$P-5"
assert_eq "$RC" 0 "plain container runs"
assert_eq "$OUT" "done" "plain container sees no gpufrac mounts or GPU nodes"
assert_eq "$(stat -c %Y.%s "$E2E_TMP/state/ledger.json")" "$before" "ledger untouched"

# 6. A spec gpufrac-runtime already injected (its marker annotation) is left to the wrapper's own
# --attach hook: the annotation hook books nothing.
make_bundle "$E2E_TMP/b6" 'test -e /dev/nvidia0 && echo HAS-GPU; echo done' gpufrac.io/fraction=0.25 gpufrac.io/injected=gpufrac-runtime
run runc run --bundle "$E2E_TMP/b6" "$P-6"
assert_eq "$RC" 0 "injected spec runs"
assert_eq "$OUT" "done" "the hook did not apply anything to an injected spec"
assert_eq "$(stat -c %Y.%s "$E2E_TMP/state/ledger.json")" "$before" "ledger untouched for an injected spec"

# 7. A request in the environment (GPUFRAC_*, for engines without annotations): the same share; a
# misspelt variable gets a warning (in gpufrac's log and on stderr, which runc shows only when a hook
# fails) and books nothing.
with_env() {
  jq --arg kv "$2" '.process.env += [$kv]' "$1/config.json" >"$1/config.json.new" && mv "$1/config.json.new" "$1/config.json"
}
make_bundle "$E2E_TMP/b7" 'cat /run/gpufrac/limits'
with_env "$E2E_TMP/b7" GPUFRAC_MEMORY=2Gi
run runc run --bundle "$E2E_TMP/b7" "$P-7"
assert_eq "$RC" 0 "runc run with an environment request: $OUT"
assert_contains "$OUT" " $((2 << 30))" "2 GiB limit from GPUFRAC_MEMORY"
assert_eq "$(jq '.entries | length' "$E2E_TMP/state/ledger.json")" 0 "released"
make_bundle "$E2E_TMP/b8" 'echo ran'
with_env "$E2E_TMP/b8" GPUFRAC_MEMROY=2Gi
run runc run --bundle "$E2E_TMP/b8" "$P-8"
assert_eq "$RC" 1 "a misspelt variable is refused (requests.unknown: refuse, the default)"
assert_contains "$OUT" 'gpufrac-hook: \"GPUFRAC_MEMROY\" in the container'"'"'s environment is not a gpufrac request (did you mean GPUFRAC_MEMORY?)' \
  "the hook's refusal names it"
assert_eq "$(jq '.entries | length' "$E2E_TMP/state/ledger.json")" 0 "nothing booked"
echo "requests: {unknown: warn}" >>"$GPUFRAC_CONFIG"
run runc run --bundle "$E2E_TMP/b8" "$P-8"
assert_eq "$RC" 0 "under requests.unknown: warn a misspelt variable does not stop the container"
assert_contains "$(grep "warning: \[$P-8\]" "$E2E_TMP/gpufrac.log")" '"GPUFRAC_MEMROY" in the container'"'"'s environment is not a gpufrac request (did you mean GPUFRAC_MEMORY?)' \
  "the hook's warning is in the log"
assert_eq "$(jq '.entries | length' "$E2E_TMP/state/ledger.json")" 0 "nothing booked"
finish
