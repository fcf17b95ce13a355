#!/bin/bash
# gpufrac-runtime in front of real runc: a 0.25 share gets the shim, its limit, the device nodes and
# allow rules; five 0.25 containers on one GPU: four run, the fifth is refused; every other command,
# and a create without annotations, reaches the runtime byte for byte (a recording stand-in
# runtime); a spec is never prepared twice; bad annotations and a private PID namespace are refused
# with one line and nothing booked.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/containers.sh"
source "$(dirname "$0")/wrapper.sh"
e2e_runc_test wrap
e2e_gpu_config a100-40gb-x1.yaml
GPU=$(jq -r '.gpus[0].uuid' <<<"$("$GPUFRAC" info --json)")
LIMIT=$((40536 / 4 * 1024 * 1024))   # 0.25 of 40536 MiB, rounded down to a MiB
REC=$E2E_TMP/recorder
make_recorder "$REC"
cp "$GPUFRAC_CONFIG" "$E2E_TMP/recorder.yaml"
echo "runtimes: [$REC]" >>"$E2E_TMP/recorder.yaml"
with_recorder() { GPUFRAC_CONFIG=$E2E_TMP/recorder.yaml "$@"; }
# expect_argv <args...>: the recorder was called with exactly these arguments.
expect_argv() {
  printf '%s\0' "$@" >"$E2E_TMP/expected.argv"
  cmp -s "$E2E_TMP/expected.argv" "$REC.argv" || fail "argv differs: expected [$*], got [$(tr '\0' ' ' <"$REC.argv")]"
}

# 1. gpufrac-runtime run with a 0.25 share: what the container sees, what the spec says.
make_plain_bundle "$E2E_TMP/b1" 'cat /run/gpufrac/limits; echo ---; cat /etc/ld.so.preload; echo ---;
  stat -c "%n %F %t:%T" /dev/nvidia0 /dev/nvidiactl /dev/nvidia-uvm /dev/nvidia-uvm-tools; echo "env $GPUFRAC_DEVICES"' \
  gpufrac.io/fraction=0.25
run "$WRAPPER" --log "$E2E_TMP/runc.log" run --bundle "$E2E_TMP/b1" "$P-1"
assert_eq "$RC" 0 "gpufrac-runtime run with a 0.25 share: $OUT"
assert_contains "$OUT" "device $GPU $LIMIT" "limit file names the GPU and 1/4 of its memory"
assert_contains "$OUT" "/run/gpufrac/libgpufrac-limits.so" "ld.so.preload lists the shim"
assert_contains "$OUT" "/dev/nvidia0 character special file c3:0" "GPU node 195:0"
assert_contains "$OUT" "/dev/nvidiactl character special file c3:ff" "control node 195:255"
assert_contains "$OUT" "/dev/nvidia-uvm character special file 1fc:0" "uvm node 508:0"
assert_contains "$OUT" "/dev/nvidia-uvm-tools character special file 1fc:1" "uvm-tools node 508:1"
assert_contains "$OUT" "env $GPU" "GPUFRAC_DEVICES in the container's environment"
SPEC=$E2E_TMP/b1/config.json
assert_eq "$(jq -c '[.linux.resources.devices[] | select(.allow) | "\(.type) \(.major):\(.minor) \(.access)"]' "$SPEC")" \
  '["c 195:255 rw","c 508:0 rw","c 508:1 rw","c 195:0 rw"]' "allow rules for the four nodes"
assert_eq "$(jq -c '.linux.devices[] | select(.path == "/dev/nvidia0")' "$SPEC")" \
  '{"path":"/dev/nvidia0","type":"c","major":195,"minor":0,"fileMode":438,"uid":0,"gid":0}' "device node entry"
assert_eq "$(jq -c '[.mounts[] | select(.destination | startswith("/run/gpufrac") or . == "/etc/ld.so.preload") | "\(.destination) \(.type) \(.options | join(","))"]' "$SPEC")" \
  "[\"/run/gpufrac tmpfs nosuid,nodev,noexec,size=1m,mode=755\",\"/run/gpufrac/libgpufrac-limits.so bind ro,nosuid,nodev,bind\",\"/run/gpufrac/limits bind ro,nosuid,nodev,noexec,bind\",\"/run/gpufrac/usage bind nosuid,nodev,noexec,bind\",\"/etc/ld.so.preload bind ro,nosuid,nodev,noexec,bind\",\"/run/gpufrac/compute/$GPU bind nosuid,nodev,noexec,bind\"]" \
  "the tmpfs, then the read-only shim, limits and preload binds, the usage bind and the GPU's compute arbiter (read-write)"
