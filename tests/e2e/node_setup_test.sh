#!/bin/bash
# `gpufrac node setup` / `node teardown` on fake host roots (tests/fixtures/node-setup: containerd
# config v2 and v3, rendered k3s (v3) and RKE2 (v2) configs, CRI-O): the installed files and their
# modes, the runtime config as expected, the ready file; a second run changes no byte and restarts
# nothing; teardown leaves the root byte-identical. Restarts: --restart signal sends SIGHUP to the
# process serving the runtime's socket, only when the config changed; --restart systemd runs
# `systemctl restart` on the host (chroot). Then a containerd of the test's own loads the config setup wrote, and a
# container run through the installed handler's binary gets its share.
# The same command runs inside the image (GPUFRAC_BIN_DIR=/usr/bin).
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/containers.sh"
source "$(dirname "$0")/wrapper.sh"
need_root
need_cmd jq
need_cmd python3
need_cmd containerd
need_cmd ctr
need_cmd containerd-shim-runc-v2
e2e_tmp
FIXTURES=$GPUFRAC_SOURCE_DIR/tests/fixtures/node-setup
VERSION=$("$GPUFRAC" --version | awk '{print $2}')
e2e_gpu_config a100-40gb-x1.yaml
SRC_CONFIG=$GPUFRAC_CONFIG
INST=/usr/local/gpufrac

# A copy of a fixture root in $E2E_TMP/roots/<name> (printed).
seed() {
  local dir=$E2E_TMP/roots/$1
  mkdir -p "$dir/run" "$dir/usr/local"
  cp -a "$FIXTURES/$1/." "$dir/"
  echo "$dir"
}
# Every path with its type, mode, size and link target, and every file's digest.
snapshot() { (cd "$1" && find . -mindepth 1 -printf '%p %y %m %l\n' | sort && find . -type f -print0 | sort -z | xargs -0 -r md5sum); }
setup() { run "$GPUFRAC" node setup --host-root "$@"; }
teardown() { run "$GPUFRAC" node teardown --host-root "$@"; }

check_installed() {
  local r=$1
  assert_eq "$(readlink "$r$INST/current")" "$VERSION" "$r: current names the version"
  assert_eq "$(stat -c '%a' "$r$INST/$VERSION/bin/gpufrac" "$r$INST/$VERSION/bin/gpufrac-hook" \
    "$r$INST/$VERSION/bin/gpufrac-runtime" "$r$INST/$VERSION/lib/gpufrac/libgpufrac-limits.so" | tr '\n' ' ')" \
    "755 755 755 644 " "$r: modes of the installed files"
  cmp -s "$r$INST/$VERSION/bin/gpufrac-hook" "$BIN_DIR/gpufrac-hook" || fail "$r: the hook installed is not the built one"
  cmp -s "$r$INST/$VERSION/lib/gpufrac/libgpufrac-limits.so" "$SHIM" || fail "$r: the shim installed is not the built one"
  assert_contains "$(cat "$r/etc/gpufrac/config.yaml")" "hook:
  path: $INST/current/bin/gpufrac-hook" "$r: the config names the installed hook"
  assert_contains "$(cat "$r/etc/gpufrac/config.yaml")" "state-dir: $E2E_TMP/state" "$r: the config given is kept"
  assert_eq "$(head -1 "$r/run/gpufrac/node-ready")" "$VERSION" "$r: the ready file's first line is the version"
}

# round <name> <setup args...>: setup, the checks of every root, a second run, teardown.
round() {
  local name=$1 r after
  shift
  r=$(seed "$name")
  setup "$r" --config "$SRC_CONFIG" "$@"
  assert_eq "$RC" 0 "$name: setup: $OUT"
  check_installed "$r"
  ROOT=$r
  after=$(snapshot "$r")
  setup "$r" --config "$SRC_CONFIG" "$@"
  assert_eq "$RC" 0 "$name: second setup: $OUT"
  assert_contains "$OUT" "node setup: nothing to change ($VERSION)" "$name: the second run says so"
  assert_eq "$(snapshot "$r")" "$after" "$name: the second run changed no byte"
}
finish_round() {
  local name=$1 r=$E2E_TMP/roots/$1 want=$E2E_TMP/want/$1
  shift
  teardown "$r" "$@"
  assert_eq "$RC" 0 "$name: teardown: $OUT"
  # The root as seeded: the fixture plus the empty /run and /usr/local the seed made.
  mkdir -p "$want/run" "$want/usr/local"
  cp -a "$FIXTURES/$name/." "$want/"
  assert_eq "$(snapshot "$r")" "$(snapshot "$want")" "$name: teardown left the root as it was"
}

