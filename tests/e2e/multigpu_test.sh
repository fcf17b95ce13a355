#!/bin/bash
# Multi-GPU shares (gpufrac.io/gpus, docs/architecture.md "Requests and allocation") with real runc,
# through gpufrac-hook and through gpufrac-runtime:
# 1. a100-40gb-x2: `gpus=2` sees both GPUs' nodes and a limit per GPU; `gpus=2` + `fraction=0.5`
#    twice fills both GPUs and a third is refused in one line; `gpus=3` is refused in one line; a
#    malformed count is refused; no refusal changes the ledger. `gpufrac status` shows a two-GPU
#    share as one line naming both GPUs; gc reclaims both bookings of a dead share; the metrics
#    count each GPU's share. Two CDI devices (one per GPU) get both limits; when the second is
#    refused the first is released.
# 2. dgx-8gpu-mixed (GPUs 0-3 shareable, NVLink pairs 0-1 and 2-3): `gpufrac info --topology` shows
#    the matrix; with GPU 0 taken whole, `gpus=2` takes the NVLink pair 2,3, not the lower indices 1,2;
#    two half shares fill the pair and a third is refused.
# 3. SIGKILL at every ledger fault point of a two-GPU booking leaves none of it; 200 concurrent
#    random reservations (a quarter of them killed at a fault point) never half-book or over-book.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/containers.sh"
source "$(dirname "$0")/wrapper.sh"
e2e_runc_test mgpu
LEDGER=$E2E_TMP/state/ledger.json
sleep 3600 &
SLEEPER=$!
e2e_on_exit() {
  kill "$SLEEPER" "${DOOMED:-}" 2>/dev/null || true
  runc_cleanup "$P"
}

# runc create hands the container its stdio: send it to a file, or the capture would wait for it.
hook_create() { set +e; runc create --bundle "$1" "$2" >"$1.log" 2>&1; RC=$?; set -e; OUT=$(cat "$1.log"); }
wrap_create() {
  set +e
  "$WRAPPER" --log "$1.runc.log" --log-format json create --bundle "$1" "$2" >"$1.log" 2>&1
  RC=$?
  set -e
  OUT=$(cat "$1.log")
}
# The hook's line as runc reports it: "gpufrac-hook: ..." up to the end of the Go-quoted stderr.
hook_line() { grep -o 'gpufrac-hook: .*' <<<"$1" | sed 's/\\n"$//'; }
uuid_of() { jq -r ".gpus[$1].uuid" <<<"$("$GPUFRAC" info --json)"; }
# The GPU indices a container booked, ascending: "0,1".
indices_of() { jq -r --arg c "$1" '[.entries[] | select(.container_id == $c) | .gpu_index] | sort | map(tostring) | join(",")' "$LEDGER"; }
# bundle <front-end> <dir> <command> [annotation...]: with the hook at createRuntime, or plain for the wrapper.
bundle() {
  if [ "$1" = hook ]; then make_bundle "${@:2}"; else make_plain_bundle "${@:2}"; fi
}
create() { if [ "$1" = hook ]; then hook_create "${@:2}"; else wrap_create "${@:2}"; fi; }
runit() {
  if [ "$1" = hook ]; then run runc run --bundle "$2" "$3"; else run "$WRAPPER" --log "$2.runc.log" run --bundle "$2" "$3"; fi
}
line_of() { if [ "$1" = hook ]; then hook_line "$2"; else grep -o 'gpufrac: .*' <<<"$2" | head -n 1; fi; }

