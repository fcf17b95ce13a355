#!/bin/bash
# Defences against hostile input and a hostile node state, with real runc (docs/architecture.md
# "Security"): JSON a runtime could read differently (duplicate keys, deep nesting, trailing data)
# refused by the hook and by the wrapper, nothing booked; a FIFO at the config or ledger path and a
# held ledger lock end in one line, in bounded time; byte sums that would wrap read as full; a
# config writable by others is refused as root; the hook's mounts never propagate to the host
# through a shared bind; a create runc refuses is undone by the wrapper at once; one container id in
# two runtime roots gets two bookings and deleting one keeps the other's; a spec over 16 MiB that
# names gpufrac only past its first 16 MiB is refused by the wrapper before runc starts, one that
# does not name gpufrac reaches runc.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/containers.sh"
source "$(dirname "$0")/wrapper.sh"
e2e_runc_test hard
e2e_on_exit() {
  runc_cleanup "$P"
  for r in "$E2E_TMP/runc1" "$E2E_TMP/runc2"; do
    runc --root "$r" delete -f "$P-twin" >/dev/null 2>&1 || true
    runc --root "$r" delete -f "$P-wtwin" >/dev/null 2>&1 || true
  done
  [ -n "${HOLDER:-}" ] && pkill -P "$HOLDER" sleep; [ -n "${HOLDER:-}" ] && kill "$HOLDER" 2>/dev/null
  umount -R "$E2E_TMP/shared" 2>/dev/null || true
}
e2e_gpu_config a100-40gb-x1.yaml "lock-timeout: 1"
entries() { jq '.entries | length' "$E2E_TMP/state/ledger.json" 2>/dev/null || echo 0; }
create() { set +e; OUT=$(timeout 20 "$@" 2>&1 </dev/null); RC=$?; set -e; }

# 1. Duplicate "linux": runc reads one, a DOM reader another. Both front-ends refuse it.
make_bundle "$E2E_TMP/dup" 'true' gpufrac.io/fraction=0.25
jq -c . "$E2E_TMP/dup/config.json" | sed 's/^{/{"linux":{"namespaces":[{"type":"pid"}]},/' >"$E2E_TMP/dup/c.json"
mv "$E2E_TMP/dup/c.json" "$E2E_TMP/dup/config.json"
create runc run --bundle "$E2E_TMP/dup" "$P-dup"
assert_contains "$OUT" 'gpufrac-hook: '"$E2E_TMP"'/dup/config.json: duplicate key \"linux\" in the object at /' "the hook refuses a duplicate key"
cp "$E2E_TMP/dup/config.json" "$E2E_TMP/dup.orig"
sed -i 's/"hooks":{[^}]*\][^}]*\]}//' "$E2E_TMP/dup/config.json"  # the wrapper's own path: no hooks
create "$WRAPPER" create --bundle "$E2E_TMP/dup" "$P-dupw"
assert_eq "$RC" 1 "the wrapper refuses it too: $OUT"
assert_contains "$OUT" 'duplicate key "linux" in the object at /;' "the wrapper names the key"
assert_eq "$(entries)" 0 "nothing booked"

# 2. 50,000 nested arrays in a spec with a request: refused at once, no crash, nothing left.
make_plain_bundle "$E2E_TMP/deep" 'true' gpufrac.io/fraction=0.25
python3 -c 'import sys; sys.stdout.write(open(sys.argv[1]).read().rstrip()[:-1] + ", \"x\": " + "[" * 50000 + "]" * 50000 + "}")' \
  "$E2E_TMP/deep/config.json" >"$E2E_TMP/deep/c.json"