# 1. containerd 1.6/1.7 (config version 2): drop-in of version 2, CRI tables repeated, CDI on.
round containerd-v2 --runtime containerd --restart none
D=$ROOT/etc/containerd/conf.d/99-gpufrac.toml
assert_eq "$(sed -n 's/^version = //p' "$D")" 2 "v2: the drop-in has the file's version"
assert_contains "$(cat "$D")" '[plugins."io.containerd.grpc.v1.cri"]
  enable_cdi = true
  cdi_spec_dirs = ["/etc/cdi", "/var/run/cdi"]
  sandbox_image = "registry.k8s.io/pause:3.9"' "v2: CDI turned on, the CRI section repeated"
assert_contains "$(cat "$D")" "BinaryName = \"$INST/current/bin/gpufrac-runtime\"
  SystemdCgroup = true" "v2: the handler runs the installed wrapper with runc's options"
assert_contains "$(cat "$ROOT/etc/containerd/config.toml")" 'imports = ["/etc/containerd/conf.d/99-gpufrac.toml"]' \
  "v2: config.toml imports the drop-in by its host path"
assert_eq "$(sed -n 2p "$ROOT/run/gpufrac/node-ready" | cut -d: -f1)" "restart pending" "v2: --restart none: pending"
finish_round containerd-v2 --runtime containerd

# 2. containerd 2.x (version 3, conf.d/*.toml imported already): config.toml untouched.
round containerd-v3 --runtime containerd --restart none
D=$ROOT/etc/containerd/conf.d/99-gpufrac.toml
assert_eq "$(sed -n 's/^version = //p' "$D")" 3 "v3: the drop-in has the file's version"
assert_not_contains "$(cat "$D")" "grpc.v1.cri" "v3: no table of another version"
assert_not_contains "$(cat "$D")" "enable_cdi" "v3: CDI is on by default in 2.x"
cmp -s "$ROOT/etc/containerd/config.toml" "$FIXTURES/containerd-v3/etc/containerd/config.toml" ||
  fail "v3: config.toml changed although it imports conf.d/*.toml"
finish_round containerd-v3 --runtime containerd

# 3. k3s: a template extending k3s's base, of the rendered config's version; restarted through
# systemd on the host (a systemctl of the fake root, run by chroot).
r=$(seed k3s)
mkdir -p "$r/bin" "$r/usr/bin"
cp /bin/busybox "$r/bin/busybox"
ln -s busybox "$r/bin/sh"
printf '#!/bin/sh\necho "$*" >>/systemctl.log\n[ "$1" != is-active ] || [ "$3" = k3s-agent ]\n' >"$r/usr/bin/systemctl"
chmod 755 "$r/usr/bin/systemctl"
rm -rf "$E2E_TMP/k3s-seed" && cp -a "$r" "$E2E_TMP/k3s-seed"
setup "$r" --config "$SRC_CONFIG" --runtime k3s --restart systemd
assert_eq "$RC" 0 "k3s: setup: $OUT"
check_installed "$r"
T=$r/var/lib/rancher/k3s/agent/etc/containerd/config-v3.toml.tmpl
assert_eq "$(head -1 "$T")" '{{ template "base" . }}' "k3s: the template extends the base"
assert_contains "$(cat "$T")" '[plugins."io.containerd.cri.v1.runtime".containerd.runtimes.gpufrac]' "k3s: version 3 tables"
assert_eq "$(cat "$r/systemctl.log")" "is-active --quiet k3s
is-active --quiet k3s-agent
restart k3s-agent" "k3s: the active unit restarted once"
assert_eq "$(sed -n 2p "$r/run/gpufrac/node-ready")" "" "k3s: restarted: nothing pending"
after=$(snapshot "$r")
setup "$r" --config "$SRC_CONFIG" --runtime k3s --restart systemd
assert_eq "$RC" 0 "k3s: second setup: $OUT"
assert_eq "$(snapshot "$r")" "$after" "k3s: the second run changed no byte and restarted nothing"
rm "$r/systemctl.log"
teardown "$r" --runtime k3s --restart none
assert_eq "$RC" 0 "k3s: teardown: $OUT"
assert_eq "$(snapshot "$r")" "$(snapshot "$E2E_TMP/k3s-seed")" "k3s: teardown left the root as it was"

