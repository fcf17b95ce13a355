#!/bin/bash
# The state directory's usage is bounded per container whatever a container writes
# (docs/architecture.md "Host state": each container's directory is a tmpfs of its own, 512 KiB).
# On a 64 MiB state tmpfs, 10 hostile containers (real runc, gpufrac-hook) each write as much as
# they can into everything of the state directory they can write (their usage region, appended to
# until the write fails; the read-only limit and preload files, refused) and try to grow it by
# truncating and regrowing it. Then: their own tmpfs hold at most 10 x 512 KiB, the state filesystem
# itself only their bookings; an 11th container still starts; status flags the 10 damaged regions
# and does not die; deleting the containers unmounts and removes their directories.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/containers.sh"
e2e_runc_test bound
STATE=$E2E_TMP/state
BOUND_KIB=512
e2e_on_exit() {
  runc_cleanup "$P"
  umount -R "$STATE" 2>/dev/null || true
}
e2e_gpu_config a100-40gb-x1.yaml
mount -t tmpfs -o size=64m tmpfs "$STATE"
used_kib() { df -B1K --output=used "$1" | tail -1 | tr -d ' '; }
key_of() { ls "$STATE/containers" | grep "^$1@"; }

# A first container writes the node's files (inventory cache, ledger, its reserve, counters, the
# GPU's arbiter files) and keeps running, so that gc keeps the GPU's arbiter files.
make_bundle "$E2E_TMP/first" 'exec sleep 600' gpufrac.io/fraction=0.05
runc run -d --bundle "$E2E_TMP/first" "$P-first" </dev/null >"$E2E_TMP/first.out" 2>&1 ||
  fail "a container starts: $(cat "$E2E_TMP/first.out")"
run "$GPUFRAC" gc  # the ledger's reserve at the size the ledger needs now
BEFORE=$(used_kib "$STATE")

# stderr is dropped: runc exec copies stdout and stderr through two pipes, so sh's "can't create"
# lines could land in the middle of the size line.
FILL='exec 2>/dev/null
cat /dev/zero >>/run/gpufrac/usage
echo x >>/run/gpufrac/limits 2>/dev/null && echo "limits written"
echo x >>/etc/ld.so.preload 2>/dev/null && echo "preload written"
: >/run/gpufrac/usage; cat /dev/zero >>/run/gpufrac/usage 2>/dev/null
stat -c "size %s" /run/gpufrac/usage'
for i in $(seq 10); do
  make_bundle "$E2E_TMP/h$i" 'exec sleep 600' gpufrac.io/fraction=0.05
  runc run -d --bundle "$E2E_TMP/h$i" "$P-h$i" </dev/null >"$E2E_TMP/h$i.out" 2>&1 ||
    fail "hostile container $i does not start: $(cat "$E2E_TMP/h$i.out")"
done
for i in $(seq 10); do
  run runc exec "$P-h$i" sh -c "$FILL"
  assert_not_contains "$OUT" "written" "container $i cannot write its read-only files"
  size=$(sed -n 's/^size //p' <<<"$OUT")
  [ -n "$size" ] && [ "$size" -le $((BOUND_KIB * 1024)) ] || fail "container $i grew its region to [$size] bytes (runc exec rc=$RC: $OUT)"
done

AFTER=$(used_kib "$STATE")
OWN=0
for i in $(seq 10); do OWN=$((OWN + $(used_kib "$STATE/containers/$(key_of "$P-h$i")"))); done
echo "state directory: $BEFORE KiB before, $AFTER KiB after; the 10 containers' own tmpfs: $OWN KiB"
[ "$OWN" -le $((10 * BOUND_KIB)) ] || fail "10 hostile containers took $OWN KiB, more than 10 x $BOUND_KIB KiB"
# On the state filesystem itself only their bookings (10 ledger entries and the reserve's room).
[ "$((AFTER - BEFORE))" -le 64 ] || fail "the state filesystem itself grew by $((AFTER - BEFORE)) KiB"

make_bundle "$E2E_TMP/next" 'true' gpufrac.io/fraction=0.05
run runc run --bundle "$E2E_TMP/next" "$P-next"
assert_eq "$RC" 0 "an 11th container still starts: $OUT"

run "$GPUFRAC" status --json
assert_eq "$RC" 0 "status reads the node"
assert_eq "$(jq '[.devices[].shares[] | select(.usage_region_damaged != null)] | length' <<<"$OUT")" 10 \
  "status flags the 10 grown regions"

for i in $(seq 10) first; do
  c=$P-h$i
  [ "$i" = first ] && c=$P-first
  runc kill "$c" KILL >/dev/null 2>&1 || true
  for _ in $(seq 100); do [ "$(runc state "$c" 2>/dev/null | jq -r .status)" = stopped ] && break; sleep 0.05; done
  runc delete "$c" >/dev/null 2>&1 || fail "container $i cannot be deleted"
done
assert_eq "$(ls "$STATE/containers" | grep -c "^$P-" || true)" 0 "poststop removed their directories"
assert_eq "$(grep -c " $STATE/containers/" /proc/self/mounts || true)" 0 "and unmounted their tmpfs"
run "$GPUFRAC" gc
# gc also removes the GPU's arbiter files with its last share: at most what it held before.
[ "$(used_kib "$STATE")" -le "$BEFORE" ] || fail "the state directory is back to what it held: $(used_kib "$STATE") KiB, $BEFORE before"
finish