mv "$E2E_TMP/deep/c.json" "$E2E_TMP/deep/config.json"
create "$WRAPPER" create --bundle "$E2E_TMP/deep" "$P-deep"
assert_eq "$RC" 1 "deep nesting refused by the wrapper: $OUT"
assert_contains "$OUT" "nested deeper than 64 levels at /x/0/0" "the place is named"
assert_eq "$(entries)" 0 "nothing booked"
assert_eq "$(ls "$E2E_TMP/state/containers" 2>/dev/null | wc -l)" 0 "no container files"
run "$HOOK" createRuntime <<<"$(python3 -c 'print("[" * 4000000)')"
assert_eq "$RC" 1 "a deep OCI state on the hook's stdin: $OUT"
assert_contains "$OUT" "OCI state on stdin: nested deeper than 64 levels" "bounded before any DOM"

# 3. A FIFO at the config path and at ledger.json: one line, no wait.
mkfifo "$E2E_TMP/fifo.yaml"
state='{"id":"x","bundle":"'"$E2E_TMP"'/dup","pid":1}'
run timeout 10 env GPUFRAC_CONFIG="$E2E_TMP/fifo.yaml" "$GPUFRAC" status
assert_eq "$RC" 1 "a FIFO config: $OUT"
assert_contains "$OUT" "fifo.yaml is a FIFO, not a regular file" "named"
mv "$E2E_TMP/state/ledger.json" "$E2E_TMP/ledger.json.bak" 2>/dev/null || true
mkfifo "$E2E_TMP/state/ledger.json"
run timeout 10 "$GPUFRAC" status
assert_eq "$RC" 1 "a FIFO ledger: $OUT"
assert_contains "$OUT" "ledger.json is a FIFO, not a regular file" "named"
rm -f "$E2E_TMP/state/ledger.json"

# 4. A held ledger lock: one line naming the holder after lock-timeout (1 s), not a runtime timeout.
flock -o "$E2E_TMP/state/ledger.lock" sleep 60 >/dev/null 2>&1 &  # -o: only flock itself holds it
HOLDER=$!
sleep 0.3
make_bundle "$E2E_TMP/locked" 'true' gpufrac.io/fraction=0.25
create runc run --bundle "$E2E_TMP/locked" "$P-locked"
assert_contains "$OUT" "the ledger lock $E2E_TMP/state/ledger.lock is held by pid $HOLDER" "the hook names the holder"
assert_contains "$OUT" "for more than 1 s (lock-timeout)" "and the timeout"
pkill -P "$HOLDER" sleep || true
kill "$HOLDER" 2>/dev/null || true  # flock ends with its sleep
wait "$HOLDER" 2>/dev/null || true
HOLDER=

# 5. Byte counts that sum past 2^64 read as a full GPU, not an empty one.
sleep 600 >/dev/null 2>&1 &
SLEEPER=$!
"$GPUFRAC" ledger reserve --container a --annotation gpufrac.io/fraction=0.25 --pid "$SLEEPER" >/dev/null
"$GPUFRAC" ledger reserve --container b --annotation gpufrac.io/fraction=0.25 --pid "$SLEEPER" >/dev/null
jq '.entries[].bytes = 9223372036854775808' "$E2E_TMP/state/ledger.json" >"$E2E_TMP/l.json"
cp "$E2E_TMP/l.json" "$E2E_TMP/state/ledger.json"
run "$GPUFRAC" status --json
assert_contains "$(tr -d ' \n' <<<"$OUT")" '"reserved":18446744073709551615,' "reserved saturates (raw JSON: jq rounds)"
run "$GPUFRAC" ledger reserve --container c --annotation gpufrac.io/fraction=0.1 --pid "$SLEEPER"
assert_eq "$RC" 1 "a new share is refused: $OUT"
kill "$SLEEPER"
rm -f "$E2E_TMP/state/ledger.json"

# 6. A config others may change is refused as root.
chmod 666 "$GPUFRAC_CONFIG"
run "$GPUFRAC" status
assert_eq "$RC" 1 "a world-writable config: $OUT"
assert_contains "$OUT" "config $GPUFRAC_CONFIG: the file may be changed by a user other than root (owner 0, mode 0666)" "named"
chmod 644 "$GPUFRAC_CONFIG"
chmod 777 "$E2E_TMP"
run "$GPUFRAC" status
assert_contains "$OUT" "the directory $E2E_TMP may be changed by a user other than root (owner 0, mode 0777)" "a writable directory above it"
chmod 700 "$E2E_TMP"

# 7. A shared bind over /run: the hook's tmpfs must not appear on the host.
mkdir -p "$E2E_TMP/shared"
mount --bind "$E2E_TMP/shared" "$E2E_TMP/shared"
mount --make-shared "$E2E_TMP/shared"
make_bundle "$E2E_TMP/prop" 'test -e /run/gpufrac/limits && echo limited' gpufrac.io/fraction=0.25
jq --arg s "$E2E_TMP/shared" '.mounts += [{destination: "/run", type: "bind", source: $s, options: ["rbind", "rshared"]}]
  | .linux.rootfsPropagation = "rshared"' "$E2E_TMP/prop/config.json" >"$E2E_TMP/prop/c.json"
mv "$E2E_TMP/prop/c.json" "$E2E_TMP/prop/config.json"
run runc run --bundle "$E2E_TMP/prop" "$P-prop"
assert_eq "$RC" 0 "a container with a shared bind: $OUT"
assert_contains "$OUT" "limited" "it has its limit file"
assert_eq "$(findmnt -rn -o TARGET | grep -c "^$E2E_TMP/shared/")" 0 "no mount of the hook reached the host"
umount "$E2E_TMP/shared"

# 8. A create runc refuses: the wrapper undoes its booking and config.json at once.
make_plain_bundle "$E2E_TMP/refused" 'true' gpufrac.io/fraction=0.25
cp "$E2E_TMP/refused/config.json" "$E2E_TMP/refused.orig"
create "$WRAPPER" create --no-such-flag --bundle "$E2E_TMP/refused" "$P-refused"
assert_eq "$RC" 1 "runc refuses the create: $OUT"
assert_eq "$(entries)" 0 "the booking is released at once"
cmp -s "$E2E_TMP/refused/config.json" "$E2E_TMP/refused.orig" || fail "config.json not restored"
assert_eq "$(ls "$E2E_TMP/state/containers" 2>/dev/null | wc -l)" 0 "no container files"

# 9. The image's preload as the container sees it: a spec bind at /etc/ld.so.preload counts (hook
# and wrapper), its entries kept after the shim's.
echo /usr/lib/libbound.so >"$E2E_TMP/bound-preload"
make_bundle "$E2E_TMP/pre" 'cat /etc/ld.so.preload' gpufrac.io/fraction=0.25
jq --arg s "$E2E_TMP/bound-preload" '.mounts += [{destination: "/etc/ld.so.preload", type: "bind", source: $s,
  options: ["bind", "ro"]}]' "$E2E_TMP/pre/config.json" >"$E2E_TMP/pre/c.json"
