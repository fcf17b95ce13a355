# Container helpers for scripts/demo-story.sh (sourced): busybox rootfs bundles for runc, with
# gpufrac-hook at createRuntime/poststop and the host PID namespace, as an operator would set up.

ROOTFS=$DEMO/rootfs
mkdir -p "$ROOTFS/bin" "$ROOTFS/etc" "$ROOTFS/proc" "$ROOTFS/sys" "$ROOTFS/dev" "$ROOTFS/run" "$ROOTFS/tmp"
cp /bin/busybox "$ROOTFS/bin/busybox"
for applet in sh cat grep echo sleep; do ln -sf busybox "$ROOTFS/bin/$applet"; done
# The glibc libraries a file needs (any glibc image has them); never the driver's own libraries:
# gpufrac-hook mounts those (the host's, matching its kernel module) into every container.
copy_libs_of() {
  local lib
  for lib in $(ldd "$1" 2>/dev/null | grep -o '/[^ ]*' | grep -v -e '/libcuda\.so' -e '/libnvidia-' | sort -u); do
    mkdir -p "$ROOTFS$(dirname "$lib")"
    cp -L "$lib" "$ROOTFS$lib"
  done
}
cp "$PROGRAM" "$ROOTFS/bin/alloc_until_limit"
cp "$BUSY" "$ROOTFS/bin/busy_loop"
touch "$ROOTFS/sim-gpu" # where a simulated GPU's file is bound (make_bundle)
for file in "$PROGRAM" "$SHIM" "$DRIVER_LIBS"/libcuda.so.1 "$DRIVER_LIBS"/libnvidia-ml.so.1; do copy_libs_of "$file"; done
mkfifo "$DEMO/stdin"
exec 3<>"$DEMO/stdin"   # demo-cuda holds its memory until the end of the story

# make_bundle <dir> <shell command> [annotations as JSON]: shares the rootfs (read-only), asks for a
# 0.25 share unless told otherwise. HOOK_PATH and EXTRA_JQ (a jq filter) change the hook and the
# spec. With $SIMGPU set, the simulated GPU's file is bound in at /sim-gpu and the container's work is
# charged to its directory's name there.
make_bundle() {
  local dir=$1 cmd=$2 ann=${3:-}
  [ -n "$ann" ] || ann='{"gpufrac.io/fraction": "0.25"}'
  mkdir -p "$dir"
  (cd "$dir" && runc spec)
  local hook="{\"path\":\"${HOOK_PATH:-$BIN/gpufrac-hook}\",\"env\":[\"PATH=/usr/bin:/bin\",\"GPUFRAC_CONFIG=$GPUFRAC_CONFIG\"],\"timeout\":30}"
  jq --arg root "$ROOTFS" --arg cmd "$cmd" --argjson hook "$hook" --argjson ann "$ann" --arg gpu "${SIMGPU:-}" \
    --arg name "$(basename "$dir")" '
    .root = {path: $root, readonly: true} | .process.terminal = false
    | .process.args = ["/bin/sh", "-c", $cmd]
    | .annotations = $ann
    | .linux.namespaces |= map(select(.type != "pid"))
    | .hooks = {createRuntime: [$hook + {args: ["gpufrac-hook", "createRuntime"]}],
                poststop: [$hook + {args: ["gpufrac-hook", "poststop"]}]}
    | if $gpu == "" then . else
        .mounts += [{destination: "/sim-gpu", type: "bind", source: $gpu, options: ["bind"]}]
        | .process.env += ["GPUFRAC_FAKE_CUDA_GPU=/sim-gpu", "GPUFRAC_FAKE_CUDA_CLIENT=" + $name] end
    | '"${EXTRA_JQ:-.}"'
  ' "$dir/config.json" >"$dir/config.json.new" && mv "$dir/config.json.new" "$dir/config.json"
}

# start_container <id> <shell command> [annotations as JSON]: runc create + start, output in
# $DEMO/<id>.log.
start_container() {
  local ann=${3:-}
  [ -n "$ann" ] || ann='{"gpufrac.io/fraction": "0.25"}'
  make_bundle "$DEMO/$1" "$2" "$ann"
  printf '$ runc run -d %s    # %s\n' "$1" "$(jq -r 'to_entries | map(.key + "=" + .value) | join(" ")' <<<"$ann")"
  runc create --bundle "$DEMO/$1" "$1" <"$DEMO/stdin" >"$DEMO/$1.log" 2>&1 || { cat "$DEMO/$1.log"; exit 1; }
  IDS+=("$1")
  runc start "$1"
}

wait_for_line() {
  for _ in $(seq 100); do grep -q "$2" "$1" && return 0; sleep 0.1; done
  echo "demo: no line matching '$2' in $1:" >&2
  cat "$1" >&2
  exit 1
}
