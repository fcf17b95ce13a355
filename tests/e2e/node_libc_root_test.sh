#!/bin/bash
# The host files `gpufrac node setup` installs run on any glibc host (issue 44, part 2;
# docs/architecture.md "Node setup"): the CLI carries its libraries, glibc and its loader included,
# and names the installed loader as its interpreter. In a root holding only the loader, libc.so.6,
# libm.so.6 and libdl.so.2 (and /proc), each installed program runs --version, the CLI runs `info` on a
# simulated machine, and the shim preloads into it; then the same in a root with no libc at all,
# where the CLI also loads the driver's NVML (the fake) through the root's own ld.so.cache from a
# RHEL-like /usr/lib64. Then `node setup --keep-running` on the first root: it refreshes the inventory
# and the CDI spec at start and when the machine changes, serves metrics, and on SIGTERM with
# --teardown-on-exit tears down.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/containers.sh"
need_root
need_cmd jq
need_cmd curl
e2e_tmp
VERSION=$("$GPUFRAC" --version | awk '{print $2}')
R=$E2E_TMP/host
INST=/usr/local/gpufrac/current
mkdir -p "$R/run" "$R/usr/local" "$R/tmp" "$R/var/run/cdi"
# glibc, as this machine has it: the loader the CLI names (its path padded with slashes, squeezed
# here), and libc, libm and libdl (a stub since glibc 2.34, which the shim still names) beside libc.
LOADER=$(readelf -l "$GPUFRAC" | sed -n 's/.*interpreter: \(.*\)]$/\1/p' | tr -s /)
LIBC=$(ldd "$GPUFRAC" | awk '$1 == "libc.so.6" { print $3 }')
for f in "$LOADER" "$LIBC" "$(dirname "$LIBC")/libm.so.6" "$(dirname "$LIBC")/libdl.so.2"; do
  mkdir -p "$R$(dirname "$f")"
  cp -L "$f" "$R$f"
done
assert_eq "$(find "$R" -type f | wc -l)" 4 "the root holds the loader, libc, libm and libdl"
# And /proc, as every host has: the loader reads /proc/self/exe to expand the CLI's $ORIGIN.
mkdir -p "$R/proc"
mount -t proc proc "$R/proc"
e2e_on_exit() { umount "$R/proc" 2>/dev/null || true; }
cp "$MACHINES/a100-40gb-x1.yaml" "$R/machine.yaml"
# The config setup installs (host paths).
cat >"$E2E_TMP/node.yaml" <<EOT
state-dir: /run/gpufrac
nvml: {backend: simulated, machine: /machine.yaml}
log: {target: stderr}
EOT

run "$GPUFRAC" node setup --host-root "$R" --config "$E2E_TMP/node.yaml" --runtime none
assert_eq "$RC" 0 "setup into the libc-only root: $OUT"
LOADER_NAME=$(basename "$LOADER")
for lib in libstdc++.so.6 "$LOADER_NAME" libc.so.6 libm.so.6 libdl.so.2 libpthread.so.0 librt.so.1; do
  assert_eq "$(ls "$R$INST/lib" | grep -cxF "$lib")" 1 "$lib is carried"
done
assert_eq "$(stat -c %a "$R$INST/lib/$LOADER_NAME")" 755 "the carried loader is executable"
interp() { readelf -l "$1" | sed -n 's/.*interpreter: \(.*\)]$/\1/p'; }
assert_eq "$(interp "$R$INST/bin/gpufrac")" "/usr/local/gpufrac/$VERSION/lib/$LOADER_NAME" \
  "the installed CLI's interpreter is the carried loader, by its versioned path"
cmp -s "$R$INST/lib/$LOADER_NAME" "$LOADER" || fail "the carried loader is not the one the CLI was built with"
CHROOT=$(command -v chroot)
# inroot ROOT ENV... -- PROGRAM ARGS...: runs in ROOT with nothing but ENV.
inroot() {
  local root=$1 envs=()
  shift
  while [ "$1" != -- ]; do envs+=("$1"); shift; done
  shift
  run env -i PATH=/usr/bin:/bin "${envs[@]}" "$CHROOT" "$root" "$@"
}
# programs_run ROOT WHAT: each installed program's --version and the CLI's info, in ROOT.
programs_run() {
  local prog
  for prog in gpufrac gpufrac-hook gpufrac-runtime; do
    inroot "$1" -- "$INST/bin/$prog" --version
    # gpufrac-runtime's --version also looks for runc, which these roots have not: exit 2, after the version.
    [ "$prog" = gpufrac-runtime ] && [ "$RC" = 2 ] && RC=0
    assert_eq "$RC" 0 "$prog --version in $2: $OUT"
    assert_contains "$(head -1 <<<"$OUT")" "$VERSION" "$prog --version names the version in $2"
  done
  inroot "$1" -- "$INST/bin/gpufrac" info
  assert_eq "$RC" 0 "gpufrac info in $2: $OUT"
  assert_contains "$OUT" "A100" "info shows the simulated GPU in $2"
}
programs_run "$R" "the libc-only root"
# (through the root's loader: LD_PRELOAD would reach the host's chroot program first)
inroot "$R" -- "$LOADER" --preload "$INST/lib/gpufrac/libgpufrac-limits.so" "$INST/bin/gpufrac" --version
assert_eq "$RC" 0 "the shim preloads with only glibc: $OUT"
assert_not_contains "$OUT" "cannot be preloaded" "the loader found the shim and its needs"

