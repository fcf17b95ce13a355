#!/bin/bash
# Compute shares at admission on a simulated 2x A100-40GB node, with the real gpufrac, gpufrac-hook,
# gpufrac-runtime and runc (docs/architecture.md "Compute share"):
# 1. 200 starts at once: 192 `gpufrac ledger reserve` processes with random compute requests and 8
#    runc containers booked by gpufrac-hook. Nothing is released meanwhile, so the time booked on a
#    GPU only grows and the final ledger bounds every state the ledger went through: at most 100 %
#    per GPU at any point (a sampler reading the ledger during the storm checks the same). Each
#    booking is what its grant said; each refusal is one line naming the request and the time free,
#    and its container holds no booking.
# 2. Churn: releases and 100 new reservations at once, sampled; the sums stay within 100 %.
# 3. Every path writes the compute line (hook, wrapper, a CDI device through the wrapper), a share
#    that does not fit is refused, and the bad-value matrix through the hook and the wrapper: one
#    line, nothing booked, the container's program never runs.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/containers.sh"
source "$(dirname "$0")/wrapper.sh"
e2e_runc_test compute
# Up to 64 shares a GPU: the GPUs' time, not the share count, is what runs out.
e2e_gpu_config a100-40gb-x2.yaml "allocation: {max-shares-per-gpu: 64}"
"$GPUFRAC" info --refresh >/dev/null 2>&1
GPU0=$(jq -r '.gpus[0].uuid' <<<"$("$GPUFRAC" info --json)")
LEDGER=$E2E_TMP/state/ledger.json
OUTDIR=$E2E_TMP/out
mkdir -p "$OUTDIR"
RANDOM=20261126

# Every booking names a live process, so no reservation reclaims another mid-test.
sleep 3600 &
SLEEPER=$!
e2e_on_exit() {
  kill "$SLEEPER" "${SLEEPER2:-}" "${SAMPLER:-}" 2>/dev/null || true
  runc_cleanup "$P"
}

