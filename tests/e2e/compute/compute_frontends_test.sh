#!/bin/bash
# Compute shares through gpufrac's front-ends with real runc, on the simulated machine's driver
# (the fake libcuda.so.1 gpufrac injects) and its simulated GPU: 30/70 by gpufrac-hook
# (annotations, GPU 0) and by gpufrac-runtime (GPU 1) at once, then 25/75 by CDI devices (the
# spec's edits applied to config.json as a CDI-aware runtime does; the hook binds the arbiter at
# createRuntime). Each pair: the container sees its compute and arbiter lines and the arbiter,
# shares within 2 points over 10 s, `gpufrac status` shows what each achieved, and when the
# containers are gone their slots are free again.
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/../containers.sh"
source "$(dirname "$0")/../wrapper.sh"
source "$(dirname "$0")/compute_lib.sh"
e2e_runc_test cfront
e2e_gpu_config a100-40gb-x2.yaml "cdi: {fractions: [0.25, 0.75], output: $E2E_TMP/cdi/gpufrac.json}"
unset GPUFRAC_FAKE_CUDA_DEVICES # the injected driver knows the machine's GPUs
read -r G0 G1 < <(jq -r '[.gpus[].uuid] | join(" ")' <<<"$("$GPUFRAC" info --json)")
ST=$E2E_TMP/state
sim_gpu

# front_bundle NAME START ANNOTATION...: compute_load from start time START, after showing the
# container's limit file and arbiters.
front_bundle() {
  local name=$1 start=$2
  shift 2
  hook_bundle "$name" "cat /run/gpufrac/limits; ls /run/gpufrac/compute; $(synced "$start" async:14)" "$@"
}
# measure NAME...: the clients' window of 10 s, 2 s after the start, into $E2E_TMP/window-<first name>.
measure() {
  sleep 2
  "$GPUTOOL" window "$SIMGPU" 10 "$@" >"$E2E_TMP/window-$1"
}
# check_pair WHAT GPU NAME:PERCENT NAME:PERCENT: what each container saw, shares, status.
check_pair() {
  local what=$1 gpu=$2 a=${3%:*} wa=${3#*:} b=${4%:*} wb=${4#*:}
  OUT=$(cat "$E2E_TMP/window-$a")
  echo "$what: $(tr '\n' ' ' <<<"$OUT")"
  assert_near "$(share_of "$a")" "$wa" 2 "$what: share of $a"
  assert_near "$(share_of "$b")" "$wb" 2 "$what: share of $b"
  run "$GPUFRAC" status --json
  for c in "$a:$wa" "$b:$wb"; do
    ppm=$(jq --arg c "$P-${c%:*}" '.devices[].shares[] | select(.container_id == $c) | .compute_achieved_ppm' <<<"$OUT")
    assert_near "$ppm" "${c#*:}0000" 40000 "$what: status shows what ${c%:*} achieved over 10 s (ppm)"
  done
  for c in "$a" "$b"; do
    out=$(cat "$E2E_TMP/$c.log")
    assert_contains "$out" "compute $gpu " "$what: $c's limit file has its compute line"
    assert_contains "$out" "arbiter $gpu " "$what: and its arbiter line"
    assert_contains "$out" "$gpu" "$what: $c sees the arbiter"
  done
}
# finish_pair NAME...: waits for the containers to end, deletes them; their slots are free.
finish_pair() {
  local c
  for c in "$@"; do
    for _ in $(seq 300); do [ "$(runc state "$P-$c" 2>/dev/null | jq -r .status)" = stopped ] && break; sleep 0.1; done
    runc delete "$P-$c"
  done
}

# 1. gpufrac-hook (GPU 0) and gpufrac-runtime (GPU 1) at once.
front_bundle h30 t1 gpufrac.io/compute=30 gpufrac.io/gpu=0
front_bundle h70 t1 gpufrac.io/compute=70 gpufrac.io/gpu=0
for c in h30 h70; do
  runc create --bundle "$E2E_TMP/$c" "$P-$c" >"$E2E_TMP/$c.log" 2>&1 || fail "hook create $c: $(cat "$E2E_TMP/$c.log")"
done
for c in w30 w70; do
  front_bundle "$c" t1 gpufrac.io/compute="${c#w}" gpufrac.io/gpu=1
  jq '.hooks = {}' "$E2E_TMP/$c/config.json" >"$E2E_TMP/c.json" && mv "$E2E_TMP/c.json" "$E2E_TMP/$c/config.json"
  "$WRAPPER" create --bundle "$E2E_TMP/$c" "$P-$c" >"$E2E_TMP/$c.log" 2>&1 || fail "wrapper create $c: $(cat "$E2E_TMP/$c.log")"
done
for c in h30 h70 w30 w70; do runc start "$P-$c"; done
go t1 1 >/dev/null
measure h30 h70 &
measure w30 w70
wait
check_pair hook "$G0" h30:30 h70:70
check_pair wrapper "$G1" w30:30 w70:70
finish_pair h30 h70 w30 w70
assert_eq "$(slots "$ST" "$G0"):$(slots "$ST" "$G1")" "0:0" "released at poststop: no slot left in either arbiter"

# 2. CDI devices 0-0.25 and 0-0.75: the spec is static; the hook books and binds the arbiter.
run "$GPUFRAC" cdi generate
assert_eq "$RC" 0 "cdi generate: $OUT"
SPEC=$E2E_TMP/cdi/gpufrac.json
# apply_cdi BUNDLE DEVICE: the spec's common and device edits in config.json (mounts, device nodes
# with their cgroup rules, hooks, env), as a CDI-aware runtime applies them.
apply_cdi() {
  jq --slurpfile spec "$SPEC" --arg dev "$2" '
    ($spec[0].containerEdits) as $c | ($spec[0].devices[] | select(.name == $dev) | .containerEdits) as $d
    | [$c, $d] as $all
    | .mounts += [$all[] | .mounts // [] | .[] | {destination: .containerPath, source: .hostPath,
                  type: (.type // "bind"), options: (.options // [])}]
    | .linux.devices += [$all[] | .deviceNodes // [] | .[] | {path, type: (.type // "c"), major, minor,
                         fileMode: (.fileMode // 438)}]
    | .linux.resources.devices += [$all[] | .deviceNodes // [] | .[] | {allow: true, type: (.type // "c"), major,
                                   minor, access: (.permissions // "rwm")}]
    | .process.env += [$all[] | .env // [] | .[]]
    | reduce ($all[] | .hooks // [] | .[]) as $h (.; .hooks[$h.hookName] += [$h | del(.hookName)])
  ' "$1/config.json" >"$1/c.json" && mv "$1/c.json" "$1/config.json"
}
for c in c25:0.25 c75:0.75; do
  n=${c%:*}
  front_bundle "$n" t2
  jq '.hooks = {} | .annotations = {}' "$E2E_TMP/$n/config.json" >"$E2E_TMP/c.json" && mv "$E2E_TMP/c.json" "$E2E_TMP/$n/config.json"
  apply_cdi "$E2E_TMP/$n" "0-${c#*:}"
  runc create --bundle "$E2E_TMP/$n" "$P-$n" >"$E2E_TMP/$n.log" 2>&1 || fail "CDI create $n: $(cat "$E2E_TMP/$n.log")"
done
for c in c25 c75; do runc start "$P-$c"; done
go t2 1 >/dev/null
measure c25 c75
check_pair CDI "$G0" c25:25 c75:75
finish_pair c25 c75
assert_eq "$(slots "$ST" "$G0")" 0 "CDI: released at poststop"
finish
