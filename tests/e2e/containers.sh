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

# A simulated host root (proc files and /dev/nvidia* character nodes) for the configured machine.
make_sim_root() {
  "$GPUFRAC" simulate init-root --machine "$MACHINES/$1" --root "$E2E_TMP/root" >/dev/null
}

# e2e_gpu_config <machine> [extra yaml...]: config for tests that run containers.
e2e_gpu_config() {
  local machine=$1
  shift
  e2e_config "$machine" "shim: {path: $SHIM}" "hook: {path: $HOOK}" "cli: {path: $GPUFRAC}" "$@"
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

# add_libs_of <rootfs> <elf>: the shared libraries an executable or library needs, at their paths.
add_libs_of() {
  local rootfs=$1 lib
  for lib in $(ldd "$2" | grep -o '/[^ ]*' | sort -u); do
    mkdir -p "$rootfs$(dirname "$lib")"
    cp -L "$lib" "$rootfs$lib"
  done
}

# add_fake_cuda <rootfs>: the fake libcuda.so.1 where the dynamic loader finds it, plus what it and
# the shim need from glibc (any glibc image has these; the busybox rootfs does not).
add_fake_cuda() {
  mkdir -p "$1/usr/lib/x86_64-linux-gnu"
  cp "$GPUFRAC_FAKES_DIR/libcuda.so.1" "$1/usr/lib/x86_64-linux-gnu/libcuda.so.1"
  add_libs_of "$1" "$GPUFRAC_FAKES_DIR/libcuda.so.1"
  add_libs_of "$1" "$SHIM"
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
