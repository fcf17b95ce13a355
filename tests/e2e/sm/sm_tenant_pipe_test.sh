#!/bin/bash
# A hostile SM tenant and its GPU's MPS pipe directory (docs/architecture.md "SM sharing" and
# "Trust model"), from a real runc container through gpufrac-hook. The tenant plants a symlink to a
# host file where the daemon opens its state file, removes the daemon's control socket (so the next
# SM booking restarts the daemon) and writes the pid of a host process (a `sleep`) into
# nvidia-cuda-mps-control.pid over and over. Then:
#  - the restarted daemon runs in a fresh pipe directory: the host file is untouched and nothing the
#    tenant wrote is there;
#  - the record and status name the daemon gpufrac started, never the host process;
#  - gc stops that daemon and signals nothing else: the host `sleep` lives;
#  - `gpufrac mps provision` prints its answer only: no control shell complaint on stderr.
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/../containers.sh"
source "$(dirname "$0")/sm_lib.sh"
e2e_runc_test smpipe
sm_config a100-40gb-x1.yaml
GPU=GPU-894e9a6d-f600-b098-3d59-138988473c2c
F=$E2E_TMP/fake
sleep 600 &
VICTIM=$!
e2e_on_exit() {
  runc_cleanup "$P"
  kill "$VICTIM" 2>/dev/null || true
}
HOSTFILE=$E2E_TMP/host-file.txt
echo "a host file the daemon must never open" >"$HOSTFILE"
wait_for() {
  local n=0
  while [ ! -e "$1" ] && [ $n -lt 300 ]; do sleep 0.1; n=$((n + 1)); done
  [ -e "$1" ] || fail "no $1 after 30 s"
}

# 1. The tenant: an SM share whose process attacks its pipe directory until told to stop.
B=busybox
TENANT="cd /run/gpufrac/mps/pipe && ls; $B ln -sf $HOSTFILE fake-mps-state && $B rm -f control && touch $F/planted;
while [ ! -e $F/stop ]; do echo $VICTIM >nvidia-cuda-mps-control.pid; $B rm -f control; done"
sm_bundle "$E2E_TMP/t" "$TENANT" gpufrac.io/compute=30 gpufrac.io/compute-mode=sm
runc run --bundle "$E2E_TMP/t" "$P-t" >"$E2E_TMP/t.out" 2>&1 &
RT=$!
wait_for "$F/planted"
FIRST=$(daemon_field "$GPU" pid)

# 2. The next SM booking finds a daemon that does not answer and starts a fresh one.
"$GPUFRAC" mps provision --container h2 --pid $$ --annotation gpufrac.io/compute=20 \
  --annotation gpufrac.io/compute-mode=sm >"$E2E_TMP/provision.out" 2>"$E2E_TMP/provision.err" ||
  fail "the next SM booking: $(cat "$E2E_TMP/provision.out" "$E2E_TMP/provision.err")"
assert_contains "$(cat "$E2E_TMP/provision.out")" "did not answer" "the daemon that did not answer is replaced"
assert_eq "$(cat "$E2E_TMP/provision.err")" "" "nothing on stderr (no control shell complaint)"
touch "$F/stop"
wait $RT || fail "the tenant: $(cat "$E2E_TMP/t.out")"
assert_not_contains "$(cat "$E2E_TMP/t.out")" "control.log" "the daemon's log is not in what a container mounts"
assert_not_contains "$(cat "$E2E_TMP/t.out")" "daemon.json" "nor its record"

# 3. What the tenant wrote decided nothing.
assert_eq "$(tr -d '\0' <"$HOSTFILE")" "a host file the daemon must never open" "the planted symlink's target is untouched"
PIPE=$(mps_dir "$GPU")/pipe
test -L "$PIPE/fake-mps-state" && fail "the fresh daemon's pipe directory holds the tenant's symlink"
DAEMON=$(daemon_field "$GPU" pid)
[ "$DAEMON" != "$VICTIM" ] || fail "the record names the host process $VICTIM"
[ "$DAEMON" != "$FIRST" ] || fail "the daemon was not restarted"
assert_contains "$(tr '\0' ' ' <"/proc/$DAEMON/cmdline")" "nvidia-cuda-mps-control" "the record names the daemon"
run "$GPUFRAC" status --json
assert_eq "$(jq -r '.devices[0].mps.daemon_pid' <<<"$OUT")" "$DAEMON" "status names the daemon gpufrac started"
mps_ctl "$GPU" get_server_list >/dev/null 2>&1 || fail "the fresh daemon answers in its fresh pipe directory"

# 4. gc stops the daemon and nothing else.
run "$GPUFRAC" ledger release --container h2
sm_end
kill -0 "$VICTIM" 2>/dev/null || fail "the host process $VICTIM was killed"
grep -q "daemon $VICTIM .*killed" "$E2E_TMP/gpufrac.log" && fail "gpufrac says it killed the host process $VICTIM"
finish
