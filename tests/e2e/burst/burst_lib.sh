# Helpers for the burstable-memory tests (sourced after ../lib.sh and ../containers.sh): a node whose
# GPU memory every process shares (the fake libcuda.so.1 keeps each process's use beside the fake
# libnvidia-ml.so.1's state, tests/fakes/cuda/drvlimit.h), gpufrac on the real NVML backend over the
# fake library (the reclaimer's driver view), and containers running burst_agent, driven from here.
need_root
need_cmd runc
need_cmd jq
AGENT=$GPUFRAC_BUILD_DIR/tests/burst/burst_agent
[ -x "$AGENT" ] || { echo "FAIL: $AGENT is not built (ninja burst_tests)"; exit 1; }
MIB=$((1 << 20)) GIB=$((1 << 30))
declare -A AGENT_FD AGENT_N AGENT_DIR AGENT_CTR

# burst_node <machine> [yaml line...]: the config, the simulated root, the hook behind a script that
# hands it the fake driver's variables (a real node's hooks need none), the inventory.
burst_node() {
  local machine=$1
  shift
  FAKE=$E2E_TMP/fake
  mkdir -p "$FAKE"
  export GPUFRAC_FAKE_NVML_MACHINE=$MACHINES/$machine GPUFRAC_FAKE_NVML_STATE=$FAKE/nvml.json
  REAL_HOOK=${REAL_HOOK:-$HOOK} HOOK=$E2E_TMP/hook.sh
  printf '#!/bin/sh\nexport GPUFRAC_FAKE_NVML_MACHINE=%s GPUFRAC_FAKE_NVML_STATE=%s%s\nexec %s "$@"\n' \
    "$GPUFRAC_FAKE_NVML_MACHINE" "$GPUFRAC_FAKE_NVML_STATE" \
    "${GPUFRAC_FAKE_NVML_CGROUP_ROOT:+ GPUFRAC_FAKE_NVML_CGROUP_ROOT=$GPUFRAC_FAKE_NVML_CGROUP_ROOT}" "$REAL_HOOK" >"$HOOK"
  chmod 755 "$HOOK"
  # The fake driver counts no CUDA context: every byte it sees is one the shim counted.
  e2e_config "$machine" "shim: {path: $SHIM}" "hook: {path: $HOOK}" "cli: {path: $GPUFRAC}" \
    "burst: {reclaim: ${BURST_RECLAIM:-kill}, context-allowance: 0}" "$@"
  sed -i 's|^nvml: .*|nvml: {backend: nvml, library: '"$GPUFRAC_FAKES_DIR"'/libnvidia-ml.so.1}|' "$GPUFRAC_CONFIG"
  make_sim_root "$machine"
  run "$GPUFRAC" info --refresh
  [ "$RC" = 0 ] || { echo "FAIL: gpufrac info --refresh: $OUT"; exit 1; }
  GPU=$(jq -r '.gpus[0].uuid' <<<"$("$GPUFRAC" info --json)")
  GPU_MIB=$(($(jq -r '.gpus[0].memory_bytes' <<<"$("$GPUFRAC" info --json)") >> 20))
}

# agent_bundle <dir> [annotation k=v...]: burst_agent in a busybox root behind gpufrac-hook, on
# GPU 0 of the node, the fake driver's state bound in. BURST_ENV adds environment entries (JSON
# strings, comma-separated); BURST_CMD replaces the command.
agent_bundle() {
  local dir=$1
  shift
  # BURST_PLAIN=1: no hooks in the spec (gpufrac-runtime adds its own).
  if [ "${BURST_PLAIN:-0}" = 1 ]; then
    make_plain_bundle "$dir" "${BURST_CMD:-exec /bin/burst_agent}" "$@"
  else
    make_bundle "$dir" "${BURST_CMD:-exec /bin/burst_agent}" "$@"
  fi
  add_program "$dir/rootfs" "$AGENT"
  add_glibc "$dir/rootfs"
  jq --arg fake "$FAKE" --arg dev "$GPU=${GPU_MIB}Mi" --argjson extra "[${BURST_ENV:-}]" '
    .process.env += ["GPUFRAC_FAKE_NVML_STATE=" + $fake + "/nvml.json", "GPUFRAC_FAKE_CUDA_DEVICES=" + $dev] + $extra
    | .mounts += [{destination: $fake, type: "bind", source: $fake, options: ["rbind", "rw"]}]
  ' "$dir/config.json" >"$dir/config.json.new" && mv "$dir/config.json.new" "$dir/config.json"
}

