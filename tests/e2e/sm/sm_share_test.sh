#!/bin/bash
# SM sharing with real runc on the simulated two-GPU A100 node (docs/architecture.md "SM sharing"):
# gpufrac-hook and gpufrac-runtime book SM shares (gpufrac.io/compute-mode: sm) through `gpufrac mps
# provision`, which switches an empty GPU to MPS (compute mode EXCLUSIVE_PROCESS, the fake
# nvidia-cuda-mps-control started under the state directory); the containers are MPS clients of it
# with their SM percent and memory; time shares and SM shares never share a GPU; the daemon stops and
# the compute mode comes back once the last SM share has been gone for the idle timeout.
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/../containers.sh"
source "$(dirname "$0")/sm_lib.sh"
e2e_runc_test sm
sm_config a100-40gb-x2.yaml "compute: {mps-idle-timeout: 2}"
WRAPPER=$BIN_DIR/gpufrac-runtime
# A file this shell holds open (not close-on-exec) and locked, as `flock <lock> ctest` passes one down
# to every test: gpufrac, runc and the hook inherit it, the MPS daemons they start must not.
HELD=$E2E_TMP/held.lock
exec 9>"$HELD"
flock 9
PROBE='mps_probe alloc 512 launch 3 sleep_1ms; ls /dev/shm; cat /run/gpufrac/limits'

# 0. gpufrac info says which GPUs MPS can cap (compute capability 7.0+) and may switch.
run "$GPUFRAC" info
assert_contains "$OUT" "SM sharing (compute.sm-sharing: on-demand; an idle MPS daemon is kept 2 s)" "info: the policy"
assert_contains "$OUT" "0    yes  yes        MPS with SM limits (Volta+, compute capability 8.0); switched to SM mode (MPS) at its first SM share" \
  "info: GPU 0"
run "$GPUFRAC" info --json
assert_eq "$(jq -c '[.gpus[].sm_sharing | [.mps, .may_switch]]' <<<"$OUT")" "[[true,true],[true,true]]" "info --json"

# 1. The hook: the first SM share switches GPU 0 to MPS and starts its daemon; the container is a
#    client with its percent (set by the shim: a hook cannot set the environment) and its memory.
sm_bundle "$E2E_TMP/a" "$PROBE" gpufrac.io/compute=30 gpufrac.io/compute-mode=sm
run runc run --bundle "$E2E_TMP/a" "$P-a"
assert_eq "$RC" 0 "runc run with compute=30 compute-mode=sm: $OUT"
assert_contains "$OUT" "CUDA_MPS_PIPE_DIRECTORY=/run/gpufrac/mps/pipe
CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=30
CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=$GPU0=12160M
cuInit: CUDA_SUCCESS
context: CUDA_SUCCESS" "an MPS client capped at 30 % and 12160 MiB (30 % of 40536 MiB)"
assert_contains "$OUT" "gpufrac: cuMemAlloc_v2 of 536870912 refused: limit 12750684160 on $GPU0, 12348030976 in use by this container" \
  "the shim holds the limit"
assert_contains "$OUT" "alloc: 23 x 512 MiB = 11776 MiB, then CUDA_ERROR_OUT_OF_MEMORY" "the 24th 512 MiB is refused"
assert_contains "$OUT" "launch: 3 ok, then done" "its kernels run"
SERVER=$(mps_ctl "$GPU0" get_server_list)
assert_contains "$OUT" "cuda.shm.$SERVER" "the container's /dev/shm is the server's shm directory"
assert_contains "$OUT" "mps $GPU0 30" "the limit file names the SM share"
assert_not_contains "$OUT" "compute $GPU0" "an SM share has no compute line (no arbiter)"
assert_eq "$(compute_mode "$GPU0")" 3 "GPU 0 is in EXCLUSIVE_PROCESS mode"
assert_eq "$(daemon_field "$GPU0" state)" running "the daemon's record"
DAEMON=$(daemon_field "$GPU0" pid)
assert_eq "$(cat "$(mps_dir "$GPU0")/pipe/nvidia-cuda-mps-control.pid")" "$DAEMON" "the record names the daemon"
sm_holds_none "$DAEMON" "$HELD"
assert_eq "$(ledger '.version')" 7 "SM shares make the ledger version 7"
assert_eq "$(ledger '.entries | length')" 0 "the booking is released at poststop"
assert_eq "$(ledger '[.mps[].gpu]')" "[\"$GPU0\"]" "GPU 0 stays in MPS mode (idle) after it"
test -e "$E2E_TMP/state/compute/$GPU0.d" && fail "an SM share got an arbiter"