assert_eq "$(jq -c '[.hooks.createRuntime[].args, .hooks.poststop[].args] | map(map(sub("^w[0-9a-f]{16}$"; "w<hex>")))' "$SPEC")" \
  '[["gpufrac-hook","createRuntime","--attach","--instance","w<hex>","--ld-cache","/usr/lib/x86_64-linux-gnu"],["gpufrac-hook","poststop","--instance","w<hex>"]]' \
  "attach and release hooks, both naming this create's instance"
assert_eq "$(jq -c '.hooks.createRuntime[0].env' "$SPEC")" "[\"PATH=/usr/sbin:/usr/bin:/sbin:/bin\",\"GPUFRAC_CONFIG=$GPUFRAC_CONFIG\"]" \
  "hooks carry an explicit env"
assert_eq "$(jq -r '.annotations["gpufrac.io/injected"]' "$SPEC")" "true" "marker annotation"
assert_eq "$(ledger_count)" 0 "runc run removed the container: share released"
assert_eq "$(ls "$E2E_TMP/state/containers" 2>/dev/null | wc -l)" 0 "container files removed"

# 2. Five 0.25 shares on one GPU: four are created (pid attached), the fifth is refused.
# runc create hands the container its stdio: send it to a file, or the capture would wait for it.
create() { set +e; "$WRAPPER" --log "$1.runc.log" --log-format json create --bundle "$1" "$2" >"$1.log" 2>&1; RC=$?; set -e; OUT=$(cat "$1.log"); }
for i in 1 2 3 4 5; do make_plain_bundle "$E2E_TMP/s$i" 'sleep 60' gpufrac.io/fraction=0.25; done
for i in 1 2 3 4; do
  create "$E2E_TMP/s$i" "$P-s$i"
  assert_eq "$RC" 0 "share $i of 4 is created: $OUT"
done
assert_eq "$(ledger_count '.source == "wrapper" and .pid > 0')" 4 "four wrapper bookings with their pid attached"
cp "$E2E_TMP/s5/config.json" "$E2E_TMP/s5.before"
create "$E2E_TMP/s5" "$P-s5"
assert_eq "$RC" 1 "the fifth 0.25 share is refused"
assert_eq "$(grep -c . "$E2E_TMP/s5.log")" 1 "one line on stderr"
assert_contains "$OUT" "gpufrac: no GPU has" "capacity message"
assert_contains "$(tail -1 "$E2E_TMP/s5.runc.log")" '{"level":"error","msg":"gpufrac: no GPU has' "--log gets the message as runc writes errors"
cmp -s "$E2E_TMP/s5.before" "$E2E_TMP/s5/config.json" || fail "a refused create leaves config.json as it was"
assert_eq "$(ledger_count)" 4 "the refusal booked nothing"
for i in 1 2 3 4; do "$WRAPPER" delete -f "$P-s$i" >/dev/null 2>&1 || fail "delete $P-s$i"; done
assert_eq "$(ledger_count)" 0 "all shares released after delete"

# 3. Pass-through: every other command reaches the runtime byte for byte, stdin included.
run with_recorder "$WRAPPER" --root /x/root --log /dev/null --log-format json kill --all "$P-x" KILL </dev/null
assert_eq "$RC" 0 "kill passed through"
expect_argv --root /x/root --log /dev/null --log-format json kill --all "$P-x" KILL
printf 'process json\n\x01\xff' | with_recorder "$WRAPPER" exec --process - "$P-x" "" "two words" 'é\t'
expect_argv exec --process - "$P-x" "" "two words" 'é\t'
printf 'process json\n\x01\xff' | cmp -s - "$REC.stdin" || fail "stdin reaches the runtime unchanged"
with_recorder "$WRAPPER" --version </dev/null
expect_argv --version
# A create without gpufrac annotations: argv and config.json untouched, nothing booked.
make_plain_bundle "$E2E_TMP/plain" 'true' io.kubernetes.cri.container-type=container
cp "$E2E_TMP/plain/config.json" "$E2E_TMP/plain.before"
(cd "$E2E_TMP/plain" && with_recorder "$WRAPPER" --systemd-cgroup create --pid-file p.pid "$P-plain" </dev/null)
expect_argv --systemd-cgroup create --pid-file p.pid "$P-plain"
cmp -s "$E2E_TMP/plain.before" "$E2E_TMP/plain/config.json" || fail "config.json without annotations is untouched"
assert_eq "$(ledger_count)" 0 "nothing booked for a plain create"
# The same plain spec through real runc: runs, untouched.
run "$WRAPPER" run --bundle "$E2E_TMP/plain" "$P-plain"
assert_eq "$RC" 0 "plain container runs through gpufrac-runtime: $OUT"
cmp -s "$E2E_TMP/plain.before" "$E2E_TMP/plain/config.json" || fail "real runc: config.json untouched"

