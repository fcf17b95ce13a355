# Helpers for the compute-share tests (sourced after ../lib.sh): the simulated GPU of the fake
# libcuda.so.1 (tests/fakes/cuda/README.md, "Simulated GPU") and the test program.
LOAD=$GPUFRAC_BUILD_DIR/tests/compute/compute_load
GPUTOOL=$GPUFRAC_FAKES_DIR/fake_gpu_tool
SHIM=${GPUFRAC_SHIM_DIR:-$GPUFRAC_BUILD_BIN_DIR}/libgpufrac-limits.so
GPU0=GPU-894e9a6d-f600-b098-3d59-138988473c2c
GPU1=GPU-5b0a7d1e-1c2f-4a3b-9c8d-7e6f5a4b3c2d
export LD_LIBRARY_PATH=$GPUFRAC_FAKES_DIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export GPUFRAC_FAKE_CUDA_DEVICES="$GPU0=40Gi,$GPU1=40Gi"
for f in "$SHIM" "$LOAD" "$GPUTOOL"; do
  [ -e "$f" ] || { echo "FAIL: $f is not built (ninja compute_tests)"; exit 1; }
done

# sim_gpu: a fresh simulated GPU file, $SIMGPU, used by every process started after.
sim_gpu() {
  SIMGPU=$E2E_TMP/sim-gpu
  rm -f "$SIMGPU"
  "$GPUTOOL" init "$SIMGPU"
  export GPUFRAC_FAKE_CUDA_GPU=$SIMGPU
}

# window SECONDS TAG...: achieved GPU time per client over the next SECONDS ($OUT, lib.sh's run).
window() { run "$GPUTOOL" window "$SIMGPU" "$@"; }
# share_of TAG: the client's share (percent of the clients' sum) in $OUT; busy_of: of the window.
share_of() { sed -n "s/^$1 .* share=\([0-9.]*\).*/\1/p" <<<"$OUT"; }
busy_of() { sed -n "s/^$1 .* busy=\([0-9.]*\).*/\1/p" <<<"$OUT"; }
# assert_near VALUE WANT TOLERANCE WHAT: |VALUE - WANT| <= TOLERANCE (decimals).
assert_near() {
  awk -v v="$1" -v w="$2" -v t="$3" 'BEGIN { d = v - w; if (d < 0) d = -d; exit !(v != "" && d <= t) }' ||
    fail "$4: $1, expected $2 +- $3"
}
# assert_le VALUE MAX WHAT
assert_le() { awk -v v="$1" -v m="$2" 'BEGIN { exit !(v != "" && v + 0 <= m + 0) }' || fail "$3: $1, expected <= $2"; }
now_ns() { "$GPUTOOL" now; }
