#!/bin/bash
# A CUDA program in a runc container with a 0.25 share: the shim (preloaded through the mounted
# /etc/ld.so.preload) stops it at its limit, and `gpufrac status` on the host shows what the
# container holds right now, read from its accounting region. gc reclaims leftovers.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/containers.sh"
need_root
need_cmd runc
need_cmd jq
PROBE=$GPUFRAC_BUILD_DIR/tests/shim/shim_probe
[ -x "$PROBE" ] || skip "shim_probe is not built"
e2e_tmp
P=gpufrac-e2e-usage-$$
e2e_on_exit() { exec 3>&- 2>/dev/null || true; runc_cleanup "$P"; }
e2e_gpu_config a100-40gb-x1.yaml
GPU=$(jq -r '.gpus[0].uuid' <<<"$("$GPUFRAC" info --json)")
GIB=1073741824

make_bundle "$E2E_TMP/b" '/bin/shim_probe fill cuMemAlloc_v2 1073741824 hold' gpufrac.io/fraction=0.25
add_program "$E2E_TMP/b/rootfs" "$PROBE"
add_glibc "$E2E_TMP/b/rootfs"
jq --arg dev "$GPU=42505273344" '.process.env += ["GPUFRAC_FAKE_CUDA_DEVICES=" + $dev]' "$E2E_TMP/b/config.json" \
  >"$E2E_TMP/c.json" && mv "$E2E_TMP/c.json" "$E2E_TMP/b/config.json"

mkfifo "$E2E_TMP/stdin"
exec 3<>"$E2E_TMP/stdin"   # the probe holds its memory until this is closed
runc create --bundle "$E2E_TMP/b" "$P" <"$E2E_TMP/stdin" >"$E2E_TMP/out.log" 2>&1 || fail "runc create: $(cat "$E2E_TMP/out.log")"
runc start "$P"
for _ in $(seq 100); do grep -q "^fill" "$E2E_TMP/out.log" && break; sleep 0.1; done
assert_contains "$(cat "$E2E_TMP/out.log")" "fill cuMemAlloc_v2 each=1073741824 ok=9 rc=2" "9 GiB fit in the 9.9 GiB share"
assert_contains "$(cat "$E2E_TMP/out.log")" "gpufrac: cuMemAlloc_v2 of 1073741824 refused: limit 10626269184 on $GPU, 9663676416 in use" "the shim says why"

run "$GPUFRAC" status --json
assert_eq "$(jq -r --arg c "$P" '.devices[].shares[] | select(.container_id == $c) | .used_bytes' <<<"$OUT")" $((9 * GIB)) \
  "status shows the live usage of the container"
run "$GPUFRAC" status
assert_contains "$OUT" "9.0 GiB" "the table shows the live usage"

exec 3>&-                  # the probe exits, the container stops
for _ in $(seq 100); do [ "$(runc state "$P" 2>/dev/null | jq -r .status)" = stopped ] && break; sleep 0.1; done
runc delete "$P"
assert_eq "$(jq '.entries | length' "$E2E_TMP/state/ledger.json")" 0 "released at delete"

# gc removes a container directory that lost its booking (e.g. a poststop that never ran).
mkdir -p "$E2E_TMP/state/containers/orphan"
run "$GPUFRAC" gc --json
assert_eq "$(jq -c '.container_dirs_removed' <<<"$OUT")" '["orphan"]' "gc removes orphaned container files"
test -e "$E2E_TMP/state/containers/orphan" && fail "orphan directory still there"
finish