# The hook's stderr as runc reports it (one Go-quoted string): "stderr: <what the hook wrote>".
hook_stderr() { grep -o 'stderr: .*' <<<"$1" | sed 's/"$//'; }
# jq: the most time booked on one GPU of a ledger, in ppm.
MAX_BOOKED='[.entries | group_by(.gpu_index)[] | map(.compute // 0) | add] | max // 0'
# A sampler that copies each new ledger (replaced whole: a copy is one state) until $1 exists;
# check_samples reads the copies afterwards, so sampling costs a stat and a cp per state.
start_sampler() {
  mkdir -p "$OUTDIR/samples.$2"
  (
    n=0 last=
    while [ ! -e "$1" ]; do
      ino=$(stat -c %i "$LEDGER" 2>/dev/null || true)
      if [ -z "$ino" ] || [ "$ino" = "$last" ]; then continue; fi
      n=$((n + 1))
      cp "$LEDGER" "$OUTDIR/samples.$2/$n.json" 2>/dev/null && last=$ino
    done
  ) &
  SAMPLER=$!
}
stop_sampler() {
  touch "$1"
  wait "$SAMPLER" 2>/dev/null || true
  SAMPLER=
}
check_samples() {
  local n max
  n=$(find "$OUTDIR/samples.$1" -name '*.json' | wc -l)
  max=$(find "$OUTDIR/samples.$1" -name '*.json' -print0 | xargs -0 -r jq "$MAX_BOOKED" | sort -n | tail -n 1)
  [ "$n" -ge 2 ] || fail "only $n states of the ledger sampled during $1"
  [ "${max:-0}" -le 1000000 ] || fail "a sampled state books $max ppm of one GPU during $1"
  echo "$1: $n sampled states, at most $max ppm on one GPU"
}
# A random request of the storm, mostly pinned to GPU 0 (where every start competes): memory and
# compute, compute alone, a default share (the memory share), strict and high; one in twenty free
# to take either GPU (GPU 1 is where the storm's gpufrac-hook containers go).
# Sets REQ (the --annotation arguments), drawing from RANDOM in this shell: seeded, the same every run.
random_request() {
  local r=$((RANDOM % 20)) n=$((1 + RANDOM % 12))
  if [ $r -lt 10 ]; then
    REQ=(gpufrac.io/memory=256Mi "gpufrac.io/compute=$n" gpufrac.io/gpu=0)
  elif [ $r -lt 13 ]; then
    REQ=(gpufrac.io/compute=$((1 + RANDOM % 10)) gpufrac.io/gpu=0)
  elif [ $r -lt 15 ]; then
    REQ=(gpufrac.io/fraction=0.02 gpufrac.io/gpu=0)
  elif [ $r -lt 19 ]; then
    REQ=(gpufrac.io/memory=128Mi "gpufrac.io/compute=$n" gpufrac.io/gpu=0 gpufrac.io/compute-mode=strict
      gpufrac.io/priority=high)
  else
    REQ=(gpufrac.io/memory=128Mi "gpufrac.io/compute=$n" gpufrac.io/policy=spread)
  fi
  local a args=()
  for a in "${REQ[@]}"; do args+=(--annotation "$a"); done
  REQ=("${args[@]}")
}
# reserve <id> <args...>: one reservation in the background, its rc and output in $OUTDIR.
reserve() {
  local id=$1
  shift
  (
    rc=0
    "$GPUFRAC" ledger reserve --json --container "$id" --pid "$SLEEPER" "$@" >"$OUTDIR/$id.out" 2>&1 || rc=$?
    echo "$rc" >"$OUTDIR/$id.rc"
  ) &
  PIDS+=($!)
}
# check_reservations <ids...>: a winner's ledger entry is its grant; a refusal is one capacity line
# and its container holds nothing. Counts time refusals in TIME_REFUSED.
check_reservations() {
  local id rc out
  for id in "$@"; do
    rc=$(cat "$OUTDIR/$id.rc")
    out=$(cat "$OUTDIR/$id.out")
    if [ "$rc" = 0 ]; then
      assert_eq "$(jq -c --arg c "$id" '.entries[] | select(.container_id == $c) | [.gpu_index, (.compute // 0)]' "$LEDGER")" \
        "$(jq -c '[.gpu_index, .compute_ppm]' <<<"$out")" "$id's booking is its grant"
    elif [ "$rc" = 1 ]; then
      assert_eq "$(wc -l <<<"$out")" 1 "$id's refusal is one line: $out"
      [[ $out =~ ^gpufrac:\ no\ GPU\ (has|can\ take|is\ free) ]] || fail "$id's refusal is a capacity line: $out"
      if [[ $out =~ ^gpufrac:\ no\ GPU\ has\ [0-9.]+\ %\ of\ its\ time\ free\ for\ [a-z]+=[0-9.]+.*:\ GPU\ [01]\ [0-9.]+\ % ]]; then
        TIME_REFUSED=$((TIME_REFUSED + 1))
      fi
      assert_eq "$(ledger_count "(.container_id == \"$id\")")" 0 "$id's refusal booked nothing"
    else
      fail "$id: exit $rc: $out"
    fi
  done
}

# 1. The storm: 192 reservations and 8 containers through gpufrac-hook, all at once.
for j in 1 2 3 4 5 6 7 8; do
  make_bundle "$E2E_TMP/h$j" 'sleep 600' gpufrac.io/memory=256Mi gpufrac.io/compute=$j
done
start_sampler "$OUTDIR/stop.storm" storm
PIDS=()
STORM=()
for i in $(seq 1 192); do
  random_request
  reserve "r$i" "${REQ[@]}"
  STORM+=("r$i")
  if [ $((i % 24)) = 1 ]; then
    j=$((i / 24 + 1))
    (
      rc=0
      runc run -d --bundle "$E2E_TMP/h$j" "$P-h$j" >"$OUTDIR/h$j.out" 2>&1 || rc=$?
      echo "$rc" >"$OUTDIR/h$j.rc"
    ) &
    PIDS+=($!)
  fi
