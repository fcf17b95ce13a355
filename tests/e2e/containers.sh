# Helpers for end-to-end tests with real runtimes (sourced after lib.sh). Rootfs: busybox-static.
SHIM_DIR=${GPUFRAC_SHIM_DIR:-$GPUFRAC_BUILD_BIN_DIR}
HOOK=$BIN_DIR/gpufrac-hook
SHIM=$SHIM_DIR/libgpufrac-limits.so

# A minimal rootfs: busybox and its applets.
make_rootfs() {
  local dir=$1
  mkdir -p "$dir/bin" "$dir/etc" "$dir/tmp" "$dir/proc" "$dir/sys" "$dir/dev" "$dir/run"
  cp /bin/busybox "$dir/bin/busybox"
  for applet in sh ls cat echo sleep stat grep wc head test true mount; do ln -sf busybox "$dir/bin/$applet"; done
}

# A simulated host root for the configured machine: proc files, /dev/nvidia* character nodes and the
# simulated driver install (its user space, which gpufrac injects into containers) in the layout
# $GPUFRAC_DRIVER_LAYOUT (debian, lib64, no-cache or prefix; default debian).
make_sim_root() {
  "$GPUFRAC" simulate init-root --machine "$MACHINES/$1" --root "$E2E_TMP/root" \
    --driver-kit "$GPUFRAC_FAKES_DIR/driver-kit" --driver-layout "${GPUFRAC_DRIVER_LAYOUT:-debian}" >/dev/null
}

# e2e_gpu_config <machine> [extra yaml...]: config for tests that run containers.
e2e_gpu_config() {
  local machine=$1
  shift
  e2e_config "$machine" "shim: {path: $SHIM}" "hook: {path: $HOOK}" "cli: {path: $GPUFRAC}" "$@"
  make_sim_root "$machine"
}

# e2e_dynamic_mig_config <machine>: a node whose GPUs gpufrac reaches through its real NVML backend
# over the fake libnvidia-ml.so.1 (state in $E2E_TMP/fake-nvml.json, so MIG changes persist across
# processes), with mig.mode dynamic, CDI specs under $E2E_TMP/cdi, and the simulated host root.
e2e_dynamic_mig_config() {
  local machine=$1
  mkdir -p "$E2E_TMP/state" "$E2E_TMP/root" "$E2E_TMP/cdi"
  cat >"$E2E_TMP/config.yaml" <<EOF
state-dir: $E2E_TMP/state
host-root: $E2E_TMP/root
nvml: {backend: nvml, library: $GPUFRAC_FAKES_DIR/libnvidia-ml.so.1}
log: {target: file, file: $E2E_TMP/gpufrac.log, level: debug}
shim: {path: $SHIM}
hook: {path: $HOOK}
cli: {path: $GPUFRAC}
mig: {mode: dynamic}
cdi: {output: $E2E_TMP/cdi/gpufrac.yaml, spec-dirs: [$E2E_TMP/cdi]}
EOF
  export GPUFRAC_CONFIG=$E2E_TMP/config.yaml
  export GPUFRAC_FAKE_NVML_MACHINE=$MACHINES/$machine GPUFRAC_FAKE_NVML_STATE=$E2E_TMP/fake-nvml.json
  make_sim_root "$machine"
}

# make_plain_bundle <dir> <shell command> [annotation k=v...]: a runc bundle sharing the host PID
# namespace, without hooks.
make_plain_bundle() {
  local dir=$1 cmd=$2
  shift 2
  mkdir -p "$dir"
  make_rootfs "$dir/rootfs"
  (cd "$dir" && runc spec)
  local annotations='{}'
  for kv in "$@"; do annotations=$(jq --arg k "${kv%%=*}" --arg v "${kv#*=}" '. + {($k): $v}' <<<"$annotations"); done
  jq --arg cmd "$cmd" --argjson ann "$annotations" '
    .process.terminal = false | .process.args = ["/bin/sh", "-c", $cmd] | .root.readonly = false
    | .annotations = $ann
    | .linux.namespaces |= map(select(.type != "pid"))
  ' "$dir/config.json" >"$dir/config.json.new" && mv "$dir/config.json.new" "$dir/config.json"
}

# make_bundle <dir> <shell command> [annotation k=v...]: the same with gpufrac-hook at createRuntime
# and poststop (explicit env, as a runtime would get them from hooks.d or an operator).
make_bundle() {
  make_plain_bundle "$@"
  local dir=$1
  local env="[\"PATH=/usr/bin:/bin\",\"GPUFRAC_CONFIG=$GPUFRAC_CONFIG\"]"
  jq --arg hook "$HOOK" --argjson env "$env" '
    .hooks = {createRuntime: [{path: $hook, args: ["gpufrac-hook", "createRuntime"], env: $env, timeout: 30}],
              poststop: [{path: $hook, args: ["gpufrac-hook", "poststop"], env: $env, timeout: 30}]}
  ' "$dir/config.json" >"$dir/config.json.new" && mv "$dir/config.json.new" "$dir/config.json"
}