# 1. Two GPUs of a100-40gb-x2, through each front-end.
e2e_gpu_config a100-40gb-x2.yaml
"$GPUFRAC" info --refresh >/dev/null
G0=$(uuid_of 0) G1=$(uuid_of 1)
FULL=$((40536 * 1024 * 1024)) HALF=$((40536 / 2 * 1024 * 1024))
for fe in hook wrapper; do
  d=$E2E_TMP/$fe
  bundle $fe "$d/whole" 'cat /run/gpufrac/limits; ls /dev; echo "env $GPUFRAC_DEVICES"' gpufrac.io/gpus=2
  runit $fe "$d/whole" "$P-$fe-whole"
  assert_eq "$RC" 0 "$fe: gpus=2 runs: $OUT"
  assert_contains "$OUT" "device $G0 $FULL" "$fe: gpus=2 limit line for GPU 0 (whole)"
  assert_contains "$OUT" "device $G1 $FULL" "$fe: gpus=2 limit line for GPU 1 (whole)"
  assert_eq "$(grep -c '^nvidia[0-9]$' <<<"$OUT")" 2 "$fe: gpus=2 sees two GPU nodes: $OUT"
  assert_contains "$OUT" "nvidia0
nvidia1" "$fe: the nodes of GPUs 0 and 1"
  if [ $fe = wrapper ]; then assert_contains "$OUT" "env $G0,$G1" "$fe: GPUFRAC_DEVICES names both GPUs"; fi
  assert_eq "$(ledger_count)" 0 "$fe: gpus=2 released both GPUs after the run"

  for i in 1 2 3; do bundle $fe "$d/h$i" 'sleep 600' gpufrac.io/gpus=2 gpufrac.io/fraction=0.5; done
  for i in 1 2; do
    create $fe "$d/h$i" "$P-$fe-h$i"
    assert_eq "$RC" 0 "$fe: half share $i on two GPUs starts: $OUT"
    assert_eq "$(indices_of "$P-$fe-h$i")" "0,1" "$fe: half share $i books GPUs 0 and 1"
  done
  assert_eq "$(ledger_count ".bytes == $HALF")" 4 "$fe: four half bookings fill both GPUs"
  before=$(cat "$LEDGER")
  create $fe "$d/h3" "$P-$fe-h3"
  assert_eq "$RC" 1 "$fe: the third two-GPU half share is refused"
  assert_eq "$(line_of $fe "$OUT")" \
    "$([ $fe = hook ] && echo gpufrac-hook || echo gpufrac): fraction=0.5 gpus=2 needs 2 GPUs and none can take it: GPU 0 0 B free (needs 19.8 GiB), GPU 1 0 B free (needs 19.8 GiB)$([ $fe = wrapper ] && echo " (config: $GPUFRAC_CONFIG)")" \
    "$fe: the refusal is one line naming each GPU"
  assert_eq "$(cat "$LEDGER")" "$before" "$fe: the refusal left the ledger as it was"

  bundle $fe "$d/three" 'true' gpufrac.io/gpus=3
  runit $fe "$d/three" "$P-$fe-three"
  assert_eq "$RC" 1 "$fe: gpus=3 on two GPUs is refused"
  assert_contains "$(line_of $fe "$OUT")" "gpufrac.io/gpus: 3 GPUs asked for and this node has 2; use 1 to 2" \
    "$fe: gpus=3 refusal names the key and the accepted range"
  bundle $fe "$d/bad" 'true' gpufrac.io/gpus=02
  runit $fe "$d/bad" "$P-$fe-bad"
  assert_eq "$RC" 1 "$fe: gpus=02 is refused"
  q='"'
  if [ $fe = hook ]; then q='\"'; fi
  assert_contains "$(line_of $fe "$OUT")" \
    "gpufrac.io/gpus: ${q}02${q} is not a number of GPUs; use a whole number of GPUs from 1 to 16, e.g. 2" \
    "$fe: the malformed count names the key and the form"
  assert_eq "$(cat "$LEDGER")" "$before" "$fe: refusals booked nothing"

  run "$GPUFRAC" status --no-trunc
  assert_eq "$(grep -c -- "$P-$fe-h" <<<"$OUT")" 2 "$fe: status shows each two-GPU share on one line: $OUT"
  assert_contains "$(grep -- "$P-$fe-h1" <<<"$OUT")" " 0,1 " "$fe: the line names both GPUs"
  run "$GPUFRAC" status --json
  assert_eq "$(jq --arg c "$P-$fe-h1" '[.devices[] | select(any(.shares[]; .container_id == $c)) | .gpu_index]' -c <<<"$OUT")" \
    "[0,1]" "$fe: status --json lists the share under both GPUs"
  for i in 1 2 3; do runc delete -f "$P-$fe-h$i" >/dev/null 2>&1 || true; done
  assert_eq "$(ledger_count)" 0 "$fe: deleting the containers released every GPU"
