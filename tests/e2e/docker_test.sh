#!/bin/bash
# gpufrac-runtime under Debian's real Docker engine (docker.io 20.10: no --annotation, no CDI),
# started privately by the test with its own data root, exec root, socket and daemon.json (no
# systemd; the host's /etc/docker is never touched):
#   `gpufrac runtime configure docker` writes the runtime with runtimeArgs naming gpufrac's config
#   (dockerd's environment does not reach the runtime, and this dockerd has no GPUFRAC_CONFIG);
#   four `docker run -d --runtime gpufrac --pid=host -e GPUFRAC_FRACTION=0.25` containers on a
#   simulated one-GPU node, the fifth refused with the capacity line in docker's output, `gpufrac
#   status` listing the four, CUDA stopping at the limit inside one (docker exec), `docker rm -f`
#   releasing each share, `docker run --rm` leaving nothing; no request: nothing booked; a label
#   or a misspelt variable instead of a request: a warning in gpufrac's log, nothing booked;
#   `-e GPUFRAC_GPUS=2` on a two-GPU node: both GPUs, two half shares fill them, a third refused;
#   without --pid=host: refused, and on a node with require-host-pid: false a share that works.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/containers.sh"
source "$(dirname "$0")/wrapper.sh"
need_root
need_cmd dockerd
need_cmd jq
# Debian's client (a client elsewhere in PATH may speak another API version).
DOCKER_CLI=/usr/bin/docker
[ -x "$DOCKER_CLI" ] || DOCKER_CLI=$(command -v docker) || skip "needs docker"
e2e_tmp
D=$E2E_TMP/docker
export DOCKER_HOST=unix://$D/docker.sock
docker_() { timeout 120 "$DOCKER_CLI" "$@"; }
e2e_on_exit() {
  if [ -S "$D/docker.sock" ]; then
    local ids
    ids=$("$DOCKER_CLI" ps -aq 2>/dev/null || true)
    # shellcheck disable=SC2086
    [ -z "$ids" ] || timeout 60 "$DOCKER_CLI" rm -f $ids >/dev/null 2>&1 || true
  fi
  if [ -n "${DOCKERD_PID:-}" ]; then
    kill "$DOCKERD_PID" 2>/dev/null || true  # dockerd stops the containerd it started
    for _ in $(seq 150); do kill -0 "$DOCKERD_PID" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$DOCKERD_PID" 2>/dev/null || true
  fi
  # Whatever dockerd left mounted under its roots (overlay layers, its own bind of the data root).
  grep -o " $D[^ ]*" /proc/mounts | sort -r | while read -r m; do umount -l "$m" 2>/dev/null || true; done
}
e2e_gpu_config a100-40gb-x1.yaml
LIMIT=$((40536 / 4 * 1024 * 1024))
GPU=$(jq -r '.gpus[0].uuid' <<<"$("$GPUFRAC" info --json)")

# 1. Configure: the runtime "gpufrac" with gpufrac's (non-default) config in its runtimeArgs.
mkdir -p "$D"
echo '{"log-level": "warn"}' >"$D/daemon.json"
run "$GPUFRAC" runtime configure docker --engine-config "$D/daemon.json" --runtime-path "$WRAPPER"
assert_eq "$RC" 0 "runtime configure docker: $OUT"
assert_eq "$(jq -c '.runtimes.gpufrac' "$D/daemon.json")" \
  "{\"path\":\"$WRAPPER\",\"runtimeArgs\":[\"--gpufrac-config\",\"$GPUFRAC_CONFIG\"]}" "daemon.json names the config"
assert_eq "$(jq -r '."log-level"' "$D/daemon.json")" warn "the rest of daemon.json is kept"

# A private dockerd: no GPUFRAC_CONFIG in its environment, no network set-up.
env -u GPUFRAC_CONFIG dockerd --config-file "$D/daemon.json" --data-root "$D/data" --exec-root "$D/exec" \
  --pidfile "$D/docker.pid" -H "$DOCKER_HOST" --iptables=false --ip6tables=false --bridge=none \
  >"$D/dockerd.log" 2>&1 &
DOCKERD_PID=$!
for _ in $(seq 300); do "$DOCKER_CLI" info >/dev/null 2>&1 && break; sleep 0.1; done
"$DOCKER_CLI" info >/dev/null 2>&1 || { tail -20 "$D/dockerd.log"; fail "dockerd did not start"; finish; }
assert_contains "$(docker_ info --format '{{json .Runtimes}}')" '"gpufrac"' "docker info lists the runtime"

# An image imported from a local rootfs: busybox, glibc and a CUDA program; no driver file.
make_cuda_rootfs "$E2E_TMP/rootfs"
tar -C "$E2E_TMP/rootfs" -c . | docker_ import - gpufrac-e2e:cuda >/dev/null
IMG=gpufrac-e2e:cuda
share_run() { run docker_ run --runtime gpufrac --pid=host "$@"; }

