# The demo's burst (sourced by scripts/demo-story.sh, step 8): a node whose reclaimer sees the
# driver's per-process memory (NVML; on the simulated node the fake libnvidia-ml.so.1 over the fake
# libcuda's per-process files, which the hook and the containers get through the variables below).
# demo-burst books 10Gi and takes up to its 30Gi limit while alone; demo-owner books 20Gi and takes
# it: the GPU is full, so demo-burst's process is stopped and demo-owner gets its memory.
BURST_STATE=$DEMO/burst-state
mkdir -p "$BURST_STATE" "$DEMO/fake" "$ROOTFS$DEMO/fake"
BURST_NVML="nvml: {backend: nvml}"
HOOK_PATH=$BIN/gpufrac-hook EXTRA_JQ=.
if [ "$MODE" = simulated ]; then
  export GPUFRAC_FAKE_NVML_MACHINE=$SRC/nvml/machines/a100-40gb-x1.yaml GPUFRAC_FAKE_NVML_STATE=$DEMO/fake/nvml.json
  BURST_NVML="nvml: {backend: nvml, library: $BUILD/fakes/libnvidia-ml.so.1}"
  HOOK_PATH=$DEMO/hook.sh   # hands the hook the fake driver's variables (a real node's needs none)
  printf '#!/bin/sh\nexport GPUFRAC_FAKE_NVML_MACHINE=%s GPUFRAC_FAKE_NVML_STATE=%s\nexec %s "$@"\n' \
    "$GPUFRAC_FAKE_NVML_MACHINE" "$GPUFRAC_FAKE_NVML_STATE" "$BIN/gpufrac-hook" >"$HOOK_PATH"
  chmod 755 "$HOOK_PATH"
  EXTRA_JQ='.process.env += ["GPUFRAC_FAKE_NVML_STATE='"$DEMO"'/fake/nvml.json"]
    | .mounts += [{destination: "'"$DEMO"'/fake", type: "bind", source: "'"$DEMO"'/fake", options: ["rbind", "rw"]}]'
fi
sed -e "s|^state-dir: .*|state-dir: $BURST_STATE|" -e "s|^nvml: .*|$BURST_NVML|" "$GPUFRAC_CONFIG" >"$DEMO/burst.yaml"
export GPUFRAC_CONFIG=$DEMO/burst.yaml
"$GPUFRAC" info --refresh >/dev/null
exec 3<>"$DEMO/stdin"
start_container demo-burst "exec /bin/alloc_until_limit 1024" \
  '{"gpufrac.io/memory": "10Gi", "gpufrac.io/memory-limit": "30Gi"}'
wait_for_line "$DEMO/demo-burst.log" "^allocated"
cat "$DEMO/demo-burst.log"
show "$GPUFRAC" status
start_container demo-owner "exec /bin/alloc_until_limit 1024" '{"gpufrac.io/memory": "20Gi"}'
wait_for_line "$DEMO/demo-owner.log" "^allocated"
cat "$DEMO/demo-owner.log"
show "$GPUFRAC" status
exec 3>&-
for id in "${IDS[@]}"; do runc delete -f "$id" >/dev/null 2>&1 || true; done
IDS=()
for _ in $(seq 100); do [ -s "$BURST_STATE/reclaimer.lock" ] || break; pid=$(cat "$BURST_STATE/reclaimer.lock"); [ -e "/proc/$pid" ] || break; sleep 0.1; done
HOOK_PATH= EXTRA_JQ=