# wait_for <file>: until a client in a container says it is connected (at most 30 s).
wait_for() {
  local n=0
  while [ ! -e "$1" ] && [ $n -lt 300 ]; do sleep 0.1; n=$((n + 1)); done
  [ -e "$1" ] || fail "no $1 after 30 s"
}
F=$E2E_TMP/fake

# 2. Two SM containers at 30 and 70 on GPU 0 at once: both clients of one server, each with its
#    percent; status shows the GPU in SM mode, the shares' SM percents and the daemon.
sm_bundle "$E2E_TMP/b30" "mps_probe mark $F/ready30 wait $F/go launch 3 sleep_1ms" gpufrac.io/compute=30 \
  gpufrac.io/compute-mode=sm
sm_bundle "$E2E_TMP/b70" "mps_probe mark $F/ready70 wait $F/go launch 3 sleep_1ms" gpufrac.io/compute=70 \
  gpufrac.io/compute-mode=sm
runc run --bundle "$E2E_TMP/b30" "$P-b30" >"$E2E_TMP/b30.out" 2>&1 &
R30=$!
runc run --bundle "$E2E_TMP/b70" "$P-b70" >"$E2E_TMP/b70.out" 2>&1 &
R70=$!
wait_for "$F/ready30"
wait_for "$F/ready70"
DAEMON=$(daemon_field "$GPU0" pid)  # a new one when step 1's idled past the timeout meanwhile
run "$GPUFRAC" status --json
assert_eq "$(jq -c --arg u "$GPU0" '.devices[] | select(.uuid == $u) | [.compute_mode, .compute_booked_ppm, .mps.state, .mps.clients, .mps.daemon_pid]' <<<"$OUT")" \
  "[\"sm\",1000000,\"ACTIVE\",2,$DAEMON]" "status --json: GPU 0 in SM mode, 100 % of its SMs booked, 2 clients"
assert_eq "$(jq -c --arg u "$GPU0" '[.devices[] | select(.uuid == $u) | .shares[] | [.compute, .compute_mode]] | sort' <<<"$OUT")" \
  '[[300000,"sm"],[700000,"sm"]]' "the two SM shares"
run "$GPUFRAC" status
assert_contains "$OUT" "GPUs in SM mode (MPS daemons)" "status lists the MPS daemons"
grep -qE "^0 +${GPU0:0:12} +sm +$DAEMON +[0-9]+ +ACTIVE +2 " <<<"$OUT" || fail "status: the daemon's row: $OUT"
assert_contains "$OUT" "30 % sm" "a share's SM percent"
run "$GPUFRAC" metrics --textfile "$E2E_TMP"
OUT=$(cat "$E2E_TMP/gpufrac.prom")
assert_contains "$OUT" "gpufrac_gpu_mps_clients{gpu_index=\"0\",gpu_uuid=\"$GPU0\",device_uuid=\"$GPU0\"} 2" "metrics: clients"
assert_contains "$OUT" "gpufrac_gpu_compute_mode{gpu_index=\"0\",gpu_uuid=\"$GPU0\",device_uuid=\"$GPU0\",mode=\"sm\"} 1" \
  "metrics: the GPU's mode"
touch "$F/go"
wait $R30 || fail "the 30 % container: $(cat "$E2E_TMP/b30.out")"
wait $R70 || fail "the 70 % container: $(cat "$E2E_TMP/b70.out")"
assert_contains "$(cat "$E2E_TMP/b30.out")" "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=30" "the first client's cap"
assert_contains "$(cat "$E2E_TMP/b70.out")" "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=70" "the second client's cap"
assert_contains "$(cat "$E2E_TMP/b70.out")" "launch: 3 ok, then done" "its kernels ran"
rm -f "$F/go"