mv "$E2E_TMP/pre/c.json" "$E2E_TMP/pre/config.json"
run runc run --bundle "$E2E_TMP/pre" "$P-pre"
assert_eq "$OUT" "/run/gpufrac/libgpufrac-limits.so
/usr/lib/libbound.so" "the hook keeps the bound preload's entry"
jq 'del(.hooks)' "$E2E_TMP/pre/config.json" >"$E2E_TMP/pre/c.json" && mv "$E2E_TMP/pre/c.json" "$E2E_TMP/pre/config.json"
run "$WRAPPER" run --bundle "$E2E_TMP/pre" "$P-prew"
assert_eq "$OUT" "/run/gpufrac/libgpufrac-limits.so
/usr/lib/libbound.so" "the wrapper too"

# 10. One container id in two runtime roots (runc --root): two containers, two bookings. One that
# does not fit beside the other is refused, never admitted on the other's booking; deleting one
# leaves the other's booking and files. Each root has its own cgroup, as two containerd namespaces
# do (one cgroup would make runc's delete kill both).
R1=$E2E_TMP/runc1 R2=$E2E_TMP/runc2
# run -d hands the container its stdio: to a file, or a capture would wait for the container.
detached() { set +e; "$@" >"$E2E_TMP/detached.log" 2>&1 </dev/null; RC=$?; set -e; OUT=$(cat "$E2E_TMP/detached.log"); }
# twin_bundle <dir> <fraction> <cgroup> [hooks|plain]
twin_bundle() {
  if [ "${4:-hooks}" = hooks ]; then make_bundle "$1" 'sleep 120' "gpufrac.io/fraction=$2"; else make_plain_bundle "$1" 'sleep 120' "gpufrac.io/fraction=$2"; fi
  jq --arg c "/gpufrac-e2e-$3-$$" '.linux.cgroupsPath = $c' "$1/config.json" >"$1/c.json" && mv "$1/c.json" "$1/config.json"
}
twin() { detached runc --root "$1" run -d --bundle "$2" "$P-twin"; }
twin_bundle "$E2E_TMP/big1" 0.75 r1
twin_bundle "$E2E_TMP/big2" 0.75 r2
twin "$R1" "$E2E_TMP/big1"
assert_eq "$RC" 0 "the first container starts: $OUT"
twin "$R2" "$E2E_TMP/big2"
assert_eq "$RC" 1 "the same id in another root does not fit: $OUT"
assert_contains "$OUT" "gpufrac-hook: no GPU" "refused by the allocator"
assert_eq "$(entries)" 1 "one booking"
runc --root "$R2" delete -f "$P-twin" >/dev/null 2>&1 || true
assert_eq "$(entries)" 1 "the refused twin's cleanup keeps the first's booking"
runc --root "$R1" delete -f "$P-twin" >/dev/null 2>&1
assert_eq "$(entries)" 0 "released at the first's delete"
twin_bundle "$E2E_TMP/small1" 0.25 r1
twin_bundle "$E2E_TMP/small2" 0.25 r2
twin "$R1" "$E2E_TMP/small1"
twin "$R2" "$E2E_TMP/small2"
assert_eq "$RC" 0 "two quarter shares under one id: $OUT"
assert_eq "$(entries)" 2 "two bookings"
assert_eq "$(ls "$E2E_TMP/state/containers" | wc -l)" 2 "two container directories"
runc --root "$R1" delete -f "$P-twin" >/dev/null 2>&1
assert_eq "$(entries)" 1 "deleting one keeps the other's booking"
pid2=$(runc --root "$R2" state "$P-twin" | jq .pid)
assert_eq "$(jq ".entries[0].pid" "$E2E_TMP/state/ledger.json")" "$pid2" "the remaining booking is the running twin's"
assert_eq "$(ls "$E2E_TMP/state/containers")" "$P-twin@p$pid2-$(awk '{print $22}' "/proc/$pid2/stat")" "its files stay"
runc --root "$R2" delete -f "$P-twin" >/dev/null 2>&1
assert_eq "$(entries)" 0 "all released"
# Through gpufrac-runtime: each create is an instance of its own (its hooks carry --instance).
for r in "$R1" "$R2"; do
  twin_bundle "$E2E_TMP/w$(basename "$r")" 0.25 "w$(basename "$r")" plain
  detached "$WRAPPER" --root "$r" run -d --bundle "$E2E_TMP/w$(basename "$r")" "$P-wtwin"
  assert_eq "$RC" 0 "the wrapper starts the twin in $r: $OUT"
