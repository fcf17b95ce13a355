#!/bin/bash
# A directory of the rootfs exchanged for a host directory while gpufrac-hook runs (the class of
# CVE-2024-0132): <rootfs>/run and a decoy are exchanged (renameat2 RENAME_EXCHANGE, rename_exchange)
# during each `runc create`, in a tight loop or paced (50 us to 1 ms after each exchange, so that
# some starts find the layout still long enough to pass). The decoy's gpufrac is a bind mount of a host canary
# directory (it reaches the container's namespace with the rootfs) or, on every third start, a
# symlink to it. The canary is never written (no entry, mtime unchanged), and every container either
# starts with its limit in place (gpufrac's tmpfs at /run/gpufrac with the shim, the limit file, the
# preload) or is refused with one gpufrac-hook line and its booking released.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/containers.sh"
e2e_runc_test exchange
EXCHANGE=$GPUFRAC_BUILD_BIN_DIR/rename_exchange
[ -x "$EXCHANGE" ] || skip "rename_exchange was not built"
STARTS=${GPUFRAC_EXCHANGE_STARTS:-200}
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

B=$E2E_TMP/bundle
ROOTFS=$B/rootfs
make_bundle "$B" 'cat /run/gpufrac/limits /etc/ld.so.preload; stat -f -c "gpufrac fs %T" /run/gpufrac
  test -f /run/gpufrac/libgpufrac-limits.so && echo shim present' gpufrac.io/fraction=0.25
touch "$ROOTFS/run/.image-run"  # the image's own /run, wherever the exchanges leave it
mkdir -p "$ROOTFS/decoy-bind/gpufrac" "$ROOTFS/decoy-link"
mount --bind "$CANARY" "$ROOTFS/decoy-bind/gpufrac"
ln -s "$CANARY" "$ROOTFS/decoy-link/gpufrac"

# One start: `runc create` with the exchanges running; they stop (the layout back where it was) before
# `runc start`, so the container's check sees what the hook left in the image's own /run.
exchanges=0 started=0 refused=0
one_start() {
  local i=$1 decoy=$2 pause=$3 log=$E2E_TMP/c$1.log rc n
  rmdir "$ROOTFS/run/gpufrac" 2>/dev/null || true  # the hook makes it again (or finds the decoy's)
  "$EXCHANGE" "$ROOTFS/run" "$ROOTFS/$decoy" "$pause" >"$E2E_TMP/x.count" &
  XPID=$!
  set +e
  runc create --bundle "$B" "$P-$i" >"$log" 2>&1 </dev/null
  rc=$?
  set -e
  kill -TERM "$XPID"
  wait "$XPID" || fail "start $i: rename_exchange failed"
  XPID=
  n=$(cat "$E2E_TMP/x.count")
  exchanges=$((exchanges + n))
  [ -e "$ROOTFS/run/.image-run" ] || fail "start $i: the exchanges left the image's /run elsewhere"
  if [ "$rc" = 0 ]; then
    runc start "$P-$i"
    for _ in $(seq 100); do [ "$(runc state "$P-$i" | jq -r .status)" = stopped ] && break; sleep 0.05; done
    OUT=$(cat "$log")
    assert_contains "$OUT" "device $GPU $LIMIT" "start $i ($decoy, $n exchanges): the limit file is in place: $OUT"
    assert_contains "$OUT" "/run/gpufrac/libgpufrac-limits.so" "start $i: the preload names the shim"
    assert_contains "$OUT" "gpufrac fs tmpfs" "start $i: /run/gpufrac is gpufrac's tmpfs"
    assert_contains "$OUT" "shim present" "start $i: the shim is in it"
    started=$((started + 1))
  else
    OUT=$(cat "$log")
    assert_eq "$(grep -o 'gpufrac-hook: ' <<<"$OUT" | wc -l)" 1 "start $i: refused with one gpufrac-hook line: $OUT"
    echo "start $i refused ($decoy, pause $pause us, $n exchanges): $(grep -o 'gpufrac-hook: .*' <<<"$OUT" | sed 's/\\n"$//')"
    refused=$((refused + 1))
  fi
  runc delete -f "$P-$i" >/dev/null 2>&1 || true
  assert_eq "$(entries)" 0 "start $i: the booking is released"
  assert_eq "$(canary_state)" "$CANARY_BEFORE" "start $i ($decoy): the host canary directory is untouched"
}

PAUSES=(0 50 300 1000 5000)
for i in $(seq "$STARTS"); do
  decoy=decoy-bind
  [ $((i % 3)) = 0 ] && decoy=decoy-link
  one_start "$i" "$decoy" "${PAUSES[$((i % 5))]}"
  [ "$E2E_FAILURES" = 0 ] || break
done
echo "$STARTS starts: $started with their limit, $refused refused; $exchanges exchanges ($((exchanges / STARTS)) per start)"
assert_eq "$((started + refused))" "$STARTS" "every start either ran with its limit or was refused"
[ "$exchanges" -ge 2000 ] || fail "only $exchanges exchanges: the race was hardly run"
[ "$started" -gt 0 ] || fail "no container started: the test shows nothing about a start under exchanges"
assert_eq "$(findmnt -rn -o TARGET | grep -c "^$CANARY" || true)" 0 "nothing of the hook mounted on the canary"
finish
