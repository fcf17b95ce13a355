#!/bin/bash
# gpufrac-hook latency and its cost on container start, measured in one script (run as root):
#   1. `gpufrac-hook createRuntime` on a bundle without gpufrac annotations (the path every container
#      on the node takes), against the exec floor (/bin/true started the same way);
#   2. the full path: createRuntime (book, write files, mount into a real mount namespace, device
#      cgroup) + poststop (release), on a simulated GPU;
#   3. `runc run` of a trivial container with and without the hook (0.25 share), as a ratio.
# The simulated node has the driver's user space, which the hook injects (mounts + the container's
# loader cache); GPUFRAC_BENCH_DRIVER=never measures without injection, as before it existed.
# Usage: [GPUFRAC_BENCH_DRIVER=auto|never] bench/hook_bench.sh [build-dir] [iterations]
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=$(realpath "${1:-build}")
N=${2:-200}
export GPUFRAC_SOURCE_DIR=$PWD GPUFRAC_BUILD_DIR=$BUILD GPUFRAC_BUILD_BIN_DIR=$BUILD/bin GPUFRAC_FAKES_DIR=$BUILD/fakes
source tests/e2e/lib.sh
source tests/e2e/containers.sh
e2e_tmp
# shellcheck disable=SC2086
e2e_on_exit() {
  [ -n "${SLEEPER:-}" ] && kill $SLEEPER 2>/dev/null
  runc_cleanup gpufrac-bench-
  umount "$E2E_TMP/state" 2>/dev/null || true
}
DRIVER=${GPUFRAC_BENCH_DRIVER:-auto}
e2e_gpu_config a100-40gb-x1.yaml "log: {target: file, file: $E2E_TMP/gpufrac.log, level: warn}" "driver: {inject: $DRIVER}"
# The state dir is /run/gpufrac in production: a tmpfs, where the ledger's fsyncs cost nothing.
mount -t tmpfs -o size=64m gpufrac-bench "$E2E_TMP/state"

now_ns() { date +%s%N; }
# per_call_us <label> <iterations> <command...>: mean microseconds per run of the command.
per_call_us() {
  local n=$2 start end
  shift 2
  start=$(now_ns)
  for ((i = 0; i < n; i++)); do "$@" >/dev/null 2>&1 || true; done
  end=$(now_ns)
  echo $(((end - start) / n / 1000))
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }

make_bundle "$E2E_TMP/plain" 'true'
make_bundle "$E2E_TMP/share" 'true' gpufrac.io/fraction=0.25
plain_state=$(jq -cn --arg b "$E2E_TMP/plain" '{id:"bench-plain",bundle:$b,pid:1,status:"creating"}')
# Each call gets the state on its own stdin (a here-string given once would reach the first call
# only), the floor the same way. The two alternate in 10 blocks, so a drift of this VM's speed
# during the run hits both alike.
fast_call() { "$HOOK" createRuntime <<<"$plain_state"; }
floor_call() { /bin/true <<<"$plain_state"; }
fast_call || { echo "bench: the fast path failed" >&2; exit 1; }
fast_sum=0 floor_sum=0
for ((block = 0; block < 10; block++)); do
  fast_sum=$((fast_sum + $(per_call_us fast $((N / 10)) fast_call)))
  floor_sum=$((floor_sum + $(per_call_us floor $((N / 10)) floor_call)))
done
fast=$((fast_sum / 10)) fast_floor=$((floor_sum / 10))

# The full path needs, like a real container, a fresh process in its own mount namespace for each
# createRuntime: M of them are started before the clock runs.
M=$((N / 4))
SLEEPERS=()
for ((i = 0; i < M; i++)); do
  unshare --mount --propagation private sleep 3600 &
  SLEEPERS+=($!)
done
SLEEPER="${SLEEPERS[*]}"
sleep 0.5
STATES=()
for pid in "${SLEEPERS[@]}"; do
  STATES+=("$(jq -cn --arg b "$E2E_TMP/share" --argjson p "$pid" '{id:"bench-full",bundle:$b,pid:$p}')")
done
CYCLE=0
full_cycle() {
  local state=${STATES[$CYCLE]}
  CYCLE=$((CYCLE + 1))
  "$HOOK" createRuntime <<<"$state" || { echo "bench: createRuntime failed" >&2; exit 1; }
  "$HOOK" poststop <<<"$state"  # the sleeper lives on: the state names the pid whose booking goes
}
# children_cpu: CHILD_CPU_MS = user + system time of every child this shell waited for (bash's
# `times`, which must run in this shell: a subshell has its own children).
children_cpu() {
  times >"$E2E_TMP/times"
  CHILD_CPU_MS=$(awk 'NR == 2 { split($1, u, /[ms]/); split($2, s, /[ms]/); printf "%d", (u[1] * 60 + u[2] + s[1] * 60 + s[2]) * 1000 }' "$E2E_TMP/times")
}
children_cpu
cpu0=$CHILD_CPU_MS
start=$(now_ns)
for ((c = 0; c < M; c++)); do full_cycle; done
full=$((($(now_ns) - start) / M / 1000))
children_cpu
full_cpu=$(((CHILD_CPU_MS - cpu0) * 1000 / M))
[ "$(jq '.entries | length' "$E2E_TMP/state/ledger.json")" = 0 ] || { echo "bench: full path left bookings" >&2; exit 1; }

R=$((N / 10))
run_plain() { runc run --bundle "$E2E_TMP/plain" "gpufrac-bench-p$RANDOM$RANDOM"; }
run_share() { runc run --bundle "$E2E_TMP/share" "gpufrac-bench-s$RANDOM$RANDOM"; }
runc_plain=$(per_call_us runc "$R" run_plain)
runc_share=$(per_call_us runc-hook "$R" run_share)

echo "gpufrac-hook, no annotation (fast path):  ${fast} us per call   (exec floor /bin/true: ${fast_floor} us; ratio $(ratio "$fast" "$fast_floor"))"
echo "gpufrac-hook, full path (book + mount + release): ${full} us per createRuntime+poststop   (CPU, hook and helpers: ${full_cpu} us; 2 x exec floor: $((2 * fast_floor)) us; ratio $(ratio "$full" $((2 * fast_floor))))"
echo "runc run, trivial container:              ${runc_plain} us"
echo "runc run, with the hook and a 0.25 share: ${runc_share} us   (ratio $(ratio "$runc_share" "$runc_plain"))"
echo "iterations: fast ${N}, full ${M}, runc ${R}; driver.inject: ${DRIVER}; machine: $(nproc) cores, $(uname -r)"