done
wait "${PIDS[@]}"
stop_sampler "$OUTDIR/stop.storm"
check_samples storm
BOOKED=$(jq -c '[.entries | group_by(.gpu_index)[] | map(.compute // 0) | add]' "$LEDGER")
echo "after the storm: $(jq '.entries | length' "$LEDGER") bookings, time booked per GPU $BOOKED"
for sum in $(jq '.[]' <<<"$BOOKED"); do
  [ "$sum" -le 1000000 ] || fail "a GPU has $sum ppm of its time booked"
done
[ "$(jq '.[0]' <<<"$BOOKED")" -ge 900000 ] || fail "the storm left GPU 0 with time to spare: it did not press it"
assert_eq "$(jq '.version' "$LEDGER")" 4 "compute shares make a version 4 ledger"
TIME_REFUSED=0
check_reservations "${STORM[@]}"
[ "$TIME_REFUSED" -ge 10 ] || fail "only $TIME_REFUSED refusals for the GPUs' time"
HOOKED=0
for j in 1 2 3 4 5 6 7 8; do
  rc=$(cat "$OUTDIR/h$j.rc")
  booked=$(ledger_count "(.container_id == \"$P-h$j\")")
  if [ "$rc" = 0 ]; then
    HOOKED=$((HOOKED + 1))
    assert_eq "$booked" 1 "container h$j is booked"
    assert_eq "$(jq -r --arg c "$P-h$j" '.entries[] | select(.container_id == $c) | "\(.compute) \(.request)"' "$LEDGER")" \
      "$((10000 * j)) memory=256Mi compute=$j" "h$j books its compute"
    uuid=$(jq -r --arg c "$P-h$j" '.entries[] | select(.container_id == $c) | .device_uuid' "$LEDGER")
    assert_contains "$(cat "$E2E_TMP/state/containers/$P-h$j@"*/limits)" "compute $uuid $((10000 * j)) fair normal" \
      "h$j's limit file has its compute line"
  else
    assert_eq "$booked" 0 "refused container h$j holds nothing"
    [[ $(hook_stderr "$(cat "$OUTDIR/h$j.out")") =~ ^stderr:\ gpufrac-hook:\ no\ GPU\ [^\\]*\\n$ ]] ||
      fail "h$j's refusal is one capacity line: $(cat "$OUTDIR/h$j.out")"
  fi
done
echo "the storm: $(grep -lx 0 "$OUTDIR"/r*.rc | wc -l) reservations and $HOOKED containers booked, $TIME_REFUSED refused for time"
[ "$HOOKED" -ge 1 ] || fail "no container of the storm was booked through gpufrac-hook"
run "$GPUFRAC" status --json
assert_eq "$(jq -c '[.devices[] | [.compute_booked_ppm, .compute_free_ppm]]' <<<"$OUT")" \
  "$(jq -c '[.[] | [., 1000000 - .]]' <<<"$BOOKED")" "status shows the time booked and free per GPU"

# 2. Churn: half the winners release while 100 new reservations run.
start_sampler "$OUTDIR/stop.churn" churn
PIDS=()
CHURN=()
RELEASED=()
for i in $(seq 1 100); do
  random_request
  reserve "n$i" "${REQ[@]}"
  CHURN+=("n$i")
  if [ $((i % 2)) = 0 ] && [ "$(cat "$OUTDIR/r$i.rc")" = 0 ]; then
    ("$GPUFRAC" ledger release --container "r$i" >/dev/null 2>&1 || echo "r$i" >>"$OUTDIR/release.failed") &
    PIDS+=($!)
    RELEASED+=("r$i")
  fi
done
wait "${PIDS[@]}"
stop_sampler "$OUTDIR/stop.churn"
check_samples churn
for sum in $(jq '[.entries | group_by(.gpu_index)[] | map(.compute // 0) | add] | .[]' "$LEDGER"); do
  [ "$sum" -le 1000000 ] || fail "after the churn a GPU has $sum ppm of its time booked"
done
[ ! -e "$OUTDIR/release.failed" ] || fail "releases failed: $(cat "$OUTDIR/release.failed")"
for id in "${RELEASED[@]}"; do assert_eq "$(ledger_count "(.container_id == \"$id\")")" 0 "$id released"; done
check_reservations "${CHURN[@]}"