# 4. Never twice: a create of a prepared spec changes nothing, nor does one that has our hooks.
make_plain_bundle "$E2E_TMP/twice" 'true' gpufrac.io/fraction=0.25
with_recorder "$WRAPPER" create --bundle "$E2E_TMP/twice" "$P-twice" </dev/null
expect_argv create --bundle "$E2E_TMP/twice" "$P-twice"
assert_eq "$(jq -r '.annotations["gpufrac.io/injected"]' "$E2E_TMP/twice/config.json")" "true" "first create prepares the spec"
assert_eq "$(ledger_count ".container_id == \"$P-twice\" and .pid == 0")" 1 "one pending booking"
cp "$E2E_TMP/twice/config.json" "$E2E_TMP/twice.before"
with_recorder "$WRAPPER" create --bundle "$E2E_TMP/twice" "$P-twice" </dev/null
cmp -s "$E2E_TMP/twice.before" "$E2E_TMP/twice/config.json" || fail "second create leaves the prepared spec alone"
assert_eq "$(ledger_count)" 1 "second create books nothing more"
"$GPUFRAC" ledger release --container "$P-twice" >/dev/null
# A Kubernetes pod sandbox (the pause container) gets the pod's annotations too: left alone.
make_plain_bundle "$E2E_TMP/sandbox" 'true' gpufrac.io/fraction=0.25 io.kubernetes.cri.container-type=sandbox
cp "$E2E_TMP/sandbox/config.json" "$E2E_TMP/sandbox.before"
with_recorder "$WRAPPER" create --bundle "$E2E_TMP/sandbox" "$P-sandbox" </dev/null
cmp -s "$E2E_TMP/sandbox.before" "$E2E_TMP/sandbox/config.json" || fail "a pod sandbox is left alone"
assert_eq "$(ledger_count)" 0 "nothing booked for a pod sandbox"
make_plain_bundle "$E2E_TMP/hooked" 'true' gpufrac.io/fraction=0.25
jq --arg h "$HOOK" '.hooks = {prestart: [{path: $h, args: ["gpufrac-hook", "prestart"]}]}' "$E2E_TMP/hooked/config.json" >"$E2E_TMP/h.json"
mv "$E2E_TMP/h.json" "$E2E_TMP/hooked/config.json"
cp "$E2E_TMP/hooked/config.json" "$E2E_TMP/hooked.before"
with_recorder "$WRAPPER" create --bundle "$E2E_TMP/hooked" "$P-hooked" </dev/null
cmp -s "$E2E_TMP/hooked.before" "$E2E_TMP/hooked/config.json" || fail "a spec with gpufrac-hook already is left alone"
assert_eq "$(ledger_count)" 0 "nothing booked for a spec carrying our hooks"

# 5. A malformed annotation: one line, exit 1, nothing booked, spec untouched.
make_plain_bundle "$E2E_TMP/bad" 'true' gpufrac.io/fraction=1.5
cp "$E2E_TMP/bad/config.json" "$E2E_TMP/bad.before"
run with_recorder "$WRAPPER" create --bundle "$E2E_TMP/bad" "$P-bad"
assert_eq "$RC" 1 "malformed fraction refused"
assert_eq "$OUT" 'gpufrac: gpufrac.io/fraction: "1.5" is out of range; use a decimal 0 < f <= 1 with at most 6 decimals, e.g. 0.25' \
  "exactly one line naming the annotation and the accepted form"
cmp -s "$E2E_TMP/bad.before" "$E2E_TMP/bad/config.json" || fail "refused spec untouched"
assert_eq "$(ledger_count)" 0 "nothing booked"

