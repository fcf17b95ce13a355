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
  trap sm_exit EXIT
}

# The EXIT trap of an SM test: every MPS daemon the test caused is stopped, whatever its outcome,
# then the usual cleanup (e2e_cleanup: containers, the temporary directory) runs with the test's
# status as $? (set +e: the `(exit $rc)` that passes it on must not end the trap).
sm_exit() {
  local rc=$?
  set +e
  sm_kill_daemons
  sm_unmount
  if [ "${GPUFRAC_KEEP_TMP:-0}" != 1 ]; then
    (exit $rc)
    e2e_cleanup
  fi
  exit $rc
}

# The MPS daemons this test caused that still run (and their servers), by pid: every live process
# whose environment points CUDA_MPS_PIPE_DIRECTORY into this test's directory, as gpufrac starts them.
sm_daemons() {
  local p out=""
  for p in /proc/[0-9]*; do
    tr '\0' '\n' 2>/dev/null <"$p/environ" | grep -q "^CUDA_MPS_PIPE_DIRECTORY=$E2E_TMP/" &&
      [ "$(awk '{print $3}' "$p/stat" 2>/dev/null)" != Z ] && out+="${p#/proc/} "
  done
  echo "$out"
}

# The mounts under this test's state directory (the daemons' pipe and shm tmpfs), deepest first.
sm_mounts() { awk -v d="$E2E_TMP/state/" 'index($5, d) == 1 {print $5}' /proc/self/mountinfo | sort -r; }
# Detaches what gc did not (a test that failed half-way), so that the directory can go.
sm_unmount() {
  local m
  for m in $(sm_mounts); do umount -l "$m" 2>/dev/null || true; done
}

# Stops every MPS daemon this test caused, by pid (no systemd reaps them on a CI node), and waits
# until none runs.
sm_kill_daemons() {
  local pid n=0
  for pid in $(sm_daemons); do kill -9 "$pid" 2>/dev/null || true; done
  while [ -n "$(sm_daemons)" ] && [ $n -lt 50 ]; do sleep 0.1; n=$((n + 1)); done
}

# sm_end: the node brought back from SM sharing as designed, and checked: every SM share released by
# then, the idle timeout set to 0, `gpufrac gc` stops each recorded daemon (its recorded pid no
# longer runs) and restores its GPU's compute mode, no GPU stays in MPS mode, and no daemon process
# or daemon tmpfs of this test is left.
sm_end() {
  sed -i '/^compute:/d' "$GPUFRAC_CONFIG"
  echo "compute: {mps-idle-timeout: 0}" >>"$GPUFRAC_CONFIG"
  local gpu pid pids=""
  for gpu in $(ls "$E2E_TMP/state/mps" 2>/dev/null); do pids+="$(daemon_field "$gpu" pid) "; done
  run "$GPUFRAC" gc
  assert_eq "$RC" 0 "gc at the end: $OUT"
  if [ -n "${pids// /}" ]; then assert_contains "$OUT" "Stopped the MPS daemon of GPU " "gc stops the idle daemons"; fi
  for pid in $pids; do
    case "$(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null)" in "" | Z) ;; *) fail "gc left the daemon $pid running" ;; esac
  done
  assert_eq "$(ls "$E2E_TMP/state/mps" 2>/dev/null)" "" "no daemon record or directory is left"
  assert_eq "$(ledger '.mps // [] | length')" 0 "no GPU is recorded in MPS mode"
  assert_eq "$(awk '$2 != 0' "$GPUFRAC_FAKE_NVML_STATE.compute-mode" 2>/dev/null)" "" "every GPU's compute mode is DEFAULT"
  assert_eq "$(sm_daemons)" "" "no MPS daemon process of this test is left"
  assert_eq "$(sm_mounts)" "" "no pipe or shm tmpfs of a daemon is left mounted"
}

# sm_holds_none <pid> <path>: fails for each fd of the process that refers to the path (a daemon
# must hold nothing of its starter's).
sm_holds_none() {
  local fd
  [ -d "/proc/$1/fd" ] || fail "no process $1 to look at"
  for fd in /proc/"$1"/fd/*; do
    [ "$(readlink "$fd")" != "$2" ] || fail "the process $1 holds $2 (fd ${fd##*/}), an fd of its starter"
  done
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
