#!/bin/bash
# Hostile tenants of a GPU's compute arbiter (include/gpufrac/arbiter_abi.h "Trust"), in real runc
# containers booked through gpufrac-hook on the simulated GPU: a victim (compute 70, an asynchronous
# launch loop of 12 s) beside a container with compute 30 that
#   1. keeps forging the lease ("held by me, deadline now + lease, busy") for 6 s, launching nothing:
#      no launch of the victim waits longer than the bound it names in its one line on stderr (+100 ms
#      for the VM's scheduling); `gpufrac status` and gpufrac_gpu_compute_arbiter_tampered flag the
#      GPU; once the forger stops, the victim takes leases again;
#   2. writes random bytes over every arbiter file it can open for 6 s (the lease file; the slots file
#      is read-only): no launch of the victim waits longer than its largest bound, nothing crashes,
#      status says the lease file was tampered with;
#   3. tries to rewrite weights and priorities (the slots file refuses every way: EROFS, EACCES), then
#      runs a launch loop of its own: the victim keeps 70 +- 5 % of the GPU over 10 s.
# After each, both containers are gone and their bookings and slots released.
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/../containers.sh"
source "$(dirname "$0")/compute_lib.sh"
e2e_runc_test hostile
e2e_gpu_config a100-40gb-x2.yaml
unset GPUFRAC_FAKE_CUDA_DEVICES # the injected driver knows the machine's GPUs
read -r GPU0 _ < <(jq -r '[.gpus[].uuid] | join(" ")' <<<"$("$GPUFRAC" info --json)")
ST=$E2E_TMP/state
HOSTILE=$GPUFRAC_BUILD_DIR/tests/compute/arbiter_hostile
sim_gpu

# pair NAME VICTIM_CMD HOSTILE_CMD: a victim (compute 70) and a hostile container (compute 30) on GPU 0.
pair() {
  hook_bundle "$1-victim" "$2" gpufrac.io/gpu=0 gpufrac.io/compute=70
  hook_bundle "$1-hostile" "$3" gpufrac.io/gpu=0 gpufrac.io/compute=30
  add_program "$E2E_TMP/$1-hostile/rootfs" "$HOSTILE" /bin/arbiter_hostile
  start "$1-victim"
  start "$1-hostile"
}
# leases_of KEY_PREFIX: the leases charged so far to the slot whose key starts with KEY_PREFIX.
leases_of() { "$ATOOL" show "$ST/compute/$GPU0.d/$GPU0" | sed -n "s/^slot [0-9]* key=$1[^ ]* .* leases=\([0-9]*\) .*/\1/p"; }
# max_wait NAME: the victim's longest launch call (us).
max_wait() { sed -n 's/^wait async max_us=\([0-9]*\)$/\1/p' "$E2E_TMP/$1.out"; }
# released NAME: (both containers stopped and deleted) their bookings and slots gone.
released() {
  assert_eq "$("$GPUFRAC" status --json | jq '[.devices[].shares[]] | length')" 0 "$1: every booking released"
  assert_eq "$(slots "$ST" "$GPU0")" 0 "$1: every slot freed"
}
# tampered_lines: why status says GPU 0's arbiter was tampered with, one per line.
tampered_lines() { "$GPUFRAC" status --json | jq -r --arg g "$GPU0" '.devices[] | select(.uuid == $g) | .compute_arbiter_tampered // [] | .[]'; }