# 6. A private PID namespace is refused with the hook's host-PID line.
make_plain_bundle "$E2E_TMP/pidns" 'true' gpufrac.io/fraction=0.25
jq '.linux.namespaces += [{"type":"pid"}]' "$E2E_TMP/pidns/config.json" >"$E2E_TMP/c.json" && mv "$E2E_TMP/c.json" "$E2E_TMP/pidns/config.json"
run "$WRAPPER" run --bundle "$E2E_TMP/pidns" "$P-pidns"
assert_eq "$RC" 1 "private PID namespace refused"
assert_eq "$OUT" "gpufrac: the container has its own PID namespace; gpufrac needs the host PID namespace: run it with --pid=host (podman, docker, nerdctl; pid: host in a compose file) or hostPID: true (Kubernetes), or set require-host-pid: false in the config" \
  "host-PID message"
assert_eq "$(ledger_count)" 0 "nothing booked"

# 7. No low-level runtime: one line naming the config key, exit 2.
cp "$GPUFRAC_CONFIG" "$E2E_TMP/none.yaml"
echo "runtimes: [no-such-runtime, /nonexistent/runc]" >>"$E2E_TMP/none.yaml"
run env GPUFRAC_CONFIG="$E2E_TMP/none.yaml" PATH=/usr/bin:/bin "$WRAPPER" state x
assert_eq "$RC" 2 "no runtime: exit 2"
assert_eq "$OUT" 'gpufrac: runtimes: none of no-such-runtime, /nonexistent/runc is an executable file (names are looked up in the absolute directories of PATH "/usr/bin:/bin"); name runc, crun or an absolute path in the config'"'"'s runtimes: (config: '"$E2E_TMP/none.yaml)" \
  "no-runtime message names the config it read"

# 8. gpufrac CDI devices named in cdi.k8s.io/* annotations (the Kubernetes CDI convention): booked
# under the device name; other vendors' devices are not ours.
make_plain_bundle "$E2E_TMP/cdi" 'cat /run/gpufrac/limits' cdi.k8s.io/gpufrac=gpufrac.io/gpu=0-0.25 \
  cdi.k8s.io/other=vendor.example/gpu=0
run "$WRAPPER" run --bundle "$E2E_TMP/cdi" "$P-cdi"
assert_eq "$RC" 0 "CDI device gpufrac.io/gpu=0-0.25: $OUT"
assert_contains "$OUT" "device $GPU $LIMIT" "the CDI share's limit"
make_plain_bundle "$E2E_TMP/cdi2" 'true' cdi.k8s.io/a=gpufrac.io/gpu=0-0.25,gpufrac.io/gpu=0-0.5
with_recorder "$WRAPPER" create --bundle "$E2E_TMP/cdi2" "$P-cdi2" </dev/null
assert_eq "$(jq -c '[.entries[] | select(.container_id | endswith("-cdi2")) | [.device_key, .request, .pid]]' "$E2E_TMP/state/ledger.json")" \
  '[["gpufrac.io/gpu=0-0.25","fraction=0.25 gpu=0",0],["gpufrac.io/gpu=0-0.5","fraction=0.5 gpu=0",0]]' \
  "one pending booking per CDI device, keyed by its name"
"$GPUFRAC" ledger release --container "$P-cdi2" >/dev/null
make_plain_bundle "$E2E_TMP/cdi3" 'true' cdi.k8s.io/a=gpufrac.io/gpu=7
run with_recorder "$WRAPPER" create --bundle "$E2E_TMP/cdi3" "$P-cdi3"
assert_eq "$RC" 1 "a CDI device that is not on the node is refused"
assert_eq "$OUT" 'gpufrac: CDI device "7": GPU 7 is not on this node (it has GPU 0)' "CDI refusal line"
assert_eq "$(ledger_count)" 0 "nothing booked"
make_plain_bundle "$E2E_TMP/cdi4" 'true' cdi.k8s.io/other=vendor.example/gpu=0
cp "$E2E_TMP/cdi4/config.json" "$E2E_TMP/cdi4.before"
with_recorder "$WRAPPER" create --bundle "$E2E_TMP/cdi4" "$P-cdi4" </dev/null
cmp -s "$E2E_TMP/cdi4.before" "$E2E_TMP/cdi4/config.json" || fail "another vendor's CDI device is left alone"
finish