# 2. Four 0.25 shares by environment; the fifth refused with gpufrac's line in docker's output.
IDS=()
for i in 1 2 3 4; do
  share_run -d -e GPUFRAC_FRACTION=0.25 "$IMG" sleep 3600
  assert_eq "$RC" 0 "share $i of 4 starts: $OUT"
  IDS+=("$OUT")
done
assert_eq "$(ledger_count '.source == "wrapper" and .pid > 0 and .request == "fraction=0.25"')" 4 \
  "four attached wrapper bookings"
share_run -d -e GPUFRAC_FRACTION=0.25 "$IMG" sleep 3600
assert_eq "$RC" 125 "the fifth share is refused"
assert_contains "$OUT" "gpufrac: no GPU has" "docker run shows the capacity line"
assert_contains "$OUT" "(config: $GPUFRAC_CONFIG)" "and the config it was decided under"
assert_eq "$(ledger_count)" 4 "the refusal booked nothing"
run "$GPUFRAC" status --no-trunc
for id in "${IDS[@]}"; do assert_contains "$OUT" "$id" "status lists ${id:0:12}"; done
run "$GPUFRAC" status
assert_contains "$OUT" "${IDS[0]:0:12} " "status cuts ids to 12 characters as docker does"

# 3. Inside one of them: the limit file, and CUDA stopping at the limit (docker exec).
run docker_ exec "${IDS[0]}" cat /run/gpufrac/limits
assert_contains "$OUT" "device $GPU $LIMIT" "limit file: 1/4 of the GPU"
run docker_ exec "${IDS[0]}" sh -c "$CUDA_CHECK"
assert_eq "$RC" 0 "CUDA in docker exec: $OUT"
expect_cuda "docker exec in a share"

# 4. docker rm -f releases each share.
left=4
for id in "${IDS[@]}"; do
  docker_ rm -f "$id" >/dev/null || fail "docker rm -f ${id:0:12}"
  left=$((left - 1))
  assert_eq "$(ledger_count)" "$left" "docker rm -f ${id:0:12} released its share"
done
assert_eq "$(ls "$E2E_TMP/state/containers" | wc -l)" 0 "container files removed"

# 5. docker run --rm: the share while it runs, nothing after.
share_run --rm -e GPUFRAC_MEMORY=4Gi "$IMG" cat /run/gpufrac/limits
assert_eq "$RC" 0 "docker run --rm with a memory request: $OUT"
assert_contains "$OUT" "device $GPU $((4 << 30))" "4 GiB limit"
assert_eq "$(ledger_count)" 0 "docker run --rm left no booking"
assert_eq "$(ls "$E2E_TMP/state/containers" | wc -l)" 0 "nor files"

# 6. No request (and no --pid=host): passed through untouched, nothing booked.
run docker_ run --rm --runtime gpufrac "$IMG" sh -c 'test -e /run/gpufrac && echo HAS-GPUFRAC; test -e /dev/nvidia0 && echo HAS-GPU; echo done'
assert_eq "$RC:$OUT" "0:done" "a container without a request sees no GPU"
assert_eq "$(ledger_count)" 0 "nothing booked"

# 7. A label: a warning. A variable named like the annotation and a misspelt variable: refused
#    (requests.unknown: refuse, the default), warnings under requests.unknown: warn. Nothing booked.
LOG=$E2E_TMP/gpufrac.log
run docker_ run --rm --runtime gpufrac --label gpufrac.io/fraction=0.25 "$IMG" true
assert_eq "$RC" 0 "a label does not stop the container: $OUT"
assert_contains "$(grep ' warning: ' "$LOG")" 'label "gpufrac.io/fraction" is not a request: Docker does not pass labels to the runtime; use -e GPUFRAC_FRACTION=0.25' \
  "the label gets a warning"
run docker_ run --rm --runtime gpufrac -e GPUFRAC_FRACTON=0.25 "$IMG" true
assert_eq "$RC" 125 "a misspelt variable is refused: $OUT"
assert_contains "$OUT" 'gpufrac: "GPUFRAC_FRACTON" in the container'"'"'s environment is not a gpufrac request (did you mean GPUFRAC_FRACTION?)' \
  "docker shows the refusal"
echo "requests: {unknown: warn}" >>"$GPUFRAC_CONFIG"
run docker_ run --rm --runtime gpufrac -e gpufrac.io/fraction=0.25 -e GPUFRAC_FRACTON=0.25 "$IMG" true
assert_eq "$RC" 0 "under requests.unknown: warn misnamed variables do not stop the container: $OUT"
assert_contains "$(cat "$LOG")" '"gpufrac.io/fraction" in the container'"'"'s environment is not a gpufrac request; use GPUFRAC_FRACTION' \
  "a variable named like the annotation gets a warning"
