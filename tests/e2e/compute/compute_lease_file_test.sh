#!/bin/bash
# A tenant that resizes or chmods its GPU's compute lease file (issue 42 items 1, 2 and 7), from a real
# runc container booked through gpufrac-hook on the simulated GPU; the host never maps that file
# (limits/host/arbiter_lease.hpp):
#   1. flips it between 0 bytes and its size for 8 s: `gpufrac status`, `metrics` and `gc` never die of
#      a signal, and six neighbours start on the GPU (on main status died of SIGBUS about every
#      other run, and neighbours' starts failed with "error running hook: signal: bus error");
#   2. grows it to 1 MiB: status says so, the next booking shrinks it back in place with one log
#      line, and once every container is gone gc removes the GPU's arbiter (on main the grown file
#      stayed for good);
#   3. chmods it 0600 while a neighbour's process under uid 1000 starts launching: that process says it
#      waits its turn, is flagged as having run unarbitrated, status flags the mode, gc puts 0666
#      back, and the process then joins the arbiter and takes leases (on main it said "not
#      arbitrated" and never joined).
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/../containers.sh"
source "$(dirname "$0")/compute_lib.sh"
e2e_runc_test leasefile
e2e_gpu_config a100-40gb-x2.yaml
unset GPUFRAC_FAKE_CUDA_DEVICES # the injected driver knows the machine's GPUs
read -r GPU0 _ < <(jq -r '[.gpus[].uuid] | join(" ")' <<<"$("$GPUFRAC" info --json)")
ST=$E2E_TMP/state
LEASE=$ST/compute/$GPU0.d/$GPU0
HOSTILE=$GPUFRAC_BUILD_DIR/tests/compute/arbiter_hostile
sim_gpu
chmod 666 "$SIMGPU" # the chmod victim runs under uid 1000

# hostile NAME CMD: a container with compute 30 on GPU 0 running CMD (arbiter_hostile in its rootfs).
hostile() {
  hook_bundle "$1" "$2" gpufrac.io/gpu=0 gpufrac.io/compute=30
  add_program "$E2E_TMP/$1/rootfs" "$HOSTILE" /bin/arbiter_hostile
  start "$1"
}
# no_signal WHAT CMD...: runs CMD; its exit status is not a signal's.
no_signal() {
  local what=$1 rc=0
  shift
  "$@" >/dev/null 2>&1 || rc=$?
  [ "$rc" -lt 128 ] || fail "$what died of signal $((rc - 128))"
}
tampered_lines() { "$GPUFRAC" status --json | jq -r --arg g "$GPU0" '.devices[] | select(.uuid == $g) | .compute_arbiter_tampered // [] | .[]'; }
leases_of() { "$ATOOL" show "$LEASE" | sed -n "s/^slot [0-9]* key=$1[^ ]* .* leases=\([0-9]*\) .*/\1/p"; }

# 1. The lease file cut short again and again.
hostile flip "arbiter_hostile flip 10"
sleep 0.5
for i in 1 2 3 4 5 6; do
  hook_bundle "flip-n$i" "true" gpufrac.io/gpu=0 gpufrac.io/compute=10
  start "flip-n$i"
  no_signal "gpufrac status ($i)" "$GPUFRAC" status
  no_signal "gpufrac status --json ($i)" "$GPUFRAC" status --json
  no_signal "gpufrac metrics ($i)" "$GPUFRAC" metrics --once
  no_signal "gpufrac gc ($i)" "$GPUFRAC" gc
done
for i in $(seq 20); do no_signal "gpufrac status --json (flip, $i)" "$GPUFRAC" status --json; done
wait_stopped flip flip-n1 flip-n2 flip-n3 flip-n4 flip-n5 flip-n6
assert_contains "$(cat "$E2E_TMP/flip.out")" "flip files=1" "the tenant flipped GPU 0's lease file"
echo "flip: $(cat "$E2E_TMP/flip.out") | status: $(tampered_lines | tr '\n' ' ')"
"$GPUFRAC" gc >/dev/null
assert_eq "$(ls "$ST/compute" | grep -c . || true)" 0 "flip: gc removed the arbiter of a GPU without shares"

