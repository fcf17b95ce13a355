#!/bin/bash
# SM sharing through CDI with real podman 4.3.1 and runc (docs/architecture.md "SM sharing"):
# cdi.sm-shares: [30, 70] gives every GPU that may switch the devices <gpu>-sm30 and <gpu>-sm70;
# `podman run --device <kind>=0-sm30` is booked by the device's createRuntime hook through gpufrac mps
# provision, gets the MPS client environment from the spec and the pipe and shm directories from the
# hook, and is an MPS client with 30 % of the SMs. Released by podman rm; the daemon stops after its
# idle timeout. (The spec's hooks get the fake NVML's variables, and the containers the fake driver's
# state, as the simulated driver needs; a real node's spec carries neither.)
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/../containers.sh"
source "$(dirname "$0")/sm_lib.sh"
e2e_podman_test smcdi
KIND=gpufrac-e2e-$$.io/gpu
SPEC=/var/run/cdi/gpufrac-e2e-sm-$$.yaml
e2e_on_exit() {
  podman ps -aq --filter "name=^$P" | xargs -r podman rm -f >/dev/null 2>&1 || true
  rm -f "$SPEC"
}
sm_config a100-40gb-x2.yaml "compute: {mps-idle-timeout: 0}"
sed -i "s|^cdi: .*|cdi: {output: $SPEC, spec-dirs: [/var/run/cdi], sm-shares: [\"30\", \"70\"]}|" "$GPUFRAC_CONFIG"
run "$GPUFRAC" cdi generate --kind "$KIND" --output "$SPEC"
assert_eq "$RC" 0 "generate: $OUT"
run "$GPUFRAC" cdi validate "$SPEC"
assert_eq "$RC" 0 "the spec validates: $OUT"
run "$GPUFRAC" cdi list --spec-dir /var/run/cdi
assert_contains "$OUT" "$KIND=0-sm30" "a device for 30 % of GPU 0's SMs"
assert_contains "$OUT" "$KIND=1-sm70" "and 70 % of GPU 1's"
FAKE="[\"GPUFRAC_FAKE_NVML_MACHINE=$GPUFRAC_FAKE_NVML_MACHINE\",\"GPUFRAC_FAKE_NVML_STATE=$GPUFRAC_FAKE_NVML_STATE\"]"
yq_json=$(python3 -c 'import sys, yaml, json; print(json.dumps(yaml.safe_load(open(sys.argv[1]))))' "$SPEC")
jq --argjson fake "$FAKE" '(.devices[].containerEdits.hooks[]?.env) += $fake' <<<"$yq_json" >"$SPEC.json"
mv "$SPEC.json" "${SPEC%.yaml}.json" && rm -f "$SPEC" && SPEC=${SPEC%.yaml}.json

mkdir -p "$E2E_TMP/hooks.d"
make_rootfs "$E2E_TMP/rootfs"
sm_rootfs "$E2E_TMP/rootfs"
PODMAN_HOOKS_DIR=$E2E_TMP/hooks.d
F=$E2E_TMP/fake
podman_run --rm --name "$P-1" --pid=host --device "$KIND=0-sm30" -v "$F:$F" -e "GPUFRAC_FAKE_NVML_STATE=$GPUFRAC_FAKE_NVML_STATE" \
  -- /bin/sh -c 'mps_probe launch 2 sleep_1ms; ls /dev/shm; cat /run/gpufrac/limits'
assert_eq "$RC" 0 "podman run --device $KIND=0-sm30: $OUT"
assert_contains "$OUT" "CUDA_MPS_PIPE_DIRECTORY=/run/gpufrac/mps/pipe
CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=30
CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=$GPU0=12160M
cuInit: CUDA_SUCCESS
context: CUDA_SUCCESS
launch: 2 ok, then done" "an MPS client with 30 % of GPU 0's SMs, its environment from the spec"
assert_contains "$OUT" "cuda.shm." "the server's shm directory at /dev/shm"
assert_contains "$OUT" "mps $GPU0 30" "the limit file names the SM share"
assert_eq "$(ledger '.entries | length')" 0 "--rm released the share"
assert_eq "$(ledger '[.mps[].gpu]')" "[\"$GPU0\"]" "GPU 0 is in MPS mode until gc"
run "$GPUFRAC" gc
assert_contains "$OUT" "Stopped the MPS daemon of GPU 0" "gc stops the idle daemon (timeout 0)"
assert_eq "$(compute_mode "$GPU0")" "" "GPU 0 back to DEFAULT"
sm_end
finish