assert_contains "$(cat "$LOG")" '"GPUFRAC_FRACTON" in the container'"'"'s environment is not a gpufrac request (did you mean GPUFRAC_FRACTION?)' \
  "a misspelt variable gets a warning"
assert_eq "$(ledger_count)" 0 "nothing booked for labels or misspelt variables"
sed -i '/^requests:/d' "$GPUFRAC_CONFIG"

# 8. Refusals: without --pid=host (the message says how), and a malformed value.
run docker_ run --rm --runtime gpufrac -e GPUFRAC_FRACTION=0.25 "$IMG" true
assert_eq "$RC" 125 "a share without --pid=host is refused"
assert_contains "$OUT" "gpufrac needs the host PID namespace: run it with --pid=host (podman, docker" "the message says how"
share_run --rm -e GPUFRAC_FRACTION=1.5 "$IMG" true
assert_eq "$RC" 125 "malformed request refused"
assert_contains "$OUT" 'gpufrac: GPUFRAC_FRACTION: "1.5" is out of range' "the message names the variable"
assert_eq "$(ledger_count)" 0 "refusals booked nothing"

# 8b. Without --pid=host on a node that allows it (require-host-pid: false; the same config file,
# rewritten): the container has its own PID namespace, CUDA stops at its limit, --rm releases it.
e2e_gpu_config a100-40gb-x1.yaml "require-host-pid: false"
run docker_ run --rm --runtime gpufrac -e GPUFRAC_FRACTION=0.25 "$IMG" sh -c 'echo "init is $$"; '"$CUDA_CHECK"
assert_eq "$RC" 0 "a share without --pid=host where the node allows it: $OUT"
assert_contains "$OUT" "init is 1" "the container has its own PID namespace"
expect_cuda "docker run without --pid=host"
assert_eq "$(ledger_count)" 0 "--rm released it"

# 9. Several GPUs by environment (GPUFRAC_GPUS) on a two-GPU node (the same config file, rewritten):
# both GPUs' nodes and limits; two half shares on both GPUs fill them and a third is refused; three
# GPUs of two are refused; nothing booked by a refusal.
e2e_gpu_config a100-40gb-x2.yaml
"$GPUFRAC" info --refresh >/dev/null
G0=$(jq -r '.gpus[0].uuid' <<<"$("$GPUFRAC" info --json)")
G1=$(jq -r '.gpus[1].uuid' <<<"$("$GPUFRAC" info --json)")
share_run --rm -e GPUFRAC_GPUS=2 "$IMG" sh -c 'cat /run/gpufrac/limits; ls /dev'
assert_eq "$RC" 0 "docker run -e GPUFRAC_GPUS=2: $OUT"
assert_contains "$OUT" "device $G0 $((40536 * 1024 * 1024))" "GPU 0 whole"
assert_contains "$OUT" "device $G1 $((40536 * 1024 * 1024))" "GPU 1 whole"
assert_eq "$(grep '^nvidia[0-9]$' <<<"$OUT" | tr '\n' ' ')" "nvidia0 nvidia1 " "both GPUs' nodes"
IDS=()
for i in 1 2; do
  share_run -d -e GPUFRAC_GPUS=2 -e GPUFRAC_FRACTION=0.5 "$IMG" sleep 3600
  assert_eq "$RC" 0 "two-GPU half share $i: $OUT"
  IDS+=("$OUT")
done
assert_eq "$(ledger_count '.request == "fraction=0.5 gpus=2" and .pid > 0')" 4 "two shares, each on both GPUs, attached"
share_run -d -e GPUFRAC_GPUS=2 -e GPUFRAC_FRACTION=0.5 "$IMG" sleep 3600
assert_eq "$RC" 125 "the third two-GPU half share is refused"
assert_contains "$OUT" "gpufrac: fraction=0.5 gpus=2 needs 2 GPUs and none can take it: GPU 0 0 B free (needs 19.8 GiB), GPU 1 0 B free (needs 19.8 GiB)" \
  "docker run shows the one-line refusal naming each GPU"
share_run --rm -e GPUFRAC_GPUS=3 "$IMG" true
assert_eq "$RC" 125 "three GPUs of two are refused"
assert_contains "$OUT" "gpufrac: gpufrac.io/gpus: 3 GPUs asked for and this node has 2; use 1 to 2" \
  "the refusal names the key (the allocator words it for the annotation, as for a GPUFRAC_GPU pin)"
assert_eq "$(ledger_count)" 4 "the refusals booked nothing"
for id in "${IDS[@]}"; do docker_ rm -f "$id" >/dev/null || fail "docker rm -f ${id:0:12}"; done
assert_eq "$(ledger_count)" 0 "docker rm -f released both GPUs of each share"
finish
