#!/bin/bash
# The shim's overhead over the fake libcuda.so.1: the same program (bench/shim_bench.c) without
# and with LD_PRELOAD of the shim, one 32 GiB limit on the fake GPU. Prints ns per
# cuMemAlloc_v2 + cuMemFree_v2 pair and per cuMemGetInfo_v2 with 0, 16, 64 and 256 other live processes
# in the container, and the start of 1 and 64 concurrent processes (to their first allocation).
# Usage: bench/shim_bench.sh [BUILD_DIR]   (after: ninja -C BUILD_DIR shim_bench gpufrac_limits)
set -euo pipefail
BUILD=$(cd "${1:-build}" && pwd)
BENCH=$BUILD/bin/shim_bench
SHIM=$BUILD/bin/libgpufrac-limits.so
for f in "$BENCH" "$SHIM"; do [ -e "$f" ] || { echo "shim_bench.sh: $f is missing; build shim_bench and gpufrac_limits" >&2; exit 2; }; done
export LD_LIBRARY_PATH=$BUILD/fakes
export GPUFRAC_FAKE_CUDA_DEVICES=GPU-894e9a6d-f600-b098-3d59-138988473c2c=40Gi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
printf 'version 1\ncontainer bench\nregion %s/usage\ndevice GPU-894e9a6d-f600-b098-3d59-138988473c2c %d\n' \
  "$tmp" $((32 << 30)) >"$tmp/limits"
truncate -s "$("$BENCH" region-size)" "$tmp/usage" # an all-zero region is a valid empty one
export GPUFRAC_LIMITS_FILE=$tmp/limits

val() { sed -n "s/.* $1=\([0-9.]*\).*/\1/p" <<<"$2"; }
# The smaller of two numbers (each figure is the best of five alternating runs: a shared VM is noisy).
min() { awk -v a="$1" -v b="$2" 'BEGIN{print (a == "" || b + 0 < a + 0) ? b : a}'; }
echo "shim overhead on $(nproc) cores, $(uname -m), fake libcuda.so.1"
printf '%-28s %12s %12s %12s\n' "" "without shim" "with shim" "added"
for holders in 0 16 64 256; do
  declare -A best=()
  for _ in 1 2 3 4 5; do
    base=$("$BENCH" ops "$holders")
    shim=$(LD_PRELOAD=$SHIM "$BENCH" ops "$holders")
    for what in pair meminfo; do
      best[b$what]=$(min "${best[b$what]:-}" "$(val "${what}_ns" "$base")")
      best[s$what]=$(min "${best[s$what]:-}" "$(val "${what}_ns" "$shim")")
    done
  done
  for what in pair meminfo; do
    b=${best[b$what]}
    s=${best[s$what]}
    label="$what ns ($holders other procs)"
    [ "$what" = pair ] && label="alloc+free ns ($holders other procs)"
    printf '%-28s %12s %12s %12s\n' "$label" "$b" "$s" "$(awk -v a="$s" -v b="$b" 'BEGIN{printf "%+.1f", a-b}')"
  done
done
# The floor under the pair: it makes 4 atomic read-modify-writes with no other process in the
# container (slot add and subtract, pointer-table insert and remove) and 6 with others (the
# change counter on reserve and on release), each one locked instruction on x86.
rmw=$(val rmw_ns "$("$BENCH" lock-floor)")
printf '%-28s %12s %12s %12s\n' "one atomic RMW ns (floor)" "" "$rmw" \
  "$(awk -v r="$rmw" 'BEGIN{printf "x4 %.1f, x6 %.1f", 4 * r, 6 * r}')"
for n in 1 64; do
  rounds=$((n == 1 ? 41 : 5))
  base=$("$BENCH" spawn "$n" "$rounds")
  shim=$(LD_PRELOAD=$SHIM "$BENCH" spawn "$n" "$rounds")
  for what in median p90; do
    b=$(val "${what}_us" "$base")
    s=$(val "${what}_us" "$shim")
    printf '%-28s %12s %12s %12s\n' "start us, $n procs ($what)" "$b" "$s" "$((s - b))"
  done
done
# Burstable memory: the same pair under a limit file whose device has a burst line (request 16 GiB
# below the 32 GiB limit; the pair stays within the request) against one without, each with a fresh
# region of its own (the runs above left slots in theirs). A container that does not burst, and one
# that may but stays within its request, side by side.
for kind in plain burst; do
  printf 'version 1\ncontainer bench\nregion %s/usage-%s\ndevice GPU-894e9a6d-f600-b098-3d59-138988473c2c %d\n' \
    "$tmp" "$kind" $((32 << 30)) >"$tmp/limits-$kind"
  truncate -s "$("$BENCH" region-size)" "$tmp/usage-$kind"
done
echo "burst GPU-894e9a6d-f600-b098-3d59-138988473c2c $((16 << 30))" >>"$tmp/limits-burst"
declare -A burst=()
for _ in 1 2 3 4 5; do
  for kind in plain burst; do
    out=$(GPUFRAC_LIMITS_FILE=$tmp/limits-$kind LD_PRELOAD=$SHIM "$BENCH" ops 0)
    burst[$kind]=$(min "${burst[$kind]:-}" "$(val pair_ns "$out")")
  done
done
printf '%-28s %12s %12s %12s\n' "alloc+free ns, limit file:" "no burst" "burst line" "added"
printf '%-28s %12s %12s %12s\n' "  (with shim, alone)" "${burst[plain]}" "${burst[burst]}" \
  "$(awk -v a="${burst[burst]}" -v b="${burst[plain]}" 'BEGIN{printf "%+.1f", a-b}')"
