#!/bin/bash
# A full state directory (state-dir on a 1 MiB tmpfs), with real runc, gpufrac-runtime and the CLI:
# 1. A container with 0, 4, ... 48 KiB free: refused in one line from the hook (or the wrapper) when
#    its booking does not fit (its own files live in its own tmpfs), else started; never a SIGBUS,
#    the ledger byte for byte as before, no container directory left.
# 2. A container whose state directory fills up after it started: 20 CUDA processes take slots over
#    two pages of its usage region and the shim counts exactly; `gpufrac status` reads it; its
#    poststop on the full directory releases the booking and removes the container's directory.
# 3. `gpufrac ledger reserve|release` on the full directory; `gpufrac gc` keeps ledger.reserve and
#    makes it again when it is missing.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/containers.sh"
source "$(dirname "$0")/wrapper.sh"
e2e_runc_test full
PROBE=$GPUFRAC_BUILD_DIR/tests/shim/shim_probe
[ -x "$PROBE" ] || skip "shim_probe is not built"
STATE=$E2E_TMP/state
e2e_on_exit() {
  runc_cleanup "$P"
  umount "$STATE" 2>/dev/null || true
}
e2e_gpu_config a100-40gb-x1.yaml
mount -t tmpfs -o size=1m tmpfs "$STATE"
free_kib() { echo $(($(df -B1 --output=avail "$STATE" | tail -1) / 1024)); }
# fill_to KIB: leaves exactly KIB KiB free in the state directory.
fill_to() {
  rm -f "$STATE/fill"
  fallocate -l $((($(free_kib) - $1) * 1024)) "$STATE/fill"
  assert_eq "$(free_kib)" "$1" "$1 KiB left free"
}
unfill() { rm -f "$STATE/fill"; }
dirs() { ls "$STATE/containers" | tr '\n' ' '; }
GPU=$(jq -r '.gpus[0].uuid' <<<"$("$GPUFRAC" info --json)")
SHARE=10626269184  # 0.25 of the A100's 40536 MiB

# A first container writes the state: inventory cache, ledger, its reserve, metrics counters.
make_bundle "$E2E_TMP/first" 'true' gpufrac.io/fraction=0.25
run runc run --bundle "$E2E_TMP/first" "$P-first"
assert_eq "$RC" 0 "a container starts with room: $OUT"
EMPTY=$(cat "$STATE/ledger.json")
# The reserve's storage: at least the ledger it was made for plus 4 KiB.
reserved() { echo $(($(stat -c '%b * %B' "$STATE/ledger.reserve"))); }
[ "$(reserved)" -ge $(($(stat -c %s "$STATE/ledger.json") + 4096)) ] || fail "the reserve: $(reserved) bytes"

# 2 (first half). A CUDA container that waits for the host to fill the state directory.
make_bundle "$E2E_TMP/cuda" '
  while [ ! -e /gate/go ]; do sleep 0.1; done
  i=0; while [ $i -lt 20 ]; do i=$((i + 1)); shim_probe alloc cuMemAlloc_v2 1048576 gate /gate/done >/gate/p$i.out 2>&1 & done
  n=0; while [ $n -lt 100 ] && [ "$(cat /gate/p*.out | grep -c "^ready$")" -lt 20 ]; do n=$((n + 1)); sleep 0.1; done
  shim_probe meminfo >/gate/meminfo 2>&1; touch /gate/counted
  while [ ! -e /gate/release ]; do sleep 0.1; done
  touch /gate/done; wait; echo finished >/gate/finished' gpufrac.io/fraction=0.25
add_program "$E2E_TMP/cuda/rootfs" "$PROBE" /bin/shim_probe
add_glibc "$E2E_TMP/cuda/rootfs"
ln -sf busybox "$E2E_TMP/cuda/rootfs/bin/touch"
mkdir -p "$E2E_TMP/gate"
jq --arg dev "$GPU=42505273344" --arg gate "$E2E_TMP/gate" '.process.env += ["GPUFRAC_FAKE_CUDA_DEVICES=" + $dev]
  | .mounts += [{destination: "/gate", type: "bind", source: $gate, options: ["rbind", "rw"]}]' \
  "$E2E_TMP/cuda/config.json" >"$E2E_TMP/c.json" && mv "$E2E_TMP/c.json" "$E2E_TMP/cuda/config.json"
set +e
runc run -d --bundle "$E2E_TMP/cuda" "$P-cuda" >"$E2E_TMP/cuda.log" 2>&1 </dev/null
assert_eq "$?" 0 "the CUDA container starts: $(cat "$E2E_TMP/cuda.log")"
set -e
BOOKED=$(cat "$STATE/ledger.json")
CUDA_DIR=$(dirs)