# 3b. RKE2 with containerd 1.7 (rendered version 2, CDI unset): version-2 tables in config.toml.tmpl,
# and a warning that CDI is off (the base template defines the CRI table; setup cannot add to it).
round rke2-v2 --runtime rke2 --restart none
T=$ROOT/var/lib/rancher/rke2/agent/etc/containerd/config.toml.tmpl
assert_contains "$(cat "$T")" '[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.gpufrac]' "rke2: version 2 tables"
assert_not_contains "$(cat "$T")" "enable_cdi" "rke2: the CRI table is the base template's, not repeated"
assert_contains "$OUT" "warning: /var/lib/rancher/rke2/agent/etc/containerd/config.toml: CDI is off (enable_cdi is unset" \
  "rke2: setup says CDI is off"
assert_contains "$OUT" "CDI devices and gpufrac-dra do not" "rke2: and what that costs"
finish_round rke2-v2 --runtime rke2 --restart none

# 4. CRI-O: a drop-in in crio.conf.d; restarted by SIGHUP to the process serving its socket.
round crio --runtime crio --restart none
assert_contains "$(cat "$ROOT/etc/crio/crio.conf.d/99-gpufrac.toml")" "runtime_path = \"$INST/current/bin/gpufrac-runtime\"" \
  "crio: the drop-in names the installed wrapper"
# A container still holding a share: teardown restores the runtime config but keeps the installed
# files (its hooks and shim run from there) and says so; once it is gone, a second teardown ends it.
mkdir -p "$ROOT$E2E_TMP/state/containers/c1"
teardown "$ROOT" --runtime crio
assert_eq "$RC" 0 "crio: teardown with a share held: $OUT"
assert_contains "$OUT" "kept /usr/local/gpufrac: 1 container(s) still hold shares" "crio: teardown says what it kept"
assert_eq "$(readlink "$ROOT$INST/current")" "$VERSION" "crio: the installed version stays while a share is held"
assert_eq "$([ -e "$ROOT/etc/crio/crio.conf.d/99-gpufrac.toml" ] && echo yes || echo no)" no "crio: the handler is gone"
rm -rf "${ROOT:?}/tmp"
finish_round crio --runtime crio

r=$(seed containerd-v2)
mkdir -p "$r/run/containerd"
python3 -c '
import os, signal, socket, sys
s = socket.socket(socket.AF_UNIX); s.bind(sys.argv[1]); s.listen(8)
def hup(*_):
  open(sys.argv[2], "a").write("HUP\n")
signal.signal(signal.SIGHUP, hup)
while True:
  c, _ = s.accept(); c.close()
' "$r/run/containerd/containerd.sock" "$E2E_TMP/hups" &
LISTENER=$!
e2e_on_exit() { kill "$LISTENER" 2>/dev/null || true; if [ -n "${CTD_PID:-}" ]; then kill "$CTD_PID" 2>/dev/null || true; fi; }
for _ in $(seq 50); do [ -S "$r/run/containerd/containerd.sock" ] && break; sleep 0.1; done
setup "$r" --config "$SRC_CONFIG" --runtime containerd --restart signal
assert_eq "$RC" 0 "signal: setup: $OUT"
assert_contains "$OUT" "sent SIGHUP to containerd (process $LISTENER" "signal: the socket's process was signalled"
setup "$r" --config "$SRC_CONFIG" --runtime containerd --restart signal
assert_eq "$RC" 0 "signal: second setup: $OUT"
sleep 0.3
assert_eq "$(cat "$E2E_TMP/hups")" "HUP" "signal: one SIGHUP, none for the run that changed nothing"
kill "$LISTENER"