done

# gc and metrics: a dead two-GPU share is reclaimed from both GPUs; each GPU counts its share.
sleep 3600 &
DOOMED=$!
"$GPUFRAC" ledger reserve --container gcme --annotation gpufrac.io/gpus=2 --annotation gpufrac.io/memory=4Gi \
  --pid "$DOOMED" >/dev/null
"$GPUFRAC" ledger reserve --container alive --annotation gpufrac.io/gpus=2 --annotation gpufrac.io/memory=2Gi \
  --pid "$SLEEPER" >/dev/null
mkdir -p "$E2E_TMP/prom"
run "$GPUFRAC" metrics --textfile "$E2E_TMP/prom"
assert_eq "$RC" 0 "metrics --textfile: $OUT"
for u in "$G0" "$G1"; do
  assert_eq "$(grep '^gpufrac_gpu_shares{' "$E2E_TMP/prom/gpufrac.prom" | grep -F "$u" | awk '{print $NF}')" 2 \
    "metrics: GPU $u counts both two-GPU shares"
  assert_eq "$(grep '^gpufrac_gpu_memory_reserved_bytes{' "$E2E_TMP/prom/gpufrac.prom" | grep -F "$u" | awk '{print $NF}')" \
    $((6 << 30)) "metrics: GPU $u has 4 GiB + 2 GiB reserved"
done
kill "$DOOMED"
wait "$DOOMED" 2>/dev/null || true
DOOMED=
run "$GPUFRAC" gc
assert_eq "$RC" 0 "gc: $OUT"
assert_eq "$(ledger_count '.container_id == "gcme"')" 0 "gc reclaimed both bookings of the dead share"
assert_eq "$(indices_of alive)" "0,1" "gc kept both bookings of the live share"
"$GPUFRAC" ledger release --container alive >/dev/null

# CDI: a device per GPU, as a spec's two devices give a container (each its createRuntime hook):
# both GPUs' limits; with GPU 1 taken whole the second device is refused and the start fails, and
# the poststop hook releases the first device's booking.
cdi_bundle() {
  make_plain_bundle "$1" 'cat /run/gpufrac/limits'
  local env="[\"PATH=/usr/bin:/bin\",\"GPUFRAC_CONFIG=$GPUFRAC_CONFIG\"]"
  jq --arg hook "$HOOK" --argjson env "$env" '
    .hooks = {createRuntime: [{path: $hook, args: ["gpufrac-hook", "createRuntime", "--cdi-device", "0-0.5"], env: $env},
                              {path: $hook, args: ["gpufrac-hook", "createRuntime", "--cdi-device", "1-0.5"], env: $env}],
              poststop: [{path: $hook, args: ["gpufrac-hook", "poststop"], env: $env}]}' "$1/config.json" >"$1/c.json"
  mv "$1/c.json" "$1/config.json"
}
cdi_bundle "$E2E_TMP/cdi1"
run runc run --bundle "$E2E_TMP/cdi1" "$P-cdi1"
assert_eq "$RC" 0 "two CDI devices, one per GPU: $OUT"
assert_contains "$OUT" "device $G0 $HALF" "CDI: GPU 0's half"
assert_contains "$OUT" "device $G1 $HALF" "CDI: GPU 1's half"
"$GPUFRAC" ledger reserve --container whole1 --annotation gpufrac.io/fraction=1 --annotation gpufrac.io/gpu=1 \
  --pid "$SLEEPER" >/dev/null
cdi_bundle "$E2E_TMP/cdi2"
run runc run --bundle "$E2E_TMP/cdi2" "$P-cdi2"
assert_eq "$RC" 1 "the second CDI device does not fit"
assert_contains "$(hook_line "$OUT")" "gpufrac-hook: no GPU can take fraction=0.5: GPU 1 is used whole by whole1" \
  "the second device's refusal"
