# Helpers for the shim's end-to-end tests (sourced after ../lib.sh).
# The shim comes from $GPUFRAC_SHIM_DIR when set (installed), else <build>/bin.
SHIM=${GPUFRAC_SHIM_DIR:-$GPUFRAC_BUILD_BIN_DIR}/libgpufrac-limits.so
SHIM_BIN=$GPUFRAC_BUILD_DIR/tests/shim
PROBE=$SHIM_BIN/shim_probe
TOOL=$SHIM_BIN/shim_region_tool
GPU0=GPU-894e9a6d-f600-b098-3d59-138988473c2c
GPU1=GPU-5b0a7d1e-1c2f-4a3b-9c8d-7e6f5a4b3c2d
MIG0=MIG-0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0
MI=1048576
GI=1073741824
export LD_LIBRARY_PATH=$GPUFRAC_FAKES_DIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
# Two fake GPUs of 40 GiB and a MIG instance of 10 GiB (device 2).
export GPUFRAC_FAKE_CUDA_DEVICES="$GPU0=40Gi,$GPU1=40Gi,$MIG0=10Gi"
[ -f "$SHIM" ] || { echo "FAIL: $SHIM is not built (ninja shim_tests)"; exit 1; }
[ -x "$PROBE" ] && [ -x "$TOOL" ] || { echo "FAIL: shim test programs are not built (ninja shim_tests)"; exit 1; }

# shim_limits NAME UUID=BYTES...: writes $E2E_TMP/NAME.limits and the zeroed region NAME.usage,
# and points GPUFRAC_LIMITS_FILE at it.
shim_limits() {
  local name=$1
  shift
  "$TOOL" create "$E2E_TMP/$name.limits" "$E2E_TMP/$name.usage" "test-$name" "$@"
  export GPUFRAC_LIMITS_FILE=$E2E_TMP/$name.limits
  REGION=$E2E_TMP/$name.usage
}

# Runs a command under the shim, capturing output in $OUT and status in $RC (lib.sh's run).
shim_run() { run env LD_PRELOAD="$SHIM" "$@"; }

# The value of key=value in $OUT's line starting with prefix: field "fill cuMemAlloc_v2" ok
field() { printf '%s\n' "$OUT" | grep -m1 "^$1" | tr ' ' '\n' | sed -n "s/^$2=//p"; }

# holder_start ARGS...: runs the probe with ARGS... under the shim in the background, then "hold",
# and returns once it holds (at most 30 s). HOLD_PID is its pid; holder_stop lets it exit.
holder_start() {
  rm -f "$E2E_TMP/hold.in"
  mkfifo "$E2E_TMP/hold.in"
  env LD_PRELOAD="$SHIM" "$PROBE" "$@" hold <"$E2E_TMP/hold.in" >"$E2E_TMP/hold.out" 2>&1 &
  HOLD_PID=$!
  exec {HOLD_FD}>"$E2E_TMP/hold.in"
  for _ in $(seq 300); do
    grep -q '^holding$' "$E2E_TMP/hold.out" && return 0
    sleep 0.1
  done
  fail "holder did not start: $(cat "$E2E_TMP/hold.out")"
  exit 1
}
holder_stop() {
  exec {HOLD_FD}>&-
  wait "$HOLD_PID" 2>/dev/null || true
}

# The fake NVML usable by an uninstrumented program: built, and not with sanitizers (an ASan
# library cannot be loaded into a program without the ASan runtime).
fake_nvml_usable() {
  [ -f "$GPUFRAC_FAKES_DIR/libnvidia-ml.so.1" ] && ! readelf -d "$GPUFRAC_FAKES_DIR/libnvidia-ml.so.1" | grep -q 'lib[atu]san'
}
