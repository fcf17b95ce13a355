#!/bin/bash
# Instruction counts (valgrind --tool=callgrind, the hook process itself, not its children) of one
# gpufrac-hook invocation, stable on a noisy machine where timings are not:
#   fast path: createRuntime of a bundle without a gpufrac request (every container on the node);
#   full path: createRuntime with a 0.25 share on a simulated GPU (book, files, mounts into a real
#   mount namespace, device cgroup, loader cache), then poststop (release).
# Usage (root): bench/hook_callgrind.sh [build-dir]   (GPUFRAC_CALLGRIND_KEEP=PREFIX keeps the
# callgrind files as PREFIX.fast, PREFIX.post for callgrind_annotate)
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=$(realpath "${1:-build}")
export GPUFRAC_SOURCE_DIR=$PWD GPUFRAC_BUILD_DIR=$BUILD GPUFRAC_BUILD_BIN_DIR=$BUILD/bin GPUFRAC_FAKES_DIR=$BUILD/fakes
source tests/e2e/lib.sh
source tests/e2e/containers.sh
need_cmd valgrind
e2e_tmp
e2e_on_exit() {
  [ -n "${SLEEPER:-}" ] && kill "$SLEEPER" 2>/dev/null
  umount "$E2E_TMP/state" 2>/dev/null || true
}
e2e_gpu_config a100-40gb-x1.yaml "log: {target: file, file: $E2E_TMP/gpufrac.log, level: warn}"
mount -t tmpfs -o size=64m gpufrac-bench "$E2E_TMP/state"
# The inventory cache, as a node's boot-time refresh writes it (else the first booking discovers
# the simulated machine itself, which a real node never does on the start path).
"$GPUFRAC" info --refresh >/dev/null
make_bundle "$E2E_TMP/plain" 'true'
make_bundle "$E2E_TMP/share" 'true' gpufrac.io/fraction=0.25
unshare --mount --propagation private sleep 3600 &
SLEEPER=$!
sleep 0.3

# ir <label> <stdin> <hook args...>: the hook's total instruction count, or why there is none.
ir() {
  local label=$1 input=$2 out=$E2E_TMP/cg.$1
  shift 2
  local why=""
  if ! valgrind --tool=callgrind --callgrind-out-file="$out" --trace-children=no "$HOOK" "$@" <<<"$input" \
    >/dev/null 2>"$E2E_TMP/valgrind.log"; then
    why=" (stopped: $(grep -m1 -o 'gpufrac-hook: .*' "$E2E_TMP/valgrind.log"))"
    [ -s "$out" ] || { echo "n/a$why"; return; }
  fi
  echo "$(awk '/^summary:/ { print $2 }' "$out")$why"
  if [ -n "${GPUFRAC_CALLGRIND_KEEP:-}" ]; then cp "$out" "$GPUFRAC_CALLGRIND_KEEP.$label"; fi
}
plain=$(jq -cn --arg b "$E2E_TMP/plain" '{id:"cg-plain",bundle:$b,pid:1,status:"creating"}')
share=$(jq -cn --arg b "$E2E_TMP/share" --argjson p "$SLEEPER" '{id:"cg-share",bundle:$b,pid:$p}')
fast=$(ir fast "$plain" createRuntime)
# valgrind 3.19 (Debian 12) does not know the mount API syscalls the full path uses (fsopen,
# open_tree, move_mount, mount_setattr): under it the full createRuntime fails at its first mount
# and undoes its booking. Its count is then everything up to that mount (config, bundle, booking,
# plan, container files) plus the undo, marked "stopped"; a newer valgrind counts the whole path.
full=$(ir full "$share" createRuntime)
post=$(ir post "$share" poststop)
echo "gpufrac-hook instructions (callgrind, the hook process only):"
echo "  fast path (createRuntime, no request):        $fast"
echo "  full path createRuntime (0.25 share):         $full"
echo "  full path poststop (release):                 $post"
echo "machine: $(uname -m), $(valgrind --version)"