assert_eq "$(ledger_count)" 1 "the first CDI device's booking was released with the failed start"
"$GPUFRAC" ledger release --container whole1 >/dev/null

# 2. NVLink placement on the DGX machine: GPU 0 whole, then two GPUs.
run "$GPUFRAC" info --machine "$MACHINES/dgx-8gpu-mixed.yaml" --topology
assert_eq "$RC" 0 "info --topology: $OUT"
assert_eq "$(sed -n 5p <<<"$OUT" | tr -s ' ')" "GPU3 NODE NODE NV12 X SYS SYS SYS SYS 0" \
  "info --topology: GPU 3's row as nvidia-smi topo -m prints it"
for fe in hook wrapper; do
  e2e_gpu_config dgx-8gpu-mixed.yaml
  "$GPUFRAC" info --refresh >/dev/null
  d=$E2E_TMP/dgx-$fe
  bundle $fe "$d/w0" 'sleep 600' gpufrac.io/fraction=1 gpufrac.io/gpu=0
  create $fe "$d/w0" "$P-dgx-$fe-w0"
  assert_eq "$RC" 0 "$fe: GPU 0 whole: $OUT"
  bundle $fe "$d/pair" 'cat /run/gpufrac/limits; ls /dev' gpufrac.io/gpus=2 gpufrac.io/fraction=0.5
  runit $fe "$d/pair" "$P-dgx-$fe-pair"
  assert_eq "$RC" 0 "$fe: gpus=2 on the DGX: $OUT"
  assert_contains "$OUT" "device $(uuid_of 2) $((81920 / 2 * 1024 * 1024))" "$fe: the pair's first GPU is GPU 2"
  assert_contains "$OUT" "device $(uuid_of 3) $((81920 / 2 * 1024 * 1024))" "$fe: and its second GPU 3"
  assert_eq "$(grep '^nvidia[0-9]$' <<<"$OUT" | tr '\n' ' ')" "nvidia2 nvidia3 " "$fe: the nodes of the NVLink pair only"
  assert_contains "$(grep -F "$P-dgx-$fe-pair" "$E2E_TMP/gpufrac.log")" "on GPUs 2,3 (worst link NV12; binpack)" \
    "$fe: the log says why: the NVLink pair"
  # Two half shares fill the pair; a third finds only GPU 1 with room and is refused.
  for i in 1 2 3; do bundle $fe "$d/h$i" 'sleep 600' gpufrac.io/gpus=2 gpufrac.io/fraction=0.5; done
  for i in 1 2; do
    create $fe "$d/h$i" "$P-dgx-$fe-h$i"
    assert_eq "$RC:$(indices_of "$P-dgx-$fe-h$i")" "0:2,3" "$fe: DGX half share $i on the NVLink pair: $OUT"
  done
  before=$(cat "$LEDGER")
  create $fe "$d/h3" "$P-dgx-$fe-h3"
  assert_eq "$RC" 1 "$fe: a third DGX half share is refused"
  assert_contains "$(line_of $fe "$OUT")" \
    "fraction=0.5 gpus=2 needs 2 GPUs and only 1 can take it: GPU 0 is used whole by $P-dgx-$fe-w0" \
    "$fe: the refusal names each GPU"
  assert_eq "$(cat "$LEDGER")" "$before" "$fe: the refusal booked nothing"
  for c in w0 h1 h2 h3; do runc delete -f "$P-dgx-$fe-$c" >/dev/null 2>&1 || true; done
  assert_eq "$(ledger_count)" 0 "$fe: DGX shares released"
done

# 3. Crashes and concurrency on a100-40gb-x2 through `gpufrac ledger reserve`.
e2e_config a100-40gb-x2.yaml "allocation: {max-shares-per-gpu: 0}"
"$GPUFRAC" info --refresh >/dev/null
"$GPUFRAC" ledger reserve --container kept --annotation gpufrac.io/fraction=0.1 --pid "$SLEEPER" >/dev/null
for point in ledger-after-lock ledger-between-gpus ledger-after-temp-write ledger-before-rename; do
  before=$(jq -c .entries "$LEDGER")
  run env GPUFRAC_FAULT=$point "$GPUFRAC" ledger reserve --container crash --annotation gpufrac.io/gpus=2 \
    --annotation gpufrac.io/fraction=0.2 --pid "$SLEEPER"
  assert_eq "$RC" 137 "SIGKILL at $point"
  assert_eq "$(jq -c .entries "$LEDGER")" "$before" "killed at $point: the ledger holds none of the two-GPU booking"
