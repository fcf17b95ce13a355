#!/bin/bash
# The shim on a full state directory. The host allocates every page of a region when it creates it,
# so when the tmpfs fills up afterwards 30 processes still take slots over two pages of the region,
# allocate and free, and the accounting stays exact: no process dies of SIGBUS. A region with a hole
# (as gpufrac wrote them before) on a full filesystem is never mapped: the shim refuses allocations
# on limited devices with one line (unlimited devices work); the host reads it with pread, never a
# mapping, so a hole costs it nothing; with room
# again the shim allocates the hole itself and counts.
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/shim_lib.sh"
need_root
e2e_tmp
FS=$E2E_TMP/fs
PIDS=()
e2e_on_exit() {
  [ "${#PIDS[@]}" -gt 0 ] && kill -9 "${PIDS[@]}" 2>/dev/null
  umount "$FS" 2>/dev/null || true
}
mkdir -p "$FS"
mount -t tmpfs -o size=1m tmpfs "$FS"
# fill_to KIB: leaves exactly KIB KiB free in $FS.
fill_to() {
  rm -f "$FS/fill"
  local avail
  avail=$(df -B1 --output=avail "$FS" | tail -1 | tr -d " ")
  fallocate -l $((avail - $1 * 1024)) "$FS/fill"
  assert_eq "$(df -B1 --output=avail "$FS" | tail -1 | tr -d " ")" $(($1 * 1024)) "$1 KiB left free"
}
L=$((64 * MI))
"$TOOL" create "$FS/limits" "$FS/usage" test-full "$GPU0=$L"
export GPUFRAC_LIMITS_FILE=$FS/limits
fill_to 0

# 30 processes: each allocates twice, frees both, allocates once more and holds it.
mkfifo "$E2E_TMP/hold.in"
for i in $(seq 30); do
  env LD_PRELOAD="$SHIM" "$PROBE" alloc cuMemAlloc_v2 "$MI" alloc cuMemAllocAsync "$MI" freeall \
    alloc cuMemAlloc_v2 "$MI" hold <"$E2E_TMP/hold.in" >"$E2E_TMP/p$i.out" 2>&1 &
  PIDS+=($!)
done
exec {HOLD}>"$E2E_TMP/hold.in"
holding() { cat "$E2E_TMP"/p*.out | grep -c '^holding$' || true; }
running() { local n=0 p; for p in "${PIDS[@]}"; do kill -0 "$p" 2>/dev/null && n=$((n + 1)); done; echo $n; }
for _ in $(seq 300); do [ "$(holding)" = "$(running)" ] && break; sleep 0.1; done
assert_eq "$(holding)" 30 "30 processes hold 1 MiB each on a full tmpfs"
run "$TOOL" usage "$FS/usage"
assert_contains "$OUT" "live=30 dead=0" "the host sees 30 live slots"
assert_contains "$OUT" "device 0 $GPU0 used=$((30 * MI)) stale=0 limit=$L" "and exactly their bytes"
shim_run "$PROBE" meminfo fill cuMemAlloc_v2 "$MI"
assert_contains "$OUT" "meminfo free=$((L - 30 * MI)) total=$L rc=0" "a 31st process sees what is left"
assert_contains "$OUT" "fill cuMemAlloc_v2 each=$MI ok=34 rc=2" "and gets exactly that"
exec {HOLD}>&-
statuses=
for p in "${PIDS[@]}"; do
  set +e; wait "$p"; statuses+="$? "; set -e
done
PIDS=()
assert_eq "$statuses" "$(printf '0 %.0s' $(seq 30))" "every process exited normally (135 would be SIGBUS)"
shim_run "$PROBE" fill cuMemAlloc_v2 "$MI"
assert_contains "$OUT" "fill cuMemAlloc_v2 each=$MI ok=64 rc=2" "a new process gets the whole limit again"

# A region with a hole on the full tmpfs: not mapped by the shim; read by the host without a mapping.
rm -f "$FS/fill"
"$TOOL" create "$FS/old.limits" "$FS/new.usage" test-old "$GPU0=$L"
head -c 1728 "$FS/new.usage" >"$FS/old.usage"   # the header; the slots are a hole
truncate -s "$(stat -c %s "$FS/new.usage")" "$FS/old.usage"
rm "$FS/new.usage"
sed -i "s|$FS/new.usage|$FS/old.usage|" "$FS/old.limits"
export GPUFRAC_LIMITS_FILE=$FS/old.limits
fill_to 0
shim_run "$PROBE" alloc cuMemAlloc_v2 "$MI" meminfo
assert_eq "$RC" 0 "no SIGBUS"
assert_eq "$(grep -c '^gpufrac:' <<<"$OUT")" 1 "one line"
assert_contains "$OUT" "gpufrac: usage region $FS/old.usage: its hole cannot be allocated: No space left on device (its filesystem is full); allocations on limited devices are refused" "the shim says why"
assert_contains "$OUT" "alloc cuMemAlloc_v2 $MI rc=2" "a limited device refuses (never unlimited)"
assert_contains "$OUT" "meminfo free=0 total=$L" "and reports nothing free"
shim_run "$PROBE" -d 1 alloc cuMemAlloc_v2 "$MI"
assert_contains "$OUT" "alloc cuMemAlloc_v2 $MI rc=0" "an unlimited device works"
run "$TOOL" usage "$FS/old.usage"
assert_eq "$RC" 0 "the host reads it without mapping it (a copy with pread: the hole reads as zeros)"
assert_contains "$OUT" "live=0 dead=0" "nothing counted"
assert_eq "$(($(stat -c '%b * %B' "$FS/old.usage") < $(stat -c %s "$FS/old.usage")))" 1 "and allocates nothing"
rm -f "$FS/fill"
shim_run "$PROBE" alloc cuMemAlloc_v2 "$MI" meminfo
assert_contains "$OUT" "alloc cuMemAlloc_v2 $MI rc=0" "with room the shim allocates the hole and counts"
assert_contains "$OUT" "meminfo free=$((L - MI)) total=$L" "exactly"
assert_eq "$(($(stat -c '%b * %B' "$FS/old.usage") >= $(stat -c %s "$FS/old.usage")))" 1 "no hole left"
finish