# 3. Mode separation. With GPU 0 full (70 % and 30 % of its SMs) a third SM share goes to GPU 1,
#    which switches; then a time share finds no GPU, refused in one line naming what each GPU is,
#    and nothing is booked.
sm_book() {  # sm_book <container> <percent> [annotation...]: an SM share by hand (pid: this shell)
  run "$GPUFRAC" mps provision --container "$1" --pid $$ --annotation gpufrac.io/compute="$2" \
    --annotation gpufrac.io/compute-mode=sm "${@:3}"
}
sm_book sm-a 70
assert_eq "$RC:$(jq -r .gpu_index <<<"$OUT")" "0:0" "70 % on GPU 0: $OUT"
sm_book sm-b 30
assert_eq "$RC:$(jq -r .gpu_index <<<"$OUT")" "0:0" "30 % on GPU 0, now full: $OUT"
sm_book sm-c 20
assert_eq "$RC:$(jq -r .gpu_index <<<"$OUT")" "0:1" "20 % goes to GPU 1: $OUT"
assert_contains "$(jq -r '.notes[0]' <<<"$OUT")" "started the MPS control daemon" "which switches to SM mode"
assert_eq "$(compute_mode "$GPU1")" 3 "GPU 1 is in EXCLUSIVE_PROCESS mode"
sm_holds_none "$(daemon_field "$GPU1" pid)" "$HELD"  # started by the CLI itself
BEFORE=$(ledger .entries)
sm_bundle "$E2E_TMP/t" "true" gpufrac.io/fraction=0.25
run runc run --bundle "$E2E_TMP/t" "$P-t"
assert_eq "$RC" 1 "a time share on a node whose GPUs are both in SM mode is refused"
assert_contains "$OUT" "gpufrac-hook: no GPU can take fraction=0.25: GPU 0 is in SM mode (MPS, 2 SM shares), GPU 1 is in SM mode (MPS, 1 SM share)" \
  "one line naming what each GPU is"
assert_eq "$(ledger .entries)" "$BEFORE" "nothing is booked"
for c in sm-a sm-b sm-c; do run "$GPUFRAC" ledger release --container $c; done
# Idle past the timeout (2 s), gc stops both daemons.
sleep 2.2
run "$GPUFRAC" gc
assert_eq "$RC" 0 "gc: $OUT"
assert_contains "$OUT" "Stopped the MPS daemon of GPU 0 (idle " "gc stops GPU 0's idle daemon"
assert_contains "$OUT" "Stopped the MPS daemon of GPU 1 (idle " "and GPU 1's"
# Both GPUs back to time sharing: a time share and an SM share go to different GPUs, and an SM share
# pinned to the time-sliced GPU is refused.
run "$GPUFRAC" ledger reserve --container t1 --pid $$ --annotation gpufrac.io/fraction=0.25
assert_eq "$RC" 0 "a time share: $OUT"
assert_contains "$OUT" "on $GPU0 for t1" "it goes to GPU 0"
sm_book sm-d 30
assert_eq "$RC:$(jq -r .gpu_index <<<"$OUT")" "0:1" "the SM share on GPU 1: $OUT"
sm_book sm-e 30 --annotation gpufrac.io/gpu=0
assert_eq "$RC:$OUT" "1:gpufrac: no GPU can take compute=30 compute-mode=sm gpu=0: GPU 0 is time-sliced (1 share) (pinned by gpufrac.io/gpu)" \
  "an SM share pinned to the time-sliced GPU is refused"
for c in t1 sm-d; do run "$GPUFRAC" ledger release --container $c; done
sleep 2.2
run "$GPUFRAC" gc
assert_contains "$OUT" "Stopped the MPS daemon of GPU 1 (idle " "gc stops GPU 1's idle daemon again"

