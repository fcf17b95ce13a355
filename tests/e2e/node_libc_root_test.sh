#!/bin/bash
# The host files `gpufrac node setup` installs run on a host that has nothing but glibc (issue 44,
# part 2): in a root holding only the loader, libc.so.6 and libm.so.6 (and /proc), each installed program runs
# --version, the CLI runs `info` on a simulated machine, and the shim preloads into it. Then
# `node setup --keep-running` on that root: it refreshes the inventory and the CDI spec at start
# and when the machine changes, serves metrics, and on SIGTERM with --teardown-on-exit tears down.
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
# glibc, as this machine has it: the loader the CLI names, and libc, libm and libdl (a stub since
# glibc 2.34, which the shim still names) beside libc.
LOADER=$(readelf -l "$GPUFRAC" | sed -n 's/.*interpreter: \(.*\)]$/\1/p')
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
assert_eq "$(ls "$R$INST/lib" | grep -c '^libstdc++.so.6$')" 1 "the CLI's C++ library is carried"
assert_eq "$(ls "$R$INST/lib" | grep -cE '^(libc|libm)\.so|^ld-linux')" 0 "glibc is not carried"
CHROOT=$(command -v chroot)
inroot() { run env -i PATH=/usr/bin:/bin "$CHROOT" "$R" "$@"; }
for prog in gpufrac gpufrac-hook gpufrac-runtime; do
  inroot "$INST/bin/$prog" --version
  # gpufrac-runtime's --version also looks for runc, which this root has not: exit 2, after the version.
  [ "$prog" = gpufrac-runtime ] && [ "$RC" = 2 ] && RC=0
  assert_eq "$RC" 0 "$prog --version in the libc-only root: $OUT"
  assert_contains "$(head -1 <<<"$OUT")" "$VERSION" "$prog --version names the version"
done
inroot "$INST/bin/gpufrac" info
assert_eq "$RC" 0 "gpufrac info in the libc-only root: $OUT"
assert_contains "$OUT" "A100" "info shows the simulated GPU"
# (through the root's loader: LD_PRELOAD would reach the host's chroot program first)
inroot "$LOADER" --preload "$INST/lib/gpufrac/libgpufrac-limits.so" "$INST/bin/gpufrac" --version
assert_eq "$RC" 0 "the shim preloads with only glibc: $OUT"
assert_not_contains "$OUT" "cannot be preloaded" "the loader found the shim and its needs"

# Keep running: refresh at start, on a machine change, metrics, teardown on SIGTERM.
PORT=$((20000 + $$ % 20000))
"$GPUFRAC" node setup --host-root "$R" --config "$E2E_TMP/node.yaml" --runtime none --keep-running \
  --metrics-listen "127.0.0.1:$PORT" --teardown-on-exit >"$E2E_TMP/keep.log" 2>&1 &
KEEP=$!
e2e_on_exit() { kill "$KEEP" 2>/dev/null || true; e2e_kill_tmp_processes; umount "$R/proc" 2>/dev/null || true; }
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
