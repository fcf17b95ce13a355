#!/bin/bash
# A directory of the rootfs exchanged for a host directory while a container starts (the class of
# CVE-2024-0132): <rootfs>/run and a decoy are exchanged (renameat2 RENAME_EXCHANGE, rename_exchange)
# during each create, in a tight loop or paced (50 us to 5 ms after each exchange, so that some
# starts find the layout long enough to pass). The decoy's gpufrac is a bind mount of a host canary
# directory (it reaches the container's namespace with the rootfs) or, on every third start, a
# symlink to it. Starts alternate between runc with gpufrac-hook and gpufrac-runtime (whose
# config.json no longer carries /run/gpufrac: its --attach hook mounts it). The canary is never
# written (no entry, mtime unchanged), and every container either starts with its limit in place
# (gpufrac's tmpfs at /run/gpufrac with the shim, the limit file, the preload) or is refused with one
# gpufrac-hook line and its booking released.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/containers.sh"
source "$(dirname "$0")/wrapper.sh"
e2e_runc_test exchange
EXCHANGE=$GPUFRAC_BUILD_BIN_DIR/rename_exchange
[ -x "$EXCHANGE" ] || skip "rename_exchange was not built"
STARTS=${GPUFRAC_EXCHANGE_STARTS:-180}
e2e_on_exit() {
  [ -n "${XPID:-}" ] && kill "$XPID" 2>/dev/null
  runc_cleanup "$P"
  umount "$ROOTFS/decoy-bind/gpufrac" 2>/dev/null || true
}
e2e_gpu_config a100-40gb-x1.yaml
GPU=$(jq -r '.gpus[0].uuid' <<<"$("$GPUFRAC" info --json)")
LIMIT=$((40536 / 4 * 1024 * 1024))
entries() { jq '.entries | length' "$E2E_TMP/state/ledger.json" 2>/dev/null || echo 0; }

CANARY=$E2E_TMP/canary
mkdir -p "$CANARY"
touch -d '2001-02-03 04:05:06' "$CANARY"
canary_state() { echo "$(stat -c '%Y %h' "$CANARY") $(find "$CANARY" -mindepth 1 | sort | tr '\n' ' ')"; }
CANARY_BEFORE=$(canary_state)

# One rootfs for both front-ends: the hook's bundle, and the wrapper's (plain, its root that rootfs).
CHECK='cat /run/gpufrac/limits /etc/ld.so.preload; stat -f -c "gpufrac fs %T" /run/gpufrac
  test -f /run/gpufrac/libgpufrac-limits.so && echo shim present'
B=$E2E_TMP/hook
ROOTFS=$B/rootfs
make_bundle "$B" "$CHECK" gpufrac.io/fraction=0.25
W=$E2E_TMP/wrapper
make_plain_bundle "$W" "$CHECK" gpufrac.io/fraction=0.25
jq --arg r "$ROOTFS" '.root.path = $r' "$W/config.json" >"$W/plain.json"
touch "$ROOTFS/run/.image-run"  # the image's own /run, wherever the exchanges leave it
mkdir -p "$ROOTFS/decoy-bind/gpufrac" "$ROOTFS/decoy-link"
mount --bind "$CANARY" "$ROOTFS/decoy-bind/gpufrac"
ln -s "$CANARY" "$ROOTFS/decoy-link/gpufrac"

# create <front> <i> <log>: the create with the exchanges running.
create() {
  if [ "$1" = hook ]; then
    runc create --bundle "$B" "$P-$2" >"$3" 2>&1 </dev/null
  else
    cp "$W/plain.json" "$W/config.json"  # as the engine writes it for each create
    "$WRAPPER" create --bundle "$W" "$P-$2" >"$3" 2>&1 </dev/null
  fi
}

# One start: the exchanges stop (the layout back where it was) before `runc start`, so the
# container's check sees what the start left in the image's own /run.
exchanges=0 started=0 refused=0
one_start() {
  local front=$1 i=$2 decoy=$3 pause=$4 log=$E2E_TMP/c$2.log rc n
  rmdir "$ROOTFS/run/gpufrac" 2>/dev/null || true  # the hook makes it again (or finds the decoy's)
  "$EXCHANGE" "$ROOTFS/run" "$ROOTFS/$decoy" "$pause" >"$E2E_TMP/x.count" &
  XPID=$!
  set +e
  create "$front" "$i" "$log"
  rc=$?
  set -e
  kill -TERM "$XPID"
  wait "$XPID" || fail "start $i: rename_exchange failed"
  XPID=
  n=$(cat "$E2E_TMP/x.count")
  exchanges=$((exchanges + n))
  local what="start $i ($front, $decoy, pause $pause us, $n exchanges)"
  [ -e "$ROOTFS/run/.image-run" ] || fail "$what: the exchanges left the image's /run elsewhere"
  if [ "$rc" = 0 ]; then
    runc start "$P-$i"
    for _ in $(seq 100); do [ "$(runc state "$P-$i" | jq -r .status)" = stopped ] && break; sleep 0.05; done
    OUT=$(cat "$log")
    assert_contains "$OUT" "device $GPU $LIMIT" "$what: the limit file is in place: $OUT"
    assert_contains "$OUT" "/run/gpufrac/libgpufrac-limits.so" "$what: the preload names the shim"
    assert_contains "$OUT" "gpufrac fs tmpfs" "$what: /run/gpufrac is gpufrac's tmpfs"
    assert_contains "$OUT" "shim present" "$what: the shim is in it"
    started=$((started + 1))
  else
    # runc's one error line: the hook's one line in it, or (gpufrac-runtime's config.json) runc's own
    # refusal of a driver file's mount under /run.
    OUT=$(cat "$log")
    assert_eq "$(grep -c 'level=error' <<<"$OUT")" 1 "$what: refused with one error line: $OUT"
    [ "$(grep -o 'gpufrac-hook: ' <<<"$OUT" | wc -l)" -le 1 ] || fail "$what: more than one gpufrac-hook line: $OUT"
    echo "$what refused: $(grep -o 'level=error msg=.*' <<<"$OUT" | sed -e 's/.*stderr: //' -e 's/\\n"$//')"
    refused=$((refused + 1))
  fi
  runc delete -f "$P-$i" >/dev/null 2>&1 || true
  assert_eq "$(entries)" 0 "$what: the booking is released"
  assert_eq "$(canary_state)" "$CANARY_BEFORE" "$what: the host canary directory is untouched"
}

PAUSES=(0 50 300 1000 5000)
for i in $(seq "$STARTS"); do
  front=hook decoy=decoy-bind
  [ $((i % 2)) = 0 ] && front=wrapper
  [ $((i % 3)) = 0 ] && decoy=decoy-link
  one_start "$front" "$i" "$decoy" "${PAUSES[$((i % 5))]}"
  [ "$E2E_FAILURES" = 0 ] || break
done
echo "$STARTS starts: $started with their limit, $refused refused; $exchanges exchanges ($((exchanges / STARTS)) per start)"
assert_eq "$((started + refused))" "$STARTS" "every start either ran with its limit or was refused"
[ "$exchanges" -ge 2000 ] || fail "only $exchanges exchanges: the race was hardly run"
[ "$started" -gt 0 ] || fail "no container started: the test shows nothing about a start under exchanges"
assert_eq "$(findmnt -rn -o TARGET | grep -c "^$CANARY" || true)" 0 "nothing of the hook mounted on the canary"
finish