# 4. Lifecycle: once the last SM share is gone for the idle timeout, the daemon stops and the
#    compute mode comes back (gc above). Its record, pipe and shm directories are gone.
assert_eq "$(compute_mode "$GPU0"):$(compute_mode "$GPU1")" ":" "both GPUs back in DEFAULT compute mode"
test -e "$(mps_dir "$GPU0")" && fail "GPU 0's MPS directory is left"
case "$(awk '{print $3}' "/proc/$DAEMON/stat" 2>/dev/null)" in ""|Z) ;; *) fail "the daemon $DAEMON still runs" ;; esac
assert_eq "$(ledger '.mps | length')" 0 "no GPU is recorded in MPS mode"
assert_eq "$(ledger .version)" 1 "the ledger is back to version 1"

# 5. gpufrac-runtime (Docker's variables): the environment carries the MPS client variables, so a
#    static binary, which no preloaded shim enters, is held by the MPS server's pinned limit.
sm_plain_bundle "$E2E_TMP/w" 'mps_probe_static alloc 512'
# (A static binary has no loader to find the driver kit's libcuda: the fake's own device list, as
# the driver would list the granted GPU.)
with_env "$E2E_TMP/w" GPUFRAC_COMPUTE=30 GPUFRAC_COMPUTE_MODE=sm GPUFRAC_FAKE_CUDA_DEVICES=$GPU0=40536Mi
run "$WRAPPER" --log "$E2E_TMP/runc.log" run --bundle "$E2E_TMP/w" "$P-w"
assert_eq "$RC" 0 "gpufrac-runtime run with GPUFRAC_COMPUTE_MODE=sm: $OUT"
assert_contains "$OUT" "CUDA_MPS_PIPE_DIRECTORY=/run/gpufrac/mps/pipe
CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=30
CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=$GPU0=12160M
cuInit: CUDA_SUCCESS" "the wrapper's environment"
assert_contains "$OUT" "alloc: 23 x 512 MiB = 11776 MiB, then CUDA_ERROR_OUT_OF_MEMORY" \
  "the static binary stops at the MPS server's pinned limit (12160 MiB)"
assert_not_contains "$OUT" "gpufrac: cuMemAlloc" "no shim in a static binary"

# 6. Bad input: one line each, nothing booked.
bad() {
  run "$GPUFRAC" mps provision --container bad --pid $$ "${@:2}"
  assert_eq "$RC:$OUT" "1:gpufrac: $1" "refused: ${*:2}"
  assert_eq "$(ledger '[.entries[] | select(.container_id == "bad")] | length')" 0 "nothing booked for ${*:2}"
}
bad 'gpufrac.io/compute-mode: sm needs gpufrac.io/compute, the percent of the GPU'"'"'s SMs the container'"'"'s kernels may use; add it, e.g. gpufrac.io/compute: "30"' \
  --annotation gpufrac.io/fraction=0.25 --annotation gpufrac.io/compute-mode=sm
bad 'gpufrac.io/compute-mode: sm needs gpufrac.io/compute, the percent of the GPU'"'"'s SMs the container'"'"'s kernels may use; add it, e.g. gpufrac.io/compute: "30"' \
  --annotation gpufrac.io/compute-mode=sm
bad 'gpufrac.io/compute: does not apply to gpufrac.io/mig-profile (a MIG instance owns its share of the GPU'"'"'s time); use it with gpufrac.io/fraction or gpufrac.io/memory, or on its own' \
  --annotation gpufrac.io/mig-profile=1g.5gb --annotation gpufrac.io/compute=30 --annotation gpufrac.io/compute-mode=sm
bad 'gpufrac.io/priority: high does not apply to gpufrac.io/compute-mode sm (MPS runs every client'"'"'s kernels at once and cannot preempt one client for another); use normal or leave it out' \
  --annotation gpufrac.io/compute=30 --annotation gpufrac.io/compute-mode=sm --annotation gpufrac.io/priority=high
sm_bundle "$E2E_TMP/bad" "true" gpufrac.io/compute-mode=sm gpufrac.io/priority=high gpufrac.io/compute=30
run runc run --bundle "$E2E_TMP/bad" "$P-bad"
assert_eq "$RC" 1 "the hook refuses it too"
assert_contains "$OUT" "gpufrac-hook: gpufrac.io/priority: high does not apply to gpufrac.io/compute-mode sm" "with the line"
sm_end
finish
