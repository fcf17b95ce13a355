#!/bin/bash
# The limit file and the region decide the shim's mode: no limit file, the shim is inert; a
# limit file it cannot use, every counted allocation is refused (the limit cannot be enforced,
# so nothing is allocated past it); a region it cannot use, allocations on limited devices are
# refused. Each problem is one line on stderr, once. An all-zero region of the right size is
# initialised in place. Inside a container (/run/gpufrac/limits present) GPUFRAC_LIMITS_FILE is
# ignored, so a process cannot point the shim at a looser file.
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/shim_lib.sh"
e2e_tmp
L=$((64 * MI))
shim_limits size "$GPU0=$L"
SIZE=$(stat -c %s "$REGION")

# No limit file: inert, silent, the driver's numbers.
export GPUFRAC_LIMITS_FILE=$E2E_TMP/missing
shim_run "$PROBE" fill cuMemAlloc_v2 "$GI" meminfo
assert_eq "$OUT" "fill cuMemAlloc_v2 each=$GI ok=40 rc=2
meminfo free=0 total=$((40 * GI)) rc=0" "inert without a limit file"

# A limit file that does not parse: refused, one line naming the file, line and accepted form.
printf 'version 1\nregion %s\ndevice GPU-nothex 100\n' "$REGION" >"$E2E_TMP/bad.limits"
export GPUFRAC_LIMITS_FILE=$E2E_TMP/bad.limits
shim_run "$PROBE" alloc cuMemAlloc_v2 "$MI" alloc cuMemAllocAsync "$MI" -d 1 meminfo
assert_eq "$(printf '%s\n' "$OUT" | grep -c '^gpufrac:')" 1 "one message"
assert_contains "$OUT" "gpufrac: limit file $E2E_TMP/bad.limits: line 3: device: bad UUID; accepted: GPU-<8-4-4-4-12 hex digits> or MIG-<8-4-4-4-12 hex digits>; device memory allocations are refused" "message"
assert_contains "$OUT" "alloc cuMemAlloc_v2 $MI rc=2" "refused"
assert_contains "$OUT" "alloc cuMemAllocAsync $MI rc=2" "refused"
printf 'version 2\nregion %s\n' "$REGION" >"$E2E_TMP/v2.limits"
GPUFRAC_LIMITS_FILE=$E2E_TMP/v2.limits shim_run "$PROBE" alloc cuMemAlloc_v2 "$MI"
assert_contains "$OUT" "line 1: version: unsupported; accepted: 1" "another version"

# A region with a wrong magic, the wrong size, or missing: limited devices refuse, others work.
shim_limits magic "$GPU0=$L" "$MIG0=$L"
printf 'XXXX' | dd of="$REGION" conv=notrunc status=none
shim_run "$PROBE" alloc cuMemAlloc_v2 "$MI" meminfo
assert_contains "$OUT" "gpufrac: usage region $REGION: wrong magic 0x58585858; accepted: 0x52465047 (gpufrac usage region); allocations on limited devices are refused" "wrong magic"
assert_contains "$OUT" "alloc cuMemAlloc_v2 $MI rc=2" "limited device refuses"
assert_contains "$OUT" "meminfo free=0 total=$L" "and reports nothing free"
shim_run "$PROBE" -d 1 alloc cuMemAlloc_v2 "$MI"
assert_contains "$OUT" "alloc cuMemAlloc_v2 $MI rc=0" "unlimited device still works"
truncate -s 4096 "$REGION"
shim_run "$PROBE" alloc cuMemAlloc_v2 "$MI"
assert_contains "$OUT" "gpufrac: usage region $REGION: not a file of $SIZE bytes" "wrong size"
rm "$REGION"
shim_run "$PROBE" alloc cuMemAlloc_v2 "$MI"
assert_contains "$OUT" "gpufrac: usage region $REGION: cannot open read-write: No such file or directory" "missing"

# An all-zero file of the right size is an empty region: initialised by the first process.
truncate -s "$SIZE" "$REGION"
shim_run "$PROBE" fill cuMemAlloc_v2 "$MI"
assert_contains "$OUT" "fill cuMemAlloc_v2 each=$MI ok=64 rc=2" "all-zero region"
assert_eq "$(od -An -tx4 -N4 "$REGION" | tr -d ' ')" 52465047 "magic written"

# GPUFRAC_LIMITS_FILE cannot override the container's own limit file.
if [ "$(id -u)" = 0 ] && command -v unshare >/dev/null; then
  shim_limits inner "$GPU0=$((8 * MI))"
  cp "$E2E_TMP/inner.limits" "$E2E_TMP/container.limits"
  shim_limits loose "$GPU0=$((32 * GI))"
  run unshare -m sh -c "mount --make-rprivate / && mount -t tmpfs tmpfs /run && mkdir /run/gpufrac &&
    cp '$E2E_TMP/container.limits' /run/gpufrac/limits &&
    GPUFRAC_LIMITS_FILE='$E2E_TMP/loose.limits' LD_PRELOAD='$SHIM' '$PROBE' fill cuMemAlloc_v2 $MI"
  assert_contains "$OUT" "fill cuMemAlloc_v2 each=$MI ok=8 rc=2" "the container's limit file wins"
fi
finish
