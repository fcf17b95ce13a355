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

# The holder of GPU's lease as the arbiter publishes it (its pid, 0 when nobody holds it).
holder_pid() { "$ATOOL" holder "$1/compute/$2"; }

# --- plain runc containers, their files bound as gpufrac's front-ends bind them -----------------
# compute_rootfs DIR: a busybox rootfs with compute_load, the fake libcuda.so.1 (as a driver
# install would give it) and glibc.
compute_rootfs() {
  make_rootfs "$1"
  add_program "$1" "$LOAD" /bin/compute_load
  mkdir -p "$1/usr/lib"
  cp "$GPUFRAC_FAKES_DIR/libcuda.so.1" "$1/usr/lib/libcuda.so.1"
  add_libs_of "$1" "$SHIM"
}

# compute_bundle NAME STATE CMD DEVICE...: a runc bundle $E2E_TMP/NAME on the shared rootfs
# $E2E_TMP/rootfs running CMD, sharing the host PID namespace, with the simulated GPU bound in
# (client tag NAME), the shim preloaded from /etc/ld.so.preload, and the container's files as
# arbiter_tool makes them under STATE (DEVICE: UUID=BYTES:PPM:MODE:PRIO): the limit file, usage
# region and, per device with a compute share, the GPU's arbiter at /run/gpufrac/compute/<uuid>.
compute_bundle() {
  local name=$1 state=$2 cmd=$3 dir=$E2E_TMP/$1
  shift 3
  mkdir -p "$state" "$state/../sync"
  "$ATOOL" share "$state" "$name" --region /run/gpufrac/usage "$@"
  make_plain_bundle "$dir" "$cmd"
  rm -rf "$dir/rootfs"
  printf '/run/gpufrac/libgpufrac-limits.so\n' >"$state/$name.preload"
  local mounts
  mounts=$(jq -n --arg s "$state" --arg n "$name" --arg shim "$SHIM" --arg gpu "$SIMGPU" '[
    {destination: "/run/gpufrac", type: "tmpfs", source: "tmpfs", options: ["nosuid","nodev","mode=755"]},
    {destination: "/run/gpufrac/libgpufrac-limits.so", type: "bind", source: $shim, options: ["ro","bind"]},
    {destination: "/run/gpufrac/limits", type: "bind", source: "\($s)/\($n).limits", options: ["ro","bind"]},
    {destination: "/run/gpufrac/usage", type: "bind", source: "\($s)/\($n).usage", options: ["bind"]},
    {destination: "/etc/ld.so.preload", type: "bind", source: "\($s)/\($n).preload", options: ["ro","bind"]},
    {destination: "/sim-gpu", type: "bind", source: $gpu, options: ["bind"]},
    {destination: "/sync", type: "bind", source: "\($s)/../sync", options: ["ro","bind"]}]')
  for dev in "$@"; do
    local uuid=${dev%%=*}
    [ -e "$state/compute/$uuid" ] || continue
    mounts=$(jq --arg src "$state/compute/$uuid" --arg dst "/run/gpufrac/compute/$uuid" \
      '. + [{destination: $dst, type: "bind", source: $src, options: ["nosuid","nodev","noexec","bind"]}]' <<<"$mounts")
  done
  jq --arg root "$E2E_TMP/rootfs" --argjson m "$mounts" --arg n "$name" --arg devs "$GPUFRAC_FAKE_CUDA_DEVICES" '
    .root.path = $root | .mounts += $m
    | .process.env += ["LD_LIBRARY_PATH=/usr/lib", "GPUFRAC_FAKE_CUDA_GPU=/sim-gpu", "GPUFRAC_FAKE_CUDA_CLIENT=" + $n,
                       "GPUFRAC_FAKE_CUDA_DEVICES=" + $devs]
  ' "$dir/config.json" >"$dir/config.json.new" && mv "$dir/config.json.new" "$dir/config.json"
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
  local t dir=$ST/../sync
  t=$(at "$2")
  echo "$t" >"$dir/.$1" && mv "$dir/.$1" "$dir/$1"
  echo "$t"
}
# sleep_until T: until CLOCK_MONOTONIC time T (ns).
sleep_until() { local d=$((($1 - $(now_ns)) / 1000000)); [ "$d" -gt 0 ] && sleep "$(awk -v d="$d" 'BEGIN{print d/1000}')"; return 0; }