# 1. Forging the lease.
pair forge "$(synced t1 async:12)" "sleep 3; arbiter_hostile forge 6"
T0=$(go t1 1)
sleep_until $((T0 + 5 * 1000000000))
why=$(tampered_lines)
mkdir -p "$E2E_TMP/textfile"
"$GPUFRAC" metrics --textfile "$E2E_TMP/textfile" >/dev/null
sleep_until $((T0 + 9500000000))
before=$(leases_of "$P-forge-victim")
sleep_until $((T0 + 11 * 1000000000))
after=$(leases_of "$P-forge-victim")
wait_stopped forge-victim forge-hostile
out=$(cat "$E2E_TMP/forge-victim.out")
echo "forge: $(grep -E '^(gpufrac|phase)' <<<"$out" | tr '\n' ' ') | status: $why | leases $before -> $after"
assert_contains "$(cat "$E2E_TMP/forge-hostile.out")" "forge devices=1" "the forger held GPU 0's lease"
assert_eq "$(grep -c '^gpufrac:' <<<"$out")" 1 "the victim says it once"
bound=$(sed -n "s/^gpufrac: compute arbiter of $GPU0: no lease within \([0-9]*\) ms (the bound for this share); launches on $GPU0 run unarbitrated until the arbiter hands this container the lease again$/\1/p" <<<"$out")
[ -n "$bound" ] || fail "the victim's line names its bound: $out"
assert_le "$(max_wait forge-victim)" $(((bound + 100) * 1000)) "forge: the victim's longest launch wait (us)"
assert_contains "$why" "container $P-forge-victim@" "forge: status flags GPU 0"
assert_contains "$why" "waited past its bound and ran unarbitrated" "forge: and says how it knows"
grep -q "^gpufrac_gpu_compute_arbiter_tampered{gpu_index=\"0\".*} 1$" "$E2E_TMP/textfile/gpufrac.prom" ||
  fail "forge: gpufrac_gpu_compute_arbiter_tampered is 1 for GPU 0: $(grep tampered "$E2E_TMP/textfile/gpufrac.prom")"
[ -n "$before" ] && [ -n "$after" ] && [ "$after" -gt "$before" ] || fail "forge: the victim takes leases again once the forger stopped ($before -> $after)"
grep -q '^phase async launches=[0-9]* rc=0$' <<<"$out" || fail "forge: the victim ran to its end without an error: $out"
released forge

# 2. Random bytes over every arbiter file the tenant can open.
pair garbage "$(synced t2 async:12)" "sleep 3; arbiter_hostile garbage 6"
T0=$(go t2 1)
sleep_until $((T0 + 5 * 1000000000))
why=$(tampered_lines)
wait_stopped garbage-victim garbage-hostile
out=$(cat "$E2E_TMP/garbage-victim.out")
echo "garbage: $(grep -E '^(gpufrac|phase)' <<<"$out" | tr '\n' ' ') | status: $why"
assert_contains "$(cat "$E2E_TMP/garbage-hostile.out")" "garbage rw=2 refused=$GPU0.slots:EROFS" \
  "the tenant could open the lease file and its own lane only"
# The largest bound of a 70 % share: 4 x (20 + 50) + 280 + 100 ms, plus its last lease (at most lease
# + grace + busy) x 0.3 / 0.7; +100 ms for the VM.
assert_le "$(max_wait garbage-victim)" $(((660 + 350 * 3 / 7 + 100) * 1000)) "garbage: the victim's longest launch wait (us)"
grep -q '^phase async launches=[0-9]* rc=0$' <<<"$out" || fail "garbage: the victim ran to its end without an error: $out"
assert_contains "$why" "its lease file" "garbage: status says the lease file was overwritten"
released garbage

# 3. Rewriting weights and priorities, then competing.
pair weights "$(synced t3 async:12)" "arbiter_hostile weights; $(synced t3 async:12)"
T0=$(go t3 1)
sleep_until $((T0 + 1000000000))
window 10 weights-victim weights-hostile
wait_stopped weights-victim weights-hostile
echo "weights: $(cat "$E2E_TMP/weights-hostile.out" | head -1) | $(tr '\n' ' ' <<<"$OUT")"
assert_contains "$(cat "$E2E_TMP/weights-hostile.out")" "weights files=1 open=EROFS mmap=EACCES mprotect=EACCES chmod=EROFS" \
  "the slots file cannot be written from a container"
assert_near "$(share_of weights-victim)" 70 5 "weights: the victim keeps its share"
released weights
finish
