#!/bin/bash
# The shim's launch gate over the simulated GPU, without containers (the files as arbiter_tool
# makes them, found through GPUFRAC_LIMITS_FILE):
#   1. every launch path is gated: a 10 % process launching through it beside a 90 % asynchronous
#      loop gets 10 +- 3 % (ungated it would take about half): cuLaunchKernel, cuLaunchKernelEx,
#      cuLaunchCooperativeKernel(MultiDevice), the _ptsz form, cuGraphLaunch, cuGetProcAddress
#      (also when the driver hands out other addresses than its symbols) and dlsym;
#   2. launches on a capturing stream are not gated (the process never takes the lease), the
#      graph's launch is; a capture left open on a scratch stream leaves the other streams gated;
#   3. an unusable arbiter (missing, no arbiter line, a slot that is not there, freed while
#      running) leaves launches working and unarbitrated, said in one line; no compute line: inert;
#   4. garbage written into the lease file while two processes run upsets nothing: both finish;
#      the lease file truncated under them: no SIGBUS, each says so once and finishes unarbitrated;
#   5. a full state directory refuses the arbiter in one line (root: a tiny tmpfs);
#   and alone costs nothing: the driver calls a launch-bound loop makes, counted by the fake driver,
#   for a whole GPU (none of gpufrac's), a share alone (an event per 64 launches at most) and gated.
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/compute_lib.sh"
e2e_tmp
sim_gpu
S=$E2E_TMP/st
GB=1073741824

# gated MODE GPU DEV: 10 % through MODE beside 90 % async on GPU (device DEV), share of the first.
gated() {
  local mode=$1 gpu=$2 dev=$3
  "$ATOOL" share "$S" "m-$mode" "$gpu=$GB:100000:fair:normal"
  "$ATOOL" share "$S" "b-$mode" "$gpu=$GB:900000:fair:normal"
  GPUFRAC_LIMITS_FILE=$S/m-$mode.limits GPUFRAC_FAKE_CUDA_CLIENT=m-$mode LD_PRELOAD=$SHIM \
    "$LOAD" -d "$dev" "$mode:3" >"$E2E_TMP/m-$mode.out" 2>&1 &
  GPUFRAC_LIMITS_FILE=$S/b-$mode.limits GPUFRAC_FAKE_CUDA_CLIENT=b-$mode LD_PRELOAD=$SHIM \
    "$LOAD" -d "$dev" async:3 >/dev/null 2>&1 &
  sleep 0.7
  "$GPUTOOL" window "$SIMGPU" 2 "m-$mode" "b-$mode" >"$E2E_TMP/w-$mode"
}