# A root with no libc at all: only /proc, the machine file and what setup installs.
N=$E2E_TMP/bare
mkdir -p "$N/proc" "$N/run" "$N/usr/local" "$N/tmp" "$N/var/run/cdi"
mount -t proc proc "$N/proc"
e2e_on_exit() { umount "$R/proc" "$N/proc" 2>/dev/null || true; }
cp "$MACHINES/a100-40gb-x1.yaml" "$N/machine.yaml"
run "$GPUFRAC" node setup --host-root "$N" --config "$E2E_TMP/node.yaml" --runtime none
assert_eq "$RC" 0 "setup into the root without a libc: $OUT"
assert_eq "$(find "$N" -path "$N/proc" -prune -o -path "$N/usr/local/gpufrac" -prune -o -type f -print | sort)" \
  "$(printf '%s\n' "$N/etc/gpufrac/config.yaml" "$N/machine.yaml" "$N/run/gpufrac/node-ready")" \
  "the root holds the install dir, the config, the ready file and the machine, and no libc"
programs_run "$N" "the root without a libc"
# The driver's NVML, as a RHEL-like host has it: /usr/lib64, found through the root's own
# ld.so.cache (the carried loader searches the CLI's RPATH, then the host's cache).
FAKE_NVML=$GPUFRAC_FAKES_DIR/libnvidia-ml.so.1
[ -f "$FAKE_NVML" ] || fail "no fake libnvidia-ml.so.1 at $FAKE_NVML (build the fake_nvml target)"
mkdir -p "$N/usr/lib64"
cp "$FAKE_NVML" "$N/usr/lib64/libnvidia-ml.so.550.54.15"
ln -s libnvidia-ml.so.550.54.15 "$N/usr/lib64/libnvidia-ml.so.1"
echo /usr/lib64 >"$N/etc/ld.so.conf"
ldconfig -r "$N"
printf '%s\n' "state-dir: /run/gpufrac" "nvml: {backend: nvml}" "log: {target: stderr}" >"$N/nvml.yaml"
inroot "$N" GPUFRAC_CONFIG=/nvml.yaml GPUFRAC_FAKE_NVML_MACHINE=/machine.yaml -- "$INST/bin/gpufrac" info
assert_eq "$RC" 0 "gpufrac info through the driver's NVML in the root without a libc: $OUT"
assert_eq "$(head -n 1 <<<"$OUT")" "Driver 550.54.15  (nvml:libnvidia-ml.so.1)" "info read the GPU through NVML"
# An install dir whose loader path does not fit in the CLI's interpreter is refused, naming the room.
LONG=/opt/$(printf 'd%.0s' $(seq 230))
run "$GPUFRAC" node setup --host-root "$N" --install-dir "$LONG" --config "$E2E_TMP/node.yaml" --runtime none
assert_eq "$RC" 1 "a too long install dir: $OUT"
assert_contains "$OUT" "the program has room for 255; use a shorter --install-dir" "a too long install dir: $OUT"
assert_eq "$([ -e "$N$LONG" ] && echo yes || echo no)" no "a refused install dir is not created"
run "$GPUFRAC" node teardown --host-root "$N"
assert_eq "$RC" 0 "teardown of the root without a libc: $OUT"

# Keep running: refresh at start, on a machine change, metrics, teardown on SIGTERM.
PORT=$((20000 + $$ % 20000))
"$GPUFRAC" node setup --host-root "$R" --config "$E2E_TMP/node.yaml" --runtime none --keep-running \
  --metrics-listen "127.0.0.1:$PORT" --teardown-on-exit >"$E2E_TMP/keep.log" 2>&1 &
KEEP=$!
e2e_on_exit() { kill "$KEEP" 2>/dev/null || true; e2e_kill_tmp_processes; umount "$R/proc" "$N/proc" 2>/dev/null || true; }
wait_for() { for _ in $(seq 100); do eval "$1" >/dev/null 2>&1 && return 0; sleep 0.1; done; return 1; }
gpus() { jq '.gpus | length' "$R/run/gpufrac/inventory.json" 2>/dev/null; }
wait_for '[ "$(gpus)" = 1 ]' || fail "no inventory after start: $(cat "$E2E_TMP/keep.log")"
wait_for '[ -s "$R/var/run/cdi/gpufrac.yaml" ]' || fail "no CDI spec after start: $(cat "$E2E_TMP/keep.log")"
cp "$MACHINES/a100-40gb-x2.yaml" "$R/machine.yaml"
wait_for '[ "$(gpus)" = 2 ]' || fail "the inventory did not follow the machine: $(cat "$E2E_TMP/keep.log")"
wait_for 'curl -sf "http://127.0.0.1:$PORT/metrics" | grep -q "^gpufrac_"' ||
  fail "no metrics at 127.0.0.1:$PORT: $(cat "$E2E_TMP/keep.log")"
kill -TERM "$KEEP"
wait "$KEEP" && RC=0 || RC=$?
assert_eq "$RC" 0 "keep-running ends on SIGTERM: $(cat "$E2E_TMP/keep.log")"
assert_contains "$(cat "$E2E_TMP/keep.log")" "removed /usr/local/gpufrac" "teardown ran on SIGTERM"
assert_eq "$(ls "$R/usr/local")" "" "the install dir is gone"
assert_eq "$([ -e "$R/run/gpufrac/node-ready" ] && echo yes || echo no)" no "the ready file is gone"
assert_eq "$([ -e "$R/etc/gpufrac" ] && echo yes || echo no)" no "the config setup wrote is gone"
finish