# The storm's containers stop (poststop releases them); the reservations' process ends (gc).
for j in 1 2 3 4 5 6 7 8; do runc delete -f "$P-h$j" >/dev/null 2>&1 || true; done
kill "$SLEEPER"
wait "$SLEEPER" 2>/dev/null || true
"$GPUFRAC" gc >/dev/null
assert_eq "$(ledger_count)" 0 "every booking released"

# 3. A node with 20 % of GPU 0's time and 10 % of GPU 1's left.
sleep 3600 &
SLEEPER2=$!
"$GPUFRAC" ledger reserve --container full0 --pid "$SLEEPER2" --annotation gpufrac.io/memory=1Gi \
  --annotation gpufrac.io/compute=80 --annotation gpufrac.io/gpu=0 >/dev/null
"$GPUFRAC" ledger reserve --container full1 --pid "$SLEEPER2" --annotation gpufrac.io/memory=1Gi \
  --annotation gpufrac.io/compute=90 --annotation gpufrac.io/gpu=1 >/dev/null
with_env() {
  jq --arg kv "$2" '.process.env += [$kv]' "$1/config.json" >"$1/config.json.new" && mv "$1/config.json.new" "$1/config.json"
}

# Every path writes the compute line the shim reads.
make_bundle "$E2E_TMP/fits" 'cat /run/gpufrac/limits' gpufrac.io/memory=1Gi gpufrac.io/compute=15
run runc run --bundle "$E2E_TMP/fits" "$P-fits"
assert_eq "$RC" 0 "compute=15 fits GPU 0 through the hook: $OUT"
assert_contains "$OUT" "compute $GPU0 150000 fair normal" "the hook's limit file"
make_plain_bundle "$E2E_TMP/wfits" 'cat /run/gpufrac/limits'
with_env "$E2E_TMP/wfits" GPUFRAC_MEMORY=1Gi
with_env "$E2E_TMP/wfits" GPUFRAC_COMPUTE=5
with_env "$E2E_TMP/wfits" GPUFRAC_COMPUTE_MODE=strict
with_env "$E2E_TMP/wfits" GPUFRAC_PRIORITY=high
run "$WRAPPER" run --bundle "$E2E_TMP/wfits" "$P-wfits"
assert_eq "$RC" 0 "compute=5 through the wrapper, from the environment: $OUT"
assert_contains "$OUT" "compute $GPU0 50000 strict high" "the wrapper's limit file"
make_plain_bundle "$E2E_TMP/cdi" 'cat /run/gpufrac/limits' cdi.k8s.io/gpufrac=gpufrac.io/gpu=0-0.125
run "$WRAPPER" run --bundle "$E2E_TMP/cdi" "$P-cdi"
assert_eq "$RC" 0 "CDI share 0-0.125: $OUT"
assert_contains "$OUT" "compute $GPU0 125000 fair normal" "a CDI share books the time of its fraction"
assert_eq "$(ledger_count)" 2 "the three containers ran and released"