# 2. The lease file grown to 1 MiB (within the bound of its tmpfs: compute_lease_bound_test.sh).
hostile grow "arbiter_hostile grow 1048576; sleep 60"
for _ in $(seq 50); do grep -q '^grow ' "$E2E_TMP/grow.out" && break; sleep 0.1; done
assert_contains "$(cat "$E2E_TMP/grow.out")" "grow files=1 size=1048576" "the tenant grew GPU 0's lease file"
assert_contains "$(tampered_lines)" "its lease file is 1048576 bytes (the host made 256)" "grow: status says so"
hook_bundle grow-n "true" gpufrac.io/gpu=0 gpufrac.io/compute=10
start grow-n
assert_eq "$(stat -c %s "$LEASE")" 256 "grow: the next booking shrank the lease file back"
assert_eq "$(grep -c "compute arbiter $LEASE: its lease file is 1048576 bytes (the host made 256); repaired in place" "$E2E_TMP/gpufrac.log")" 1 \
  "grow: one log line"
assert_contains "$(tampered_lines)" "the host repaired its lease file's size" "grow: status flags the repair"
runc kill "$P-grow" KILL >/dev/null 2>&1 || true
wait_stopped grow grow-n
out=$("$GPUFRAC" gc)
assert_contains "$out" "Removed the compute arbiters of 1 GPU(s) without compute shares." "grow: gc says it"
[ ! -e "$LEASE" ] && [ ! -e "$LEASE.slots" ] || fail "grow: gc removed GPU 0's arbiter: $(ls -l "$ST/compute")"

# 3. chmod 0600 while another uid's process is about to launch.
hook_bundle chmod-victim "$(synced t3 async:8)" gpufrac.io/gpu=0 gpufrac.io/compute=70
jq '.process.user = {uid: 1000, gid: 1000}' "$E2E_TMP/chmod-victim/config.json" >"$E2E_TMP/c.json" &&
  mv "$E2E_TMP/c.json" "$E2E_TMP/chmod-victim/config.json"
start chmod-victim
hostile chmod "arbiter_hostile chmod 600; sleep 12"
for _ in $(seq 50); do grep -q '^chmod ' "$E2E_TMP/chmod.out" && break; sleep 0.1; done
assert_contains "$(cat "$E2E_TMP/chmod.out")" "chmod files=1 err=0" "the tenant chmod-ed GPU 0's lease file"
go t3 0 >/dev/null # the victim starts launching now, after the chmod
sleep 3
why=$(tampered_lines)
assert_eq "$(stat -c %a "$LEASE")" 600 "chmod: the tenant changed the mode"
assert_contains "$why" "its lease file's mode is 0600 (the host made 0666)" "chmod: status flags the mode"
assert_contains "$why" "container $P-chmod-victim@" "chmod: status flags the victim's unarbitrated run"
assert_eq "$(leases_of "$P-chmod-victim")" 0 "chmod: the victim could not join meanwhile"
out=$("$GPUFRAC" gc)
assert_contains "$out" "Repaired the compute lease file of $GPU0: its lease file's mode is 0600 (the host made 0666)." \
  "chmod: gc repairs the mode"
assert_eq "$(stat -c %a "$LEASE")" 666 "chmod: mode 0666 again"
sleep 2
joined=$(leases_of "$P-chmod-victim")
wait_stopped chmod-victim chmod
out=$(cat "$E2E_TMP/chmod-victim.out")
echo "chmod: $(grep -E '^(gpufrac|phase)' <<<"$out" | tr '\n' ' ') | leases after the repair: $joined"
grep -q "^gpufrac: compute arbiter .*$GPU0: cannot open read-write: Permission denied; launches on $GPU0 wait their turn (at most [0-9]* ms), then run unarbitrated until this process can open .* read-write$" <<<"$out" ||
  fail "chmod: the victim says it waits its turn: $out"
[ -n "$joined" ] && [ "$joined" -gt 0 ] || fail "chmod: the victim joined the arbiter once the mode was repaired ($joined)"
grep -q '^phase async launches=[0-9]* rc=0$' <<<"$out" || fail "chmod: the victim ran to its end without an error: $out"
finish