# 5. Refusals: one line naming the flag and the accepted forms.
run "$GPUFRAC" node setup --host-root "$r" --install-dir /usr/lib/gpufrac
assert_eq "$OUT" 'gpufrac: --install-dir "/usr/lib/gpufrac": not under /usr (read-only on Flatcar, COS, Talos); use /usr/local/gpufrac or /opt/gpufrac' "install dir under /usr"
run "$GPUFRAC" node setup --host-root "$r" --runtime docker
assert_eq "$OUT" 'gpufrac: --runtime "docker": use containerd, k3s, rke2, crio or none' "unknown runtime"
r=$(seed k3s)
rm "$r/var/lib/rancher/k3s/agent/etc/containerd/config.toml"
run "$GPUFRAC" node setup --host-root "$r" --runtime k3s
assert_contains "$OUT" "config.toml: missing; start k3s (or RKE2) once so that it renders its containerd config" "k3s never ran"
assert_eq "$([ -e "$r/run/gpufrac/node-ready" ] && echo yes || echo no)" no "no ready file after a refusal"

# 6. The tests' own containerd (1.6: config version 2, no CRI plugin) loads the config setup wrote
# and runs a container through the installed handler's BinaryName; it gets its share. The host
# paths setup wrote (config.toml, its imports, the install dir) are the fake root's, bind-mounted
# at the same paths in a private mount namespace where containerd runs.
r=$(seed containerd-v2)
CTD=$E2E_TMP/ctd HOSTINST=$E2E_TMP/inst NS=gpufrac-e2e-node
mkdir -p "$CTD" "$HOSTINST" "$E2E_TMP/ctd-data/root" "$E2E_TMP/ctd-data/state" "$E2E_TMP/ctd-data/opt" "$r$CTD"
cat >"$r$CTD/config.toml" <<EOT
version = 2
root = "$E2E_TMP/ctd-data/root"
state = "$E2E_TMP/ctd-data/state"
disabled_plugins = ["io.containerd.grpc.v1.cri"]
[grpc]
  address = "$E2E_TMP/ctd-data/containerd.sock"
[ttrpc]
  address = "$E2E_TMP/ctd-data/containerd.sock.ttrpc"
[plugins."io.containerd.internal.v1.opt"]
  path = "$E2E_TMP/ctd-data/opt"
EOT
setup "$r" --install-dir "$HOSTINST" --config "$SRC_CONFIG" --runtime containerd --runtime-config "$CTD/config.toml"
assert_eq "$RC" 0 "run: setup: $OUT"
BINARY=$(sed -n 's/^ *BinaryName = "\(.*\)"$/\1/p' "$r$CTD/conf.d/99-gpufrac.toml")
assert_eq "$BINARY" "$HOSTINST/current/bin/gpufrac-runtime" "run: the handler's binary"
GPUFRAC_CONFIG=$r/etc/gpufrac/config.yaml unshare -m --propagation private /bin/sh -c '
  mount --bind "$1$2" "$2" && mount --bind "$1$3" "$3" && exec containerd --config "$2/config.toml"' \
  sh "$r" "$CTD" "$HOSTINST" >"$E2E_TMP/ctd.log" 2>&1 &
CTD_PID=$!
CTR=(ctr -a "$E2E_TMP/ctd-data/containerd.sock" -n "$NS")
for _ in $(seq 100); do "${CTR[@]}" version >/dev/null 2>&1 && break; sleep 0.1; done
run "${CTR[@]}" version
assert_eq "$RC" 0 "run: containerd loads the config with the drop-in: $(tail -5 "$E2E_TMP/ctd.log")"
GPU=$(jq -r '.gpus[0].uuid' <<<"$("$GPUFRAC" info --json)")
make_rootfs "$E2E_TMP/rootfs"
run timeout 60 "${CTR[@]}" run --rm --runc-binary "$BINARY" --with-ns "pid:/proc/$$/ns/pid" \
  --annotation gpufrac.io/fraction=0.25 --rootfs "$E2E_TMP/rootfs" node-setup-$$ /bin/cat /run/gpufrac/limits
assert_eq "$RC" 0 "run: a container through the installed handler: $OUT"
assert_contains "$OUT" "device $GPU $((40536 / 4 * 1024 * 1024))" "run: the container got its 0.25 share"
assert_eq "$(ledger_count)" 0 "run: the share is released with the container"
kill "$CTD_PID"
wait "$CTD_PID" 2>/dev/null || true
CTD_PID=
rmdir "/run/containerd/runc/$NS" 2>/dev/null || true
finish