mkdir -p "$S"
modes=(async ex coop multi ptsz graph procaddr dlsym)
for ((i = 0; i < ${#modes[@]}; i += 2)); do
  gated "${modes[i]}" "$GPU0" 0
  gated "${modes[i + 1]}" "$GPU1" 1
  wait
done
for mode in "${modes[@]}"; do
  OUT=$(cat "$E2E_TMP/w-$mode")
  echo "$mode: $(tr '\n' ' ' <<<"$OUT")"
  assert_near "$(share_of "m-$mode")" 10 3 "$mode is gated"
  assert_contains "$(cat "$E2E_TMP/m-$mode.out")" "phase $mode launches=" "$mode ran"
  assert_not_contains "$(cat "$E2E_TMP/m-$mode.out")" "gpufrac:" "$mode: nothing to say"
done
GPUFRAC_FAKE_CUDA_DISTINCT_PROCS=1 gated procaddr "$GPU0" 0
wait
OUT=$(cat "$E2E_TMP/w-procaddr")
assert_near "$(share_of m-procaddr)" 10 3 "cuGetProcAddress when the driver's table holds other addresses"

# 2. Capture: a process that only captures never takes the lease; its graph's launch does.
sim_gpu
"$ATOOL" share "$S" cap "$GPU0=$GB:100000:fair:normal"
"$ATOOL" share "$S" busy "$GPU0=$GB:900000:fair:normal"
GPUFRAC_LIMITS_FILE=$S/busy.limits LD_PRELOAD=$SHIM "$LOAD" async:3 >/dev/null 2>&1 &
sleep 0.5
GPUFRAC_LIMITS_FILE=$S/cap.limits LD_PRELOAD=$SHIM run "$LOAD" capture
assert_contains "$OUT" "capture status=1 after=0 sync=900 rc=0" "capture under the shim"
assert_contains "$("$ATOOL" show "$S/compute/$GPU0")" "key=cap weight=100000 achieved_ppm=0 leases=0 " \
  "captured launches are not gated: no lease taken"
GPUFRAC_LIMITS_FILE=$S/cap.limits LD_PRELOAD=$SHIM run "$LOAD" graph:0.5
assert_not_contains "$("$ATOOL" show "$S/compute/$GPU0")" "key=cap weight=100000 achieved_ppm=0 leases=0 " \
  "the graph's launch is gated: a lease taken"
wait

# A capture left open on a scratch stream: the process's other streams stay gated (10 +- 3 % beside a
# 90 % loop; ungated it would take about half).
sim_gpu
"$ATOOL" share "$S" capo "$GPU0=$GB:100000:fair:normal"
"$ATOOL" share "$S" capbusy "$GPU0=$GB:900000:fair:normal"
GPUFRAC_LIMITS_FILE=$S/capbusy.limits GPUFRAC_FAKE_CUDA_CLIENT=capbusy LD_PRELOAD=$SHIM "$LOAD" async:3 >/dev/null 2>&1 &
GPUFRAC_LIMITS_FILE=$S/capo.limits GPUFRAC_FAKE_CUDA_CLIENT=capo LD_PRELOAD=$SHIM "$LOAD" capopen:3 >"$E2E_TMP/capo.out" 2>&1 &
sleep 0.7
window 2 capo capbusy
wait
echo "capture open on a scratch stream: $(tr '\n' ' ' <<<"$OUT")"
assert_near "$(share_of capo)" 10 3 "a capture open on one stream leaves the others gated"
assert_contains "$(cat "$E2E_TMP/capo.out")" "phase capopen launches=" "capopen ran"
assert_not_contains "$(cat "$E2E_TMP/capo.out")" "gpufrac:" "capopen: nothing to say"

# Alone costs nothing: driver calls counted by the fake driver over a launch-bound loop (kernels of no
# duration). A whole GPU: none but the launches. A share alone on its GPU (solo): about one event
# record and one query per 128 launches (at most 1 per 64 here). The same share beside an idle
# high-priority share (gated): one event record per launch.
sim_gpu
"$ATOOL" share "$S" whole "$GPU0=$GB:1000000:fair:normal"
GPUFRAC_LIMITS_FILE=$S/whole.limits LD_PRELOAD=$SHIM run "$LOAD" -k nop async:1
calls=$(grep '^calls async' <<<"$OUT")
n=$(sed -n 's/^phase async launches=\([0-9]*\) rc=0$/\1/p' <<<"$OUT")
assert_eq "${calls% cpu_us=*}" "calls async launch=$n record=0 query=0 sync=1" "a whole GPU: no driver call of gpufrac's"
assert_eq "$(grep -c '^arbiter' "$S/whole.limits" || true)" 0 "a whole GPU: no arbiter slot"
"$ATOOL" share "$S" solo "$GPU1=$GB:300000:fair:normal"
GPUFRAC_LIMITS_FILE=$S/solo.limits LD_PRELOAD=$SHIM run "$LOAD" -d 1 -k nop async:1
n=$(sed -n 's/^phase async launches=\([0-9]*\) rc=0$/\1/p' <<<"$OUT")
for k in record query; do
  got=$(sed -n "s/^calls async .* $k=\([0-9]*\).*/\1/p" <<<"$OUT")
  echo "solo: $n launches, $got ${k}s"
  assert_le "$((got * 64))" "$n" "a share alone: ${k}s per 64 launches"
done
"$ATOOL" share "$S" idle-high "$GPU1=$GB:100000:fair:high"
GPUFRAC_LIMITS_FILE=$S/solo.limits LD_PRELOAD=$SHIM run "$LOAD" -d 1 -k nop async:1
n=$(sed -n 's/^phase async launches=\([0-9]*\) rc=0$/\1/p' <<<"$OUT")
assert_contains "$OUT" "calls async launch=$n record=$n " "gated beside a high-priority share: an event per launch"

# 3. Unusable arbiters: launches work, unarbitrated, and the shim says why, once.
"$ATOOL" share "$S" lost "$GPU1=$GB:100000:fair:normal"
mv "$S/compute/$GPU1" "$S/compute/gone"
GPUFRAC_LIMITS_FILE=$S/lost.limits LD_PRELOAD=$SHIM run "$LOAD" -d 1 async:0.2 async:0.2
assert_eq "$RC" 0 "launches work without the arbiter"
assert_eq "$(grep -c '^gpufrac:' <<<"$OUT")" 1 "one line"
assert_contains "$OUT" "gpufrac: compute arbiter $S/compute/$GPU1: cannot open read-write: No such file or directory; launches on $GPU1 are not arbitrated" \
  "missing arbiter"
mv "$S/compute/gone" "$S/compute/$GPU1"
grep -v '^arbiter' "$S/lost.limits" >"$S/noline.limits"
GPUFRAC_LIMITS_FILE=$S/noline.limits LD_PRELOAD=$SHIM run "$LOAD" -d 1 async:0.2
assert_contains "$OUT" "gpufrac: limit file $S/noline.limits: compute share on $GPU1 without an arbiter line; launches on $GPU1 are not arbitrated" \
  "no arbiter line"
"$ATOOL" release "$S/compute/$GPU1" lost >/dev/null
GPUFRAC_LIMITS_FILE=$S/lost.limits LD_PRELOAD=$SHIM run "$LOAD" -d 1 async:0.2
token=$(sed -n "s/^arbiter $GPU1 //p" "$S/lost.limits")
assert_contains "$OUT" "gpufrac: compute arbiter $S/compute/$GPU1: no slot holds token $token; accepted: the slot the host set up for this container; launches on $GPU1 are not arbitrated" \
  "slot not there"
"$ATOOL" share "$S" freed "$GPU1=$GB:100000:fair:normal"
GPUFRAC_LIMITS_FILE=$S/freed.limits LD_PRELOAD=$SHIM "$LOAD" -d 1 async:0.3 wait:0.2 async:0.3 >"$E2E_TMP/freed.out" 2>&1 &
sleep 0.2
"$ATOOL" release "$S/compute/$GPU1" freed >/dev/null
wait $! || fail "a process whose slot was freed keeps running: $(cat "$E2E_TMP/freed.out")"
assert_contains "$(cat "$E2E_TMP/freed.out")" "gpufrac: compute arbiter of $GPU1: this container's slot is gone; launches on $GPU1 are not arbitrated" \
  "slot freed while running"
"$ATOOL" share "$S" nocompute "$GPU1=$GB:0:fair:normal"
GPUFRAC_LIMITS_FILE=$S/nocompute.limits LD_PRELOAD=$SHIM run "$LOAD" -d 1 async:0.2
assert_eq "$RC" 0 "no compute line"
assert_not_contains "$OUT" "gpufrac:" "no compute line: inert, silent"

# 4. Garbage in the arbiter while two processes use it.
sim_gpu
"$ATOOL" share "$S" g1 "$GPU0=$GB:300000:fair:normal"
"$ATOOL" share "$S" g2 "$GPU0=$GB:700000:strict:high"
GPUFRAC_LIMITS_FILE=$S/g1.limits LD_PRELOAD=$SHIM "$LOAD" async:4 >"$E2E_TMP/g1.out" 2>&1 &
p1=$!
GPUFRAC_LIMITS_FILE=$S/g2.limits LD_PRELOAD=$SHIM "$LOAD" sync:4 >"$E2E_TMP/g2.out" 2>&1 &
p2=$!
A=$S/compute/$GPU0
for i in $(seq 30); do
  for f in lease:$RANDOM$RANDOM$RANDOM preempt:$((RANDOM % 600)) vclock:$RANDOM$RANDOM$RANDOM busy:$RANDOM \
    busy_until:$RANDOM$RANDOM$RANDOM slot.1.vtime:$RANDOM$RANDOM slot.0.seen:$RANDOM slot.7.seen:$RANDOM; do
    "$ATOOL" set "$A" "${f%%:*}" "${f#*:}"
  done
  sleep 0.1
done
timeout 30 tail --pid=$p1 -f /dev/null && timeout 30 tail --pid=$p2 -f /dev/null || fail "a process hung on a garbage arbiter"
wait $p1 || fail "g1 failed: $(cat "$E2E_TMP/g1.out")"
wait $p2 || fail "g2 failed: $(cat "$E2E_TMP/g2.out")"
assert_contains "$(cat "$E2E_TMP/g1.out")" "phase async launches=" "g1 finished"
assert_contains "$(cat "$E2E_TMP/g2.out")" "phase sync launches=" "g2 finished"

# A lease file cut short under two running processes (a tenant can truncate it: its bind is
# read-write): no SIGBUS kills them; each says so once and runs unarbitrated to its end.
sim_gpu
"$ATOOL" share "$S" t1 "$GPU1=$GB:300000:fair:normal"
"$ATOOL" share "$S" t2 "$GPU1=$GB:700000:fair:normal"
GPUFRAC_LIMITS_FILE=$S/t1.limits LD_PRELOAD=$SHIM "$LOAD" -d 1 async:2 >"$E2E_TMP/t1.out" 2>&1 &
p1=$!
GPUFRAC_LIMITS_FILE=$S/t2.limits LD_PRELOAD=$SHIM "$LOAD" -d 1 sync:2 >"$E2E_TMP/t2.out" 2>&1 &
p2=$!
sleep 0.7
truncate -s 0 "$S/compute/$GPU1"
wait $p1 || fail "t1 survives its lease file cut short: $(cat "$E2E_TMP/t1.out")"
wait $p2 || fail "t2 survives its lease file cut short: $(cat "$E2E_TMP/t2.out")"
for t in t1 t2; do
  assert_eq "$(grep -c '^gpufrac:' "$E2E_TMP/$t.out")" 1 "$t: one line"
  assert_contains "$(cat "$E2E_TMP/$t.out")" "gpufrac: compute arbiter of $GPU1: its lease file was cut short; launches on $GPU1 are not arbitrated" \
    "$t says why"
done

# 5. A full state directory: the arbiter is refused in one line, never a file with a hole.
if [ "$(id -u)" = 0 ] && mkdir -p "$E2E_TMP/tiny" && mount -t tmpfs -o size=52k tmpfs "$E2E_TMP/tiny" 2>/dev/null; then
  e2e_on_exit() { umount "$E2E_TMP/tiny" 2>/dev/null || true; }
  run "$ATOOL" share "$E2E_TMP/tiny" full "$GPU0=$GB:100000:fair:normal"
  assert_eq "$RC" 1 "full tmpfs refused"
  assert_contains "$OUT" "gpufrac: compute arbiter $E2E_TMP/tiny/compute/$GPU0: cannot allocate 256 bytes: No space left on device" \
    "one line naming the arbiter's lease file (its slots file fitted)"
  assert_eq "$(ls -A "$E2E_TMP/tiny/compute")" "" "nothing left behind"
  umount "$E2E_TMP/tiny"
else
  echo "skipped the full-tmpfs check (needs root and mount)"
fi
finish
