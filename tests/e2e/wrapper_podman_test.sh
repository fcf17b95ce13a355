#!/bin/bash
# gpufrac-runtime as podman's runtime "gpufrac", registered by `gpufrac runtime configure podman`:
# --annotation gpufrac.io/fraction=0.25 gets the shim, its limit and the device nodes and is
# released at removal; a malformed annotation is refused with its one line; with gpufrac's hooks.d
# files also active, podman puts gpufrac-hook into the spec and the wrapper steps aside (one
# booking, by the hook).
#
# podman starts the runtime through conmon, which passes on only containers.conf's
# conmon_env_vars: that is how GPUFRAC_CONFIG reaches the wrapper here. CONTAINERS_CONF makes podman
# read only the test's file, so the drop-in's content is copied into it.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/containers.sh"
source "$(dirname "$0")/wrapper.sh"
e2e_podman_test wpodman
e2e_gpu_config a100-40gb-x1.yaml
GPU=$(jq -r '.gpus[0].uuid' <<<"$("$GPUFRAC" info --json)")
LIMIT=$((40536 / 4 * 1024 * 1024))
make_rootfs "$E2E_TMP/rootfs"
PODMAN_RUNTIME=gpufrac

run "$GPUFRAC" runtime configure podman --engine-config "$E2E_TMP/containers.conf" --drop-in "$E2E_TMP/99-gpufrac.conf" \
  --runtime-path "$WRAPPER"
assert_eq "$RC" 0 "configure podman: $OUT"
assert_eq "$(grep -c '^gpufrac = \["'"$WRAPPER"'"\]$' "$E2E_TMP/99-gpufrac.conf")" 1 "engine.runtimes.gpufrac names the wrapper"
sed "s|^\[engine\]$|[engine]\nconmon_env_vars = [\"PATH=/usr/sbin:/usr/bin:/sbin:/bin\", \"GPUFRAC_CONFIG=$GPUFRAC_CONFIG\"]|" \
  "$E2E_TMP/99-gpufrac.conf" >"$E2E_TMP/podman.conf"
export CONTAINERS_CONF=$E2E_TMP/podman.conf
mkdir -p "$E2E_TMP/no-hooks" "$E2E_TMP/hooks.d"
for f in "$GPUFRAC_SOURCE_DIR"/etc/oci/hooks.d/*.json; do
  jq --arg hook "$HOOK" --arg cfg "GPUFRAC_CONFIG=$GPUFRAC_CONFIG" '.hook.path = $hook | .hook.env += [$cfg]' "$f" \
    >"$E2E_TMP/hooks.d/$(basename "$f")"
done

# 1. A 0.25 share through the wrapper; --rm releases it.
PODMAN_HOOKS_DIR=$E2E_TMP/no-hooks podman_run --rm --name "$P-1" --pid=host --annotation gpufrac.io/fraction=0.25 -- /bin/sh -c \
  'cat /run/gpufrac/limits /etc/ld.so.preload; stat -c "%n %t:%T" /dev/nvidia0 /dev/nvidiactl'
assert_eq "$RC" 0 "podman --runtime gpufrac with a 0.25 share: $OUT"
assert_contains "$OUT" "device $GPU $LIMIT" "limit file: 1/4 of the GPU"
assert_contains "$OUT" "/run/gpufrac/libgpufrac-limits.so" "preload lists the shim"
assert_contains "$OUT" "/dev/nvidia0 c3:0" "GPU node"
assert_contains "$OUT" "/dev/nvidiactl c3:ff" "control node"
assert_eq "$(ledger_count)" 0 "released after --rm"

# 2. A malformed annotation: podman shows the wrapper's line; nothing booked.
PODMAN_HOOKS_DIR=$E2E_TMP/no-hooks podman_run --rm --name "$P-2" --pid=host --annotation gpufrac.io/fraction=1.5 -- /bin/true
assert_eq "$RC" 126 "malformed fraction refused"
assert_contains "$OUT" 'gpufrac: gpufrac.io/fraction: "1.5" is out of range' "the parse line reaches podman"
assert_eq "$(ledger_count)" 0 "nothing booked"

# 3. hooks.d active as well: the spec carries gpufrac-hook, the wrapper leaves it to the hook.
PODMAN_HOOKS_DIR=$E2E_TMP/hooks.d podman_run -d --name "$P-3" --pid=host --annotation gpufrac.io/fraction=0.25 -- /bin/sleep 60
assert_eq "$RC" 0 "hooks.d and the wrapper together: $OUT"
assert_eq "$(jq -c '[.entries[] | .source]' "$E2E_TMP/state/ledger.json")" '["hook"]' "one booking, made by the hook"
podman rm -f "$P-3" >/dev/null
assert_eq "$(ledger_count)" 0 "podman rm releases it"
finish