# agent_fifo <name> <prefix> <container>: an agent reading <prefix>.in (a FIFO made and held open
# here) and answering in <prefix>.out, in the container named.
agent_fifo() {
  local name=$1 prefix=$2 fd
  rm -f "$prefix.in" "$prefix.out" "$prefix.err"
  mkfifo "$prefix.in"
  exec {fd}<>"$prefix.in"
  AGENT_FD[$name]=$fd AGENT_N[$name]=0 AGENT_DIR[$name]=$prefix AGENT_CTR[$name]=$3
}

# agent_start <name> <bundle> [runtime]: creates and starts the container with the agent's stdin on a
# FIFO this shell holds, its stdout in <bundle>.out and its stderr in <bundle>.err; waits for
# "0 ready". RC and OUT (what the runtime printed) as run's.
agent_start() {
  local name=$1 dir=$2 rt=${3:-runc}
  agent_fifo "$name" "$dir" "$name"
  set +e
  "$rt" create --bundle "$dir" "$name" <"$dir.in" >"$dir.out" 2>"$dir.err"
  RC=$?
  set -e
  OUT=$(cat "$dir.err")
  [ "$RC" = 0 ] || return 0
  runc start "$name"
  agent_wait "$name" 0
}

# agent_wait <name> <n>: the answer numbered n in $REPLY ("" after 15 s, or once the container is
# gone).
agent_wait() {
  local name=$1 n=$2 out=${AGENT_DIR[$1]}.out i
  REPLY=""
  for i in $(seq 600); do
    REPLY=$( (sed -n "s/^$n //p" "$out" 2>/dev/null || true) | head -1)
    [ -n "$REPLY" ] && return 0
    [ "$(runc state "${AGENT_CTR[$name]}" 2>/dev/null | jq -r .status)" = running ] || return 0
    sleep 0.025
  done
}

# agent <name> <command>: sends it and waits for its answer ($REPLY).
agent() {
  local name=$1
  AGENT_N[$name]=$((AGENT_N[$name] + 1))
  echo "$2" >&"${AGENT_FD[$name]}"
  agent_wait "$name" "${AGENT_N[$name]}"
}

# agent_gone <name>: true once the container stopped (its agent was stopped).
agent_gone() {
  local i
  for i in $(seq 200); do
    [ "$(runc state "$1" 2>/dev/null | jq -r .status)" != running ] && return 0
    sleep 0.025
  done
  return 1
}

# agent_stop <name>: closes its stdin (the agent exits) and deletes the container (poststop).
agent_stop() {
  local name=$1
  eval "exec ${AGENT_FD[$name]}>&-" 2>/dev/null || true
  agent_gone "$name" || runc kill "$name" KILL >/dev/null 2>&1 || true
  runc delete -f "$name" >/dev/null 2>&1 || true
  unset "AGENT_FD[$name]"
}

# agent_fill <name> <MiB each> <count>: that many allocations; $OKS how many succeeded, $REPLY the last.
agent_fill() {
  local i
  OKS=0
  for i in $(seq "$3"); do
    agent "$1" "a $2"
    [ "$REPLY" = ok ] || return 0
    OKS=$((OKS + 1))
  done
}

# The reclaimer's pid from its lock file while that process runs ("" when none does). Not by taking
# the lock: a test holding it, however briefly, would keep a reclaimer from starting.
reclaimer_pid() { lock_holder reclaimer.lock; }
# The keeper's pid (reclaim/reclaim_keeper.hpp), from its lock file, while it runs.
keeper_pid() { lock_holder reclaimer.keeper; }
lock_holder() {
  local pid
  pid=$(cat "$E2E_TMP/state/$1" 2>/dev/null || true)
  [ -n "$pid" ] && tr '\0' ' ' 2>/dev/null <"/proc/$pid/cmdline" | grep -q "^$GPUFRAC " && echo "$pid" || true
}
# wait_reclaimer: until the reclaimer runs (up to 5 s), then one more pass for its beat.
wait_reclaimer() {
  local i
  for i in $(seq 200); do
    if [ -n "$(reclaimer_pid)" ]; then sleep 0.1; return 0; fi
    sleep 0.025
  done
  fail "no reclaimer runs"
}
# stop_reclaimer: kills this test's keeper and reclaimer together (a keeper left would take over),
# by the pids their lock files hold, until neither runs.
stop_reclaimer() {
  local pids _
  for _ in 1 2 3 4 5; do
    pids="$(keeper_pid) $(reclaimer_pid)"
    [ -z "${pids// /}" ] && return 0
    kill -9 $pids 2>/dev/null || true
    sleep 0.1
  done
}