done
assert_eq "$(jq '[.entries[] | select(.pid > 0)] | length' "$E2E_TMP/state/ledger.json")" 2 "two attached bookings"
"$WRAPPER" --root "$R1" delete -f "$P-wtwin" >/dev/null 2>&1
assert_eq "$(entries)" 1 "the wrapper's poststop releases only its instance"
"$WRAPPER" --root "$R2" delete -f "$P-wtwin" >/dev/null 2>&1
assert_eq "$(entries)" 0 "all released"

# 11. config.json over its 16 MiB bound: a 17 MiB annotation first, the request after it, so the
# first 16 MiB name nothing of gpufrac. The wrapper reads the whole file, refuses it in one line,
# books nothing and never starts runc (the runtime is a script that marks its start, then runs
# runc); the same spec without the request reaches runc untouched.
RUNC_MARK=$E2E_TMP/runc-marking
printf '#!/bin/sh\ntouch "$0.started"\nexec runc "$@"\n' >"$RUNC_MARK"
chmod 755 "$RUNC_MARK"
cp "$GPUFRAC_CONFIG" "$E2E_TMP/marking.yaml"
echo "runtimes: [$RUNC_MARK]" >>"$E2E_TMP/marking.yaml"
# pad_spec <bundle> [k=v]: annotations = a 17 MiB "pad", then k=v when given.
pad_spec() {
  python3 - "$1/config.json" "${2:-}" <<'PY'
import json, sys
spec = json.load(open(sys.argv[1]))
spec["annotations"] = {"pad": "x" * (17 << 20)}
if sys.argv[2]:
    k, v = sys.argv[2].split("=", 1)
    spec["annotations"][k] = v
json.dump(spec, open(sys.argv[1], "w"))
PY
}
make_plain_bundle "$E2E_TMP/large" 'true'
pad_spec "$E2E_TMP/large" gpufrac.io/fraction=0.25
assert_eq "$(head -c $((16 << 20)) "$E2E_TMP/large/config.json" | grep -c gpufrac)" 0 "the first 16 MiB name nothing"
cp "$E2E_TMP/large/config.json" "$E2E_TMP/large.orig"
create env GPUFRAC_CONFIG="$E2E_TMP/marking.yaml" "$WRAPPER" run --bundle "$E2E_TMP/large" "$P-large"
assert_eq "$RC" 1 "a spec over 16 MiB naming gpufrac is refused"
assert_eq "$OUT" "gpufrac: $E2E_TMP/large/config.json: names gpufrac but is larger than 16777216 bytes; a spec that asks gpufrac for a GPU must be a regular file of at most 16777216 bytes" \
  "one line naming the file and the bound"
[ ! -e "$RUNC_MARK.started" ] || fail "runc was started for the refused spec"
assert_eq "$(entries)" 0 "nothing booked"
assert_eq "$(ls "$E2E_TMP/state/containers" 2>/dev/null | wc -l)" 0 "no container files"
cmp -s "$E2E_TMP/large/config.json" "$E2E_TMP/large.orig" || fail "the refused spec is untouched"
make_plain_bundle "$E2E_TMP/plainlarge" 'true'
pad_spec "$E2E_TMP/plainlarge"
cp "$E2E_TMP/plainlarge/config.json" "$E2E_TMP/plainlarge.orig"
create env GPUFRAC_CONFIG="$E2E_TMP/marking.yaml" "$WRAPPER" run --bundle "$E2E_TMP/plainlarge" "$P-plainlarge"
assert_eq "$RC" 0 "a spec over 16 MiB that does not name gpufrac runs: $OUT"
[ -e "$RUNC_MARK.started" ] || fail "runc was not started for the plain spec"
cmp -s "$E2E_TMP/plainlarge/config.json" "$E2E_TMP/plainlarge.orig" || fail "the plain spec reaches runc untouched"
assert_eq "$(entries)" 0 "nothing booked for it"
finish
