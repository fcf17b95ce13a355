#!/bin/bash
# MPS clients on the fake libcuda.so.1's simulated GPU (tests/fakes/cuda/README.md "MPS clients"),
# made by the test-only gpufracFakeMpsClient (compute_load --mps PERCENT), without the shim. Every
# client runs an asynchronous loop of 500 us kernels (2000 per second at full speed), so its
# throughput over a window is its kernels' speed:
#   1. two clients at 30 and 70 % with kernels as wide as the GPU run at once, each at its cap:
#      600 and 1400 kernels/s, 30 and 70 % of the GPU's SM-time;
#   2. with kernels of 20 % of the SMs both run at full speed (2000/s each, 20 % of the SM-time
#      each), twice what the same pair gets time-sliced (1000/s each);
#   3. a kernel of width w at cap c runs at min(1, c/w): 30 % with full-width kernels 600/s, with
#      20 %-wide ones 2000/s; clients that need more than all SMs share them in proportion: two at
#      100 % with full-width kernels 1000/s each, with 60 %-wide ones 2000 x 100/120 each;
#   4. the MPS server's context is time-sliced against a process that is no MPS client: half the
#      device each, and the MPS clients' speeds halve.
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/compute_lib.sh"
e2e_tmp

# rate_of TAG: kernels per second of TAG in $OUT (fake_gpu_tool done).
rate_of() { sed -n "s/^$1 kernels=[0-9]* per_s=\([0-9.]*\)$/\1/p" <<<"$OUT"; }
# assert_rate TAG PER_S WHAT: within 5 %.
assert_rate() { assert_near "$(rate_of "$1")" "$2" "$(awk -v r="$2" 'BEGIN{print r * 0.05}')" "$3: kernels/s of $1"; }
# pair NAME:ARGS NAME:ARGS...: starts each compute_load ARGS async:5 as client NAME on a fresh
# simulated GPU; after 1.5 s, the throughput over 2 s into $E2E_TMP/done and the achieved time
# over the same 2 s into $E2E_TMP/window (with the MPS server's context's, last).
pair() {
  local spec names=()
  sim_gpu
  for spec in "$@"; do
    names+=("${spec%%:*}")
    # shellcheck disable=SC2086 # ARGS are words
    GPUFRAC_FAKE_CUDA_CLIENT=${spec%%:*} "$LOAD" ${spec#*:} async:5 >"$E2E_TMP/${spec%%:*}.out" &
  done
  sleep 1.5
  "$GPUTOOL" done "$SIMGPU" 2 "${names[@]}" >"$E2E_TMP/done" &
  "$GPUTOOL" window "$SIMGPU" 2 "${names[@]}" "[mps-server]" >"$E2E_TMP/window"
  wait
  for spec in "$@"; do
    assert_contains "$(cat "$E2E_TMP/${spec%%:*}.out")" "phase async launches=" "${spec%%:*} ran"
  done
  OUT=$(cat "$E2E_TMP/done")
  echo "$*: $(tr '\n' ' ' <"$E2E_TMP/done")| $(tr '\n' ' ' <"$E2E_TMP/window")"
}

# 1. 30/70, full-width kernels.
pair "a:--mps 30" "b:--mps 70"
assert_rate a 600 "30/70"
assert_rate b 1400 "30/70"
OUT=$(cat "$E2E_TMP/window")
assert_near "$(busy_of a)" 30 2 "30/70: SM-time of a"
assert_near "$(busy_of b)" 70 2 "30/70: SM-time of b"

# 2. Narrow kernels: both at full speed at once, twice the time-sliced pair.
pair "a:--mps 30 -k sleep_500us_w20" "b:--mps 70 -k sleep_500us_w20"
assert_rate a 2000 "narrow kernels"
assert_rate b 2000 "narrow kernels"
OUT=$(cat "$E2E_TMP/window")
assert_near "$(busy_of a)" 20 2 "narrow kernels: SM-time of a"
assert_near "$(busy_of b)" 20 2 "narrow kernels: SM-time of b"
pair "a:-k sleep_500us_w20" "b:-k sleep_500us_w20"
assert_rate a 1000 "time-sliced, narrow kernels"
assert_rate b 1000 "time-sliced, narrow kernels"

# 3. Caps and widths.
pair "a:--mps 30"
assert_rate a 600 "alone at 30 %, full-width kernels"
pair "a:--mps 30 -k sleep_500us_w20"
assert_rate a 2000 "alone at 30 %, kernels of 20 %"
pair "a:--mps 100" "b:--mps 100"
assert_rate a 1000 "two at 100 %, full-width kernels"
assert_rate b 1000 "two at 100 %, full-width kernels"
pair "a:--mps 100 -k sleep_500us_w60" "b:--mps 100 -k sleep_500us_w60"
assert_rate a 1666.7 "two at 100 %, kernels of 60 %"
assert_rate b 1666.7 "two at 100 %, kernels of 60 %"

# 4. MPS against a time-sliced process.
pair "a:--mps 30" "b:--mps 70" "plain:"
assert_rate a 300 "beside a time-sliced process"
assert_rate b 700 "beside a time-sliced process"
assert_rate plain 1000 "the time-sliced process"
OUT=$(cat "$E2E_TMP/window")
assert_near "$(busy_of plain)" 50 2 "the time-sliced process gets half the device"
server=$(grep -F "[mps-server] " <<<"$OUT" | sed -n 's/.* busy=\([0-9.]*\)$/\1/p')
assert_near "$server" 50 2 "the MPS server's context gets the other half"
finish