# 1. From 0 to 48 KiB free. A container's own files live in its own tmpfs (docs/architecture.md
#    "Host state"), so only its booking needs room here: it is refused by the ledger's one line
#    (nothing booked), or it starts and is released; never a SIGBUS, never a directory left. With
#    48 KiB free it starts.
hook_line() { sed -n 's/.*stderr: \(gpufrac-hook: .*\)\\n".*/\1/p' <<<"$OUT" | head -1; }
FULL="No space left on device (the state directory $STATE is full)"
LEDGER_FULL="$FULL; the ledger is unchanged: free space in it or make it larger"
make_bundle "$E2E_TMP/refused" 'true' gpufrac.io/fraction=0.25
make_plain_bundle "$E2E_TMP/wrapped" 'true' gpufrac.io/fraction=0.25
cp "$E2E_TMP/wrapped/config.json" "$E2E_TMP/wrapped.json"  # the wrapper edits config.json when it starts one
for kib in 0 4 8 12 16 20 24 28 32 36 40 44 48; do
  fill_to "$kib"
  set +e; OUT=$(timeout 20 runc run --bundle "$E2E_TMP/refused" "$P-r$kib" 2>&1 </dev/null); RC=$?; set -e
  runc delete -f "$P-r$kib" >/dev/null 2>&1 || true
  assert_not_contains "$OUT" "signal" "$kib KiB free: no SIGBUS"
  line=$(hook_line)
  case "$RC:$line" in
    0:*) kind=started ;;
    1:"gpufrac-hook: cannot reserve "*" bytes in $STATE/ledger.reserve for releasing bookings: $LEDGER_FULL") kind=reserve ;;
    1:"gpufrac-hook: cannot write $STATE/.ledger.json.tmp."*": $LEDGER_FULL") kind=ledger ;;
    *) kind="unexpected: $RC: $line" ;;
  esac
  echo "$kib KiB free: $kind"
  case $kib in
    0) assert_contains "reserve ledger" "$kind" "0 KiB free: the booking itself is refused" ;;
    48) assert_eq "$kind" started "48 KiB free: booked and started (its files are in its own tmpfs)" ;;
    *) assert_contains "reserve ledger started" "$kind" "$kib KiB free: refused by the ledger, or started" ;;
  esac
  assert_eq "$(cat "$STATE/ledger.json")" "$BOOKED" "$kib KiB free: the ledger as before"
  assert_eq "$(dirs)" "$CUDA_DIR" "$kib KiB free: no container directory left"
  # gpufrac-runtime: the same lines on its stderr, the same undo.
  cp "$E2E_TMP/wrapped.json" "$E2E_TMP/wrapped/config.json"
  set +e; create_out=$(timeout 20 "$WRAPPER" run --bundle "$E2E_TMP/wrapped" "$P-w$kib" 2>&1 </dev/null); RC=$?; set -e
  if [ "$RC" != 0 ]; then
    assert_contains "$create_out" "$FULL" "$kib KiB free: the wrapper says the directory is full (rc $RC)"
    assert_eq "$(grep -c '^gpufrac' <<<"$create_out")" 1 "$kib KiB free: one line from the wrapper: $create_out"
  fi
  [ "$kib" != 48 ] || assert_eq "$RC" 0 "48 KiB free: the wrapper starts it: $create_out"
  runc delete -f "$P-w$kib" >/dev/null 2>&1 || true
  assert_eq "$(cat "$STATE/ledger.json")" "$BOOKED" "$kib KiB free: the wrapper leaves the ledger as before"
  assert_eq "$(dirs)" "$CUDA_DIR" "$kib KiB free: and no directory"
done
assert_eq "$(grep -c " $STATE/containers/$P-[rw]" /proc/self/mounts || true)" 0 "no container's tmpfs left mounted"

# 2 (second half). The state directory is full; the container's 20 processes take 20 slots.
fill_to 0
touch "$E2E_TMP/gate/go"
for _ in $(seq 300); do [ -e "$E2E_TMP/gate/counted" ] && break; sleep 0.1; done
assert_eq "$(cat "$E2E_TMP"/gate/p*.out | grep -c '^alloc cuMemAlloc_v2 1048576 rc=0$')" 20 "20 processes allocated"
assert_eq "$(cat "$E2E_TMP"/gate/p*.out | grep -c '^ready$')" 20 "and all 20 hold it (no SIGBUS)"
assert_eq "$(cat "$E2E_TMP/gate/meminfo")" "meminfo free=$((SHARE - 20 * 1048576)) total=$SHARE rc=0" "the shim counts exactly"
run "$GPUFRAC" status --json
assert_eq "$(jq -r --arg c "$P-cuda" '.devices[].shares[] | select(.container_id == $c) | .used_bytes' <<<"$OUT")" \
  $((20 * 1048576)) "status reads the region on the full directory"
touch "$E2E_TMP/gate/release"
for _ in $(seq 300); do [ "$(runc state "$P-cuda" 2>/dev/null | jq -r .status)" = stopped ] && break; sleep 0.1; done
assert_eq "$(cat "$E2E_TMP/gate/finished")" finished "the container ran to its end"
assert_eq "$(free_kib)" 0 "the state directory is still full"
runc delete "$P-cuda"
assert_eq "$(cat "$STATE/ledger.json")" "$EMPTY" "poststop released the booking on the full directory"
assert_eq "$(dirs)" "" "and removed the container's directory"
test -s "$STATE/ledger.reserve" || fail "the reserve is made again"

# 3. The CLI on a full directory: a booking refused, a release that works.
fill_to 0
run "$GPUFRAC" ledger reserve --container cli --annotation gpufrac.io/fraction=0.25 --pid $$
assert_eq "$RC" 2 "refused: $OUT"
assert_contains "$OUT" "$LEDGER_FULL" "the ledger is unchanged"
assert_eq "$(cat "$STATE/ledger.json")" "$EMPTY" "nothing booked"
unfill
run "$GPUFRAC" ledger reserve --container cli --annotation gpufrac.io/fraction=0.25 --pid $$
assert_eq "$RC" 0 "booked with room: $OUT"
fill_to 0
run "$GPUFRAC" ledger release --container cli
assert_eq "$OUT" "released 1 booking(s) of cli" "released on the full directory"
assert_eq "$(cat "$STATE/ledger.json")" "$EMPTY" "the ledger as before the booking"
unfill
rm "$STATE/ledger.reserve"
run "$GPUFRAC" gc
assert_eq "$RC" 0 "gc: $OUT"
assert_eq "$(stat -c %s "$STATE/ledger.reserve")" $(($(stat -c %s "$STATE/ledger.json") + 4096)) "gc makes the reserve again"
finish