# podman_run [podman run options] -- command...: podman 4.3.1 with the flags a hybrid-cgroup host
# needs, the hooks directory $PODMAN_HOOKS_DIR and the runtime $PODMAN_RUNTIME (default runc), on
# the busybox rootfs $E2E_TMP/rootfs (--rootfs makes the first positional the rootfs).
podman_run() {
  local opts=()
  while [ "$1" != -- ]; do opts+=("$1"); shift; done
  shift
  run podman --hooks-dir "${PODMAN_HOOKS_DIR:?}" --cgroup-manager cgroupfs --runtime "${PODMAN_RUNTIME:-runc}" run \
    --ulimit nofile=1024:1024 --ulimit nproc=1024:1024 "${opts[@]}" --rootfs "$E2E_TMP/rootfs" "$@"
}

# Removes every runc container whose id starts with the prefix (cleanup on exit).
runc_cleanup() {
  local prefix=$1 id
  for id in $(runc list -q 2>/dev/null | grep "^$prefix" || true); do
    runc kill "$id" KILL >/dev/null 2>&1 || true
    runc delete -f "$id" >/dev/null 2>&1 || true
  done
}

# add_program <rootfs> <binary> [dest]: copies a dynamically linked program and every library ldd
# resolves for it (same paths), so it runs in the busybox rootfs.
add_program() {
  local rootfs=$1 bin=$2 dest=${3:-/bin/$(basename "$2")}
  mkdir -p "$rootfs$(dirname "$dest")"
  cp "$bin" "$rootfs$dest"
  add_libs_of "$rootfs" "$bin"
}

# add_libs_of <rootfs> <elf>: the shared libraries an executable or library needs, at their paths,
# except the driver's (libcuda, libnvidia-*): images never carry those, gpufrac injects them.
add_libs_of() {
  local rootfs=$1 lib
  for lib in $(ldd "$2" 2>/dev/null | grep -o '/[^ ]*' | grep -v -e '/libcuda\.so' -e '/libnvidia-' | sort -u); do
    mkdir -p "$rootfs$(dirname "$lib")"
    cp -L "$lib" "$rootfs$lib"
  done
}

# add_glibc <rootfs>: what the shim and the driver's libraries need from glibc (any glibc image has
# these; the busybox rootfs does not). No driver file: gpufrac injects those.
add_glibc() {
  local elf
  for elf in "$SHIM" "$GPUFRAC_FAKES_DIR"/driver-kit/lib/*.so* "$GPUFRAC_FAKES_DIR"/driver-kit/bin/*; do
    add_libs_of "$1" "$elf"
  done
}
# make_cuda_rootfs <dir>: a plain busybox rootfs as a CUDA image would have it (glibc, its own
# static ldconfig, a dynamically linked CUDA program: alloc_until_limit, DT_NEEDED libcuda.so.1) and
# no driver file. CUDA_CHECK is a command for it: nvidia-smi's total, the loader cache's libcuda and
# libc lines, then the allocation loop.
make_cuda_rootfs() {
  make_rootfs "$1"
  add_glibc "$1"
  add_program "$1" "$GPUFRAC_BUILD_BIN_DIR/alloc_until_limit"
  mkdir -p "$1/sbin"
  cp /sbin/ldconfig "$1/sbin/ldconfig"
}
CUDA_CHECK='nvidia-smi --query-gpu=memory.total --format=csv,noheader,nounits
  ldconfig -p | grep -e "libcuda.so.1 " -e "libc.so.6 "
  alloc_until_limit </dev/null'

# expect_cuda <what> [libcuda dir] [libc dir]: $OUT is CUDA_CHECK's output in a 0.25 share of a
# 40 GB A100 (40536 MiB): nvidia-smi, the loader cache and CUDA all see the share.
expect_cuda() {
  local lib=${2:-/usr/lib/x86_64-linux-gnu}
  assert_contains "$OUT" "$((40536 / 4))
" "$1: nvidia-smi shows the share as the total"
  assert_contains "$OUT" "libcuda.so.1 (libc6,x86-64) => $lib/libcuda.so.1" "$1: the loader cache lists libcuda.so.1"
  assert_contains "$OUT" "libc.so.6 (libc6,x86-64) => ${3:-/lib/x86_64-linux-gnu}/libc.so.6" "$1: and the image's libc"
  assert_contains "$OUT" "cuMemGetInfo: 9.9 GiB free of 9.9 GiB" "$1: CUDA sees the share"
  assert_contains "$OUT" "allocated 19 x 512 MiB = 9.5 GiB; the next cuMemAlloc of 512 MiB returned CUDA_ERROR_OUT_OF_MEMORY" \
    "$1: the loop stops at the limit"
}


# The prologue of a container test: root, the commands it runs, a temporary directory, and $P, the
# prefix of every container it creates (removed on exit; a test may redefine e2e_on_exit).
#   e2e_runc_test NAME      runc and jq
#   e2e_podman_test NAME    podman, runc and jq
e2e_runc_test() {
  need_root
  need_cmd runc
  need_cmd jq
  e2e_tmp
  P=gpufrac-e2e-$1-$$
  e2e_on_exit() { runc_cleanup "$P"; }
}
e2e_podman_test() {
  need_cmd podman
  e2e_runc_test "$1"
  e2e_on_exit() { podman ps -aq --filter "name=^$P" | xargs -r podman rm -f >/dev/null 2>&1 || true; }
}
