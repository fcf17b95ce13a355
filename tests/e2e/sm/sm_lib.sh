# Helpers for the SM-sharing tests (sourced after lib.sh and containers.sh).
SM_BIN=$GPUFRAC_BUILD_DIR/tests/sm

# sm_config <machine> [extra yaml...]: a node reached through the real NVML backend over the fake
# libnvidia-ml.so.1 (its state, the GPUs' compute modes included, in $E2E_TMP/fake/nvml.json), the
# simulated host root with its driver (nvidia-cuda-mps-control is the fake daemon), MPS daemons
# kept 2 s once idle, CDI specs under $E2E_TMP/cdi.
sm_config() {
  local machine=$1
  shift
  mkdir -p "$E2E_TMP/state" "$E2E_TMP/root" "$E2E_TMP/cdi" "$E2E_TMP/fake"
  {
    echo "state-dir: $E2E_TMP/state"
    echo "host-root: $E2E_TMP/root"
    echo "nvml: {backend: nvml, library: $GPUFRAC_FAKES_DIR/libnvidia-ml.so.1}"
    echo "log: {target: file, file: $E2E_TMP/gpufrac.log, level: debug}"
    echo "shim: {path: $SHIM}"
    echo "hook: {path: $HOOK}"
    echo "cli: {path: $GPUFRAC}"
    echo "cdi: {output: $E2E_TMP/cdi/gpufrac.yaml, spec-dirs: [$E2E_TMP/cdi]}"
    for line in "$@"; do echo "$line"; done
  } >"$E2E_TMP/config.yaml"
  export GPUFRAC_CONFIG=$E2E_TMP/config.yaml
  export GPUFRAC_FAKE_NVML_MACHINE=$MACHINES/$machine GPUFRAC_FAKE_NVML_STATE=$E2E_TMP/fake/nvml.json
  make_sim_root "$machine"
  "$GPUFRAC" info --refresh >/dev/null
}

# The fake driver's state as the containers' kernel would see it: the variable and its directory
# (the fake libcuda reads the GPUs' compute modes there; a real driver keeps them in the kernel).
# With hooks (the default), the hooks get the fake NVML's variables too (a real node's hooks get
# PATH and GPUFRAC_CONFIG only).
sm_fake_spec() {
  local dir=$1 hooks=${2:-1}
  local fake="[\"GPUFRAC_FAKE_NVML_MACHINE=$GPUFRAC_FAKE_NVML_MACHINE\",\"GPUFRAC_FAKE_NVML_STATE=$GPUFRAC_FAKE_NVML_STATE\"]"
  jq --argjson fake "$fake" --arg dir "$E2E_TMP/fake" --argjson hooks "$hooks" '
    .process.env += [$fake[1]]
    | .mounts += [{destination: $dir, type: "bind", source: $dir, options: ["rbind", "rw"]}]
    | if $hooks == 1 then (.hooks.createRuntime[0].env += $fake | .hooks.poststop[0].env += $fake) else . end
  ' "$dir/config.json" >"$dir/config.json.new" && mv "$dir/config.json.new" "$dir/config.json"
}

# sm_rootfs <rootfs>: glibc and the MPS probes (dynamic and static), no driver file.
sm_rootfs() {
  add_glibc "$1"
  add_program "$1" "$SM_BIN/mps_probe"
  cp "$SM_BIN/mps_probe_static" "$1/bin/mps_probe_static"
}

# sm_bundle <dir> <shell command> [annotation k=v...]: a runc bundle with gpufrac-hook (createRuntime,
# poststop), the probes, and the fake driver's state.
sm_bundle() {
  make_bundle "$@"
  sm_rootfs "$1/rootfs"
  sm_fake_spec "$1"
}

# sm_plain_bundle <dir> <shell command> [annotation k=v...]: the same without hooks (for gpufrac-runtime).
sm_plain_bundle() {
  make_plain_bundle "$@"
  sm_rootfs "$1/rootfs"
  sm_fake_spec "$1" 0
}

# with_env <dir> VAR=value...: adds process environment variables to a bundle.
with_env() {
  local dir=$1
  shift
  local list
  list=$(printf '%s\n' "$@" | jq -R . | jq -s .)
  jq --argjson l "$list" '.process.env += $l' "$dir/config.json" >"$dir/config.json.new" &&
    mv "$dir/config.json.new" "$dir/config.json"
}

GPU0=GPU-d7dabd4b-76ee-eb23-0267-a749de0199b5
GPU1=GPU-5ae7c110-fc7e-c29d-ca0b-696c52a0358c
mps_dir() { echo "$E2E_TMP/state/mps/$1"; }
# The daemon record's field, or "" without a record.
daemon_field() { jq -r ".$2" "$(mps_dir "$1")/daemon.json" 2>/dev/null || true; }
compute_mode() { awk -v u="$1" '$1 == u {print $2}' "$GPUFRAC_FAKE_NVML_STATE.compute-mode" 2>/dev/null || true; }
mps_ctl() { echo "$2" | CUDA_MPS_PIPE_DIRECTORY="$(mps_dir "$1")/pipe" "$E2E_TMP/root/usr/bin/nvidia-cuda-mps-control"; }
ledger() { jq -c "$1" "$E2E_TMP/state/ledger.json"; }
