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
ATOOL=$GPUFRAC_BUILD_DIR/tests/compute/arbiter_tool

# lease_path STATE GPU: GPU's lease file: on the GPU's own tmpfs (<uuid>.d/<uuid>) where the host booked
# it, else <uuid> (arbiter_tool's files, laid out as a container sees them).
lease_path() { if [ -d "$1/compute/$2.d" ]; then echo "$1/compute/$2.d/$2"; else echo "$1/compute/$2"; fi; }
# holder_pid STATE GPU: the holder of GPU's lease as the arbiter publishes it (its pid, 0: nobody).
holder_pid() { "$ATOOL" holder "$(lease_path "$1" "$2")"; }
# slots STATE GPU: how many slots of GPU's arbiter are in use.
slots() { "$ATOOL" show "$(lease_path "$1" "$2")" | grep -c '^slot' || true; }

# --- runc containers through gpufrac-hook (after ../containers.sh, with e2e_gpu_config) ---------
# hook_bundle NAME CMD ANNOTATION...: a bundle $E2E_TMP/NAME with the hook (make_bundle) running CMD
# (compute_load is in its rootfs), the simulated GPU bound in as /sim-gpu (client tag NAME) and the
# start times the test publishes (go) as /sync.
hook_bundle() {
  local name=$1 cmd=$2 dir=$E2E_TMP/$1
  shift 2
  mkdir -p "$E2E_TMP/sync"
  make_bundle "$dir" "$cmd" "$@"
  add_program "$dir/rootfs" "$LOAD" /bin/compute_load
  add_glibc "$dir/rootfs"
  touch "$dir/rootfs/sim-gpu"
  mkdir -p "$dir/rootfs/sync"
  jq --arg gpu "$SIMGPU" --arg sync "$E2E_TMP/sync" --arg n "$name" '
    .mounts += [{destination: "/sim-gpu", type: "bind", source: $gpu, options: ["bind"]},
                {destination: "/sync", type: "bind", source: $sync, options: ["ro","bind"]}]
    | .process.env += ["GPUFRAC_FAKE_CUDA_GPU=/sim-gpu", "GPUFRAC_FAKE_CUDA_CLIENT=" + $n]
  ' "$dir/config.json" >"$dir/c.json" && mv "$dir/c.json" "$dir/config.json"
}

# start NAME: runc create + start of bundle NAME (container $P-NAME), output in $E2E_TMP/NAME.out.
start() {
  runc create --bundle "$E2E_TMP/$1" "$P-$1" >"$E2E_TMP/$1.out" 2>&1 || { fail "runc create $1: $(cat "$E2E_TMP/$1.out")"; return; }
  runc start "$P-$1"
}
# wait_stopped NAME...: until each container has stopped (at most 120 s), then deletes it.
wait_stopped() {
  local c
  for c in "$@"; do
    for _ in $(seq 1200); do [ "$(runc state "$P-$c" 2>/dev/null | jq -r .status)" = stopped ] && break; sleep 0.1; done
    runc delete -f "$P-$c" >/dev/null 2>&1 || true
  done
}
# at SECONDS: a CLOCK_MONOTONIC time SECONDS from now (containers share the host's clock).
at() { echo $(($(now_ns) + $1 * 1000000000)); }
# synced NAME ARGS...: a container command running compute_load ARGS from the start time the test
# publishes as NAME (go NAME SECONDS), so containers started one after the other switch together.
synced() {
  local name=$1
  shift
  echo "while [ ! -s /sync/$name ]; do sleep 0.05; done; compute_load --at \$(cat /sync/$name) $*"
}
# go NAME SECONDS: publishes the start time SECONDS from now as NAME; prints it.
go() {
  local t dir=$E2E_TMP/sync
  t=$(at "$2")
  echo "$t" >"$dir/.$1" && mv "$dir/.$1" "$dir/$1"
  echo "$t"
}
# sleep_until T: until CLOCK_MONOTONIC time T (ns).
sleep_until() { local d=$((($1 - $(now_ns)) / 1000000)); [ "$d" -gt 0 ] && sleep "$(awk -v d="$d" 'BEGIN{print d/1000}')"; return 0; }