# bad <name> <message> <annotation k=v | ENV:VAR=value>...: refused by the hook and by the wrapper
# with one line, nothing booked, the program never run, runc holding no container. FRONTS may
# narrow it to the wrapper (cdi.k8s.io annotations are the wrapper's); the wrapper names the config
# after a refusal about the node (WRAPPER_TAIL).
bad() {
  local name=$1 msg=$2 front b id a
  shift 2
  for front in ${FRONTS:-hook wrapper}; do
    b=$E2E_TMP/bad-$front-$name
    id=$P-$front-$name
    local ann=() env=()
    for a in "$@"; do case $a in ENV:*) env+=("${a#ENV:}") ;; *) ann+=("$a") ;; esac; done
    if [ "$front" = hook ]; then make_bundle "$b" 'echo ran >/ran' "${ann[@]}"; else make_plain_bundle "$b" 'echo ran >/ran' "${ann[@]}"; fi
    for a in "${env[@]}"; do with_env "$b" "$a"; done
    if [ "$front" = hook ]; then
      run runc run --bundle "$b" "$id"
      assert_eq "$RC" 1 "$name refused by the hook"
      # runc quotes what the hook wrote: one line, the message, a newline.
      assert_eq "$(hook_stderr "$OUT")" "stderr: gpufrac-hook: ${msg//\"/\\\"}\\n" "$name: the hook wrote one line"
    else
      run "$WRAPPER" run --bundle "$b" "$id"
      assert_eq "$RC:$OUT" "1:gpufrac: $msg${WRAPPER_TAIL:-}" "$name refused by the wrapper in one line"
    fi
    [ ! -e "$b/rootfs/ran" ] || fail "$name: the container's program ran ($front)"
    if runc state "$id" >/dev/null 2>&1; then fail "$name: runc kept the container ($front)"; fi
    assert_eq "$(ledger_count "(.container_id == \"$id\")")" 0 "$name: nothing booked ($front)"
  done
}
PCT="use an integer percent of the GPU's time from 1 to 100, e.g. 30"
bad zero "gpufrac.io/compute: \"0\" is out of range; $PCT" gpufrac.io/compute=0
bad over "gpufrac.io/compute: \"101\" is out of range; $PCT" gpufrac.io/compute=101
bad letters "gpufrac.io/compute: \"abc\" is not a percent; $PCT" gpufrac.io/compute=abc
bad decimal "gpufrac.io/compute: \"30.5\" is not a percent; $PCT" gpufrac.io/memory=1Gi gpufrac.io/compute=30.5
bad sign "gpufrac.io/compute: \"+30\" is not a percent; $PCT" gpufrac.io/compute=+30
bad two-sizes "gpufrac.io/fraction and gpufrac.io/memory: both set; set only one of gpufrac.io/fraction, gpufrac.io/memory or gpufrac.io/mig-profile (aliases count as these)" \
  gpufrac.io/fraction=0.25 gpufrac.io/memory=4Gi gpufrac.io/compute=30
bad mode-alone "gpufrac.io/compute-mode: is set without a size; add gpufrac.io/fraction, gpufrac.io/memory, gpufrac.io/mig-profile (aliases count as these), gpufrac.io/compute or gpufrac.io/gpus" \
  gpufrac.io/compute-mode=strict
bad priority-alone "gpufrac.io/priority: is set without a size; add gpufrac.io/fraction, gpufrac.io/memory, gpufrac.io/mig-profile (aliases count as these), gpufrac.io/compute or gpufrac.io/gpus" \
  gpufrac.io/priority=high
bad mig "gpufrac.io/compute: does not apply to gpufrac.io/mig-profile (a MIG instance owns its share of the GPU's time); use it with gpufrac.io/fraction or gpufrac.io/memory, or on its own" \
  gpufrac.io/mig-profile=1g.10gb gpufrac.io/compute=30
bad mode "gpufrac.io/compute-mode: \"lax\" is not a compute mode; use fair, strict or sm" \
  gpufrac.io/compute=10 gpufrac.io/compute-mode=lax
bad priority "gpufrac.io/priority: \"urgent\" is not a priority; use normal or high" \
  gpufrac.io/compute=10 gpufrac.io/priority=urgent
bad both "gpufrac.io/fraction and GPUFRAC_COMPUTE: a request both by annotation and by environment; use one of them" \
  gpufrac.io/fraction=0.25 ENV:GPUFRAC_COMPUTE=30
bad env-zero "GPUFRAC_COMPUTE: \"0\" is out of range; $PCT" ENV:GPUFRAC_COMPUTE=0
# No room: the capacity line with what each GPU has free; a CDI share's default time too.
TAIL=" (config: $GPUFRAC_CONFIG)"
WRAPPER_TAIL=$TAIL bad no-time "no GPU has 30 % of its time free for compute=30: GPU 0 20 %, GPU 1 10 %" \
  gpufrac.io/memory=1Gi gpufrac.io/compute=30
WRAPPER_TAIL=$TAIL FRONTS=wrapper bad cdi-no-time "no GPU has 12.5 % of its time free for fraction=0.125 (its default compute share): GPU 1 10 % (pinned by gpufrac.io/gpu)" \
  cdi.k8s.io/gpufrac=gpufrac.io/gpu=1-0.125
assert_eq "$(ledger_count)" 2 "the refusals booked nothing"
finish