done
"$GPUFRAC" gc >/dev/null
REQS=("gpufrac.io/gpus=2 gpufrac.io/fraction=0.05" "gpufrac.io/gpus=2 gpufrac.io/memory=1Gi" "gpufrac.io/fraction=0.05"
  "gpufrac.io/gpus=2 gpufrac.io/memory=512Mi" "gpufrac.io/gpus=2 gpufrac.io/gpu=1,0 gpufrac.io/fraction=0.02")
POINTS=(ledger-after-lock ledger-between-gpus ledger-after-temp-write ledger-before-rename)
RANDOM=31
mkdir -p "$E2E_TMP/storm"
for i in $(seq 200); do
  args=()
  for a in ${REQS[RANDOM % 5]}; do args+=(--annotation "$a"); done
  fault=
  if [ $((RANDOM % 4)) = 0 ]; then fault=${POINTS[RANDOM % 4]}; fi
  (
    if [ -n "$fault" ]; then export GPUFRAC_FAULT=$fault; fi
    rc=0
    "$GPUFRAC" ledger reserve --container "s$i" "${args[@]}" --pid "$SLEEPER" >"$E2E_TMP/storm/$i.out" 2>&1 || rc=$?
    echo $rc >"$E2E_TMP/storm/$i.rc"
  ) 2>/dev/null &
done
wait "${!}" 2>/dev/null || true
for _ in $(seq 600); do [ "$(ls "$E2E_TMP/storm"/*.rc | wc -l)" -ge 200 ] && break; sleep 0.1; done
assert_eq "$(ls "$E2E_TMP/storm"/*.rc | wc -l)" 200 "every storm reservation finished"
booked=$(jq '[.entries[].container_id | select(startswith("s"))] | unique | length' "$LEDGER")
assert_eq "$(jq '[.entries | group_by(.container_id)[] | select(.[0].request | test("gpus=2")) | select(length != 2)] | length' "$LEDGER")" 0 \
  "no two-GPU share is half-booked"
assert_eq "$(jq '[.entries | group_by(.container_id)[] | select(.[0].request | test("gpus=2")) | select(.[0].gpu_index == .[1].gpu_index)] | length' "$LEDGER")" 0 \
  "each two-GPU share is on two distinct GPUs"
assert_eq "$(jq '[.entries | group_by(.gpu_index)[] | select((map(.bytes) | add) > 42505076736 or (any(.exclusive) and length > 1))] | length' "$LEDGER")" 0 \
  "no GPU is booked past its memory or beside a whole booking"
killed=0 refused=0
for i in $(seq 200); do
  rc=$(cat "$E2E_TMP/storm/$i.rc")
  n=$(jq --arg c "s$i" '[.entries[] | select(.container_id == $c)] | length' "$LEDGER")
  case $rc in
    0) [ "$n" -ge 1 ] || fail "s$i: reserved (rc 0) but not in the ledger" ;;
    137)
      killed=$((killed + 1))
      assert_eq "$n" 0 "s$i: killed at a fault point, it booked nothing"
      ;;
    1)
      refused=$((refused + 1))
      assert_eq "$n" 0 "s$i: a refusal booked nothing"
      assert_eq "$(wc -l <"$E2E_TMP/storm/$i.out")" 1 "s$i: the refusal is one line: $(cat "$E2E_TMP/storm/$i.out")"
      ;;
    *) fail "s$i: exit $rc: $(cat "$E2E_TMP/storm/$i.out")" ;;
  esac
done
echo "storm: $booked containers booked, $refused refused, $killed killed"
[ "$killed" -gt 0 ] || fail "the storm killed no reservation"
[ "$refused" -gt 0 ] || fail "the storm refused no reservation (the GPUs never filled)"
finish
